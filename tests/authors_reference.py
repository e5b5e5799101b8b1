"""Reference implementations written from the authors' published scripts (`src/generation/
expand.py`, `generate_gpt.py`, `generate_llama.py`, `gather.py` of their public repository), for
the parity tests. No tests here.

The strings are transcribed in the form of their source (a triple-quoted literal with `\\"` and
`\\uXXXX` escapes), independently of `generation/authors_prompts.py`; the rules follow
their control flow (slicing, `try`/`except`, first occurrences) rather than the toolkit's.
Where their committed code cannot run (`findcolon` called with two arguments), the reference is
what they evidently meant.
"""

from __future__ import annotations

# fmt: off
EXPAND_BASE_PROMPT = '''[INST]Given a passage related to the question, answer to the question. Find the shortest span of the passage as an answer.[/INST]

Passage: Kiwi Travel International Airlines | Kiwi Travel International Airlines Kiwi Travel International Airlines was a New Zealand based airline which pioneered discount flights between secondary airports in Australia and New Zealand in the mid 1990s. The airline was established by Ewan Wilson and several associates. Ewan Wilson served as CEO and was later convicted on four counts of fraud. It was reported in March 2015 that Wilson was looking at restarting an airline, under the name Kiwi Regional Airlines. The airline started out as Kiwi Travel Air Charters in July 1994, operating weekly charters between Hamilton, New Zealand and Brisbane, Australia, using a leased Air
Question: Who founded Kiwi Airlines?
Answer: Ewan Wilson

Passage: Helianthus occidentalis | Helianthus occidentalis Helianthus occidentalis (fewleaf sunflower or western sunflower) is a species of sunflower native to the Eastern and Central United States. It grows mostly in the Great Lakes Region and in the Ozarks, with additional populations scattered as far as Massachusetts, Texas, and the Florida Panhandle. \"H. occidentalis\" differs from other, similar species by its sparse leaves, most of which are crowded around the lower part of the stem. This perennial plant reaches heights from 2 to 5 ft (60\u2013150 cm). It produces one to several yellow flower heads, each with 8-14 ray florets surrounding more than 50 disc
Question: Where is the Western sunflower primarily found?
Answer: Eastern and Central United States

Passage: Proletarian Unity Party (France) | Proletarian Unity Party (France) The Party of Proletarian Unity (, \"PUP\") was a French socialist political party. It was formed on December 21, 1930 by leftists expelled from the French Communist Party (PCF), together with some who had previously belonged to the left-wing of the Section fran\u00e7aise de l'Internationale ouvri\u00e8re (SFIO). Its members were known in France as \"pupistes\", and one of its notable leaders was Alexandre Bachelet. Owing to proportional representation, it at one time had ten seats in the Chamber of Deputies of the Third Republic. The PUP affiliated to the London Bureau of left-socialist parties. On January
Question: When was the Proletarian Unity Party formed?
Answer: December 21, 1930

Passage: The Kent Island Bay Times | The Kent Island Bay Times The Kent Island Bay Times or simply the Bay Times is a weekly newspaper based in Stevensville, Maryland and is owned by Chesapeake Publishing, the same company that owns The Record Observer in Centreville, Maryland and The Star Democrat in Easton, Maryland, and other newspapers on both sides of the Chesapeake Bay. It is published every Wednesday and covers news mostly in southern Queen Anne's County including all of Kent Island, Grasonville and Queenstown. The Bay Times was Founded by Christopher J. Rosendale Sr. and his wife Mary Lou in 1963. The first issue of
Question: What type of community does the Bay Times primarily serve?
Answer: Southern Queen Anne's County including all of Kent Island, Grasonville and Queenstown

'''

GPT_INSTRUCTION = "You are given two passages about an ambiguous entity with different interpretations. Create a question about the entity, which each passage must answer differently. Find the shortest span of each passage as an answer to each passage."

GPT_COMP_PROMPT = '''
Entity: Gimnasia y Esgrima
Passage 1: Gimnasia y Esgrima de Buenos Aires | football. Because of the growth of the activity, the club built one field more. After leaving the official football leagues in the decade of 1920, rugby union was one of the predominant sports of Gimnasia y Esgrima, winning the Torneo de la URBA titles of 1911 and 1912. The club won two more titles in 1932 and 1939, its last championship to date. Gimnasia y Esgrima currently plays in the Grupo II, the second division of the Unión de Rugby de Buenos Aires league system. In 1942 president Aldao moved to the club's distinguished guest apartment, establishing it as its
Passage 2: Gimnasia y Esgrima de Jujuy | Gimnasia y Esgrima de Jujuy Club Atlético Gimnasia y Esgrima , (usually known as Gimnasia y Esgrima de Jujuy or GEJ) is an Argentine sports club based in San Salvador de Jujuy, Jujuy Province. The club was founded in 1931 and is best known for its football team, which currently plays in the Primera B Nacional, the second division of the Argentine football league system. The team is one of the most important football clubs in the North-West region of Argentina. It played most of the time in the Argentine second division, although it has also played at the highest
Question: What is the main sport associated with Gimnasia y Esgrima?
Answer to Passage 1: Rugby union
Answer to Passage 2: Football

Entity: Young Conservatives
Passage 1: Young Conservatives (Czech Republic) | The Young Conservatives () is a political youth organisation in the Czech Republic. It is the youth wing of the Civic Democratic Party (ODS), a centre-right political party, and shares that party's conservative and economically liberal ideology. Young people within the age from 15 to 35 apply for a membership in the MK. Several significant politicians from the ODS party started as members of Young Conservatives, including Jan Zahradil, Ji\u0159\u00ed Posp\u00ed\u0161il, Petr Sokol, Martin Baxa, Petr Gandalovi\u010d, Ivan Langer, Martin Novotn\u00fd, and Pavel Drobil. Former Chairman of Young Conservatives Petr Mach went on to found a
Passage 2: Young Conservatives (UK) | The Young Conservatives (YC) is the youth wing of the Conservative Party in the United Kingdom for members aged 25 and under. The organisation shares the same values and policies as its parent political party with branches being an integrated part of local associations, with the exception of college and university branches which are run independently. YC is both social and political, aiming to bring together young conservatives and encouraging young people to get involved in campaigning. The \"Junior Imperial and Constitutional League\" was formed in 1906 with objectives to encourage practical political work and organisation among
Question: What is the age range for membership in the Young Conservatives?
Answer to Article 1: 15 to 35
Answer to Article 2: 25 and under

'''
LLAMA_INSTRUCTION = "### Instruction:\nYou are given two passages about an ambiguous entity with different interpretations. Create a question about the entity, which each passage must answer differently. Find the shortest span of each passage as an answer to each passage.\n\n"  # noqa: E501
# fmt: on


def _strip_any_case(fromp):
    fromp = fromp.strip()
    if fromp.lower()[len(fromp) - len("(disambiguation)") :] == "(disambiguation)":
        fromp = fromp[: len(fromp) - len("(disambiguation)")].strip()
    return fromp


def _strip_exact(fromp):
    fromp = fromp.strip()
    if fromp[len(fromp) - len("(disambiguation)") :] == "(disambiguation)":
        fromp = fromp[: len(fromp) - len("(disambiguation)")].strip()
    return fromp


def _to_prompt(passages, idx):
    return f"Passage {idx + 1}: " + passages[idx]["title"] + " | " + passages[idx]["text"]


def gpt_messages(from_title, passages):
    """generate_gpt.py: the messages sent to GPT-4 for one seed pair."""
    prompt = (
        GPT_COMP_PROMPT
        + "Entity: "
        + _strip_any_case(from_title)
        + _to_prompt(passages, 0)
        + _to_prompt(passages, 1)
        + "\nQuestion:"
    )
    return [{"role": "system", "content": GPT_INSTRUCTION}, {"role": "user", "content": prompt}]


def llama_prompt(from_title, passages):
    """generate_llama.py: the distilled model's input."""
    return (
        LLAMA_INSTRUCTION + "Entity: " + _strip_any_case(from_title) + "\n"
        + _to_prompt(passages, 0) + "\n" + _to_prompt(passages, 1)
        + "\n\n### Response:\nQuestion: "
    )  # fmt: skip


def expand_prompt(passage, question):
    """expand.py: base_prompt + to_prompt(passage, question)."""
    return (
        EXPAND_BASE_PROMPT + "Passage: " + passage["title"] + " | " + passage["text"]
        + "\nQuestion: " + question + "\nAnswer: "
    )  # fmt: skip


def gpt_parse(output_text):
    """generate_gpt.py's parse of the stripped reply: (question, a1, a2) or None (status 1)."""
    output_text = output_text.strip()
    try:
        op_list = output_text.split("\n")
        question = op_list[0].strip()
        ans1 = op_list[1][len("Answer to Passage 1: ") :].strip()
        ans2 = op_list[2][len("Answer to Passage 2: ") :].strip()
    except IndexError:
        return None
    return question, ans1, ans2


def llama_parse(output_text):
    """generate_llama.py's parse: (question, a1, a2) or None (status 1), without its >4 check."""
    try:
        question = output_text.split("Answer to Passage 1: ")[0].strip()
        ans1 = output_text.split("Answer to Passage 1: ")[1].split("Answer to Passage 2: ")[0]
        ans1 = ans1.strip()
        ans2 = output_text.split("Answer to Passage 1: ")[1].split("Answer to Passage 2: ")[1]
        ans2 = ans2.split("</s>")[0].strip()
        if len(ans2.split("\n")) > 1:
            ans2 = ans2.split("\n")[0].strip()
        else:
            ans2 = ans2.split(". ")[0].strip()
    except IndexError:
        return None
    return question, ans1, ans2


def not_ambiguous(from_title, titles, question, ans1, ans2):
    """The status-2 test of both filter scripts (case-sensitive "(disambiguation)" strip)."""
    status = 0
    fromp = _strip_exact(from_title)
    idx = question.lower().find(fromp.lower())
    t0, t1 = titles[0].lower(), titles[1].lower()
    if idx != -1:
        if t0 == fromp.lower() or t1 == fromp.lower():
            pass
        elif t0 in question.lower() or t1 in question.lower():
            status = 2
    else:
        if t0 in question.lower() and t1 in question.lower():
            status = 2
    q = question.lower()
    if "mention" in q or "entity" in q or "context" in q or "passage" in q:
        status = 2
    if "passage" in ans1.lower() or "mention" in ans1.lower():
        status = 2
    if "passage" in ans2.lower() or "mention" in ans2.lower():
        status = 2
    w1, w2 = set(ans1.lower().split(" ")), set(ans2.lower().split(" "))
    if (ans1.lower() in ans2.lower() or ans2.lower() in ans1.lower()) or (
        len(w1 & w2) / len(w1 | w2) > 0.75
    ):
        status = 2
    return status == 2


def question_de(question, from_title, title):
    """q_DE of the filter scripts (question unchanged when the name is absent)."""
    fromp = _strip_exact(from_title)
    idx = question.lower().find(fromp.lower())
    if idx == -1:
        return question
    return question[:idx] + title + question[idx + len(fromp) :]


def isvalid(text):
    """gather.py's isvalid."""
    text = text.strip()
    if text == "Help:Disambiguation":
        return False
    if text[0].isnumeric():
        for i in range(len(text)):
            if text[i].lower().isalpha():
                return True
    return text[0].lower().isalpha()


def findcolon(text):
    """gather.py's findcolon, as called with one argument (what they meant)."""
    idx = text.find("refer to")
    if idx != -1:
        return text[idx + len("refer to") :]
    idx = text.find(":")
    if idx != -1 and idx + 1 < len(text) - 1:
        if len(text[idx + 1 :].strip()) and text[idx + 1 :].strip()[0] == "\n":
            return text[idx + 1 :].strip()
    return text


def gather_page(title, page_text, links):
    """gather.py's loop body for one page: its entities, or None when the title is invalid."""
    if not isvalid(title):
        return None
    p_wiki = page_text
    sa_idx = p_wiki.find("See also")
    if sa_idx != -1:
        p_wiki = p_wiki[:sa_idx]
    p_wiki = findcolon(p_wiki)
    out = []
    for lp in links:
        if not isvalid(lp):
            continue
        lp_idx = p_wiki.find(lp)
        if lp_idx <= 0:
            continue
        if p_wiki[lp_idx - 1 : lp_idx] == "\n":
            out.append(lp)
    return out
