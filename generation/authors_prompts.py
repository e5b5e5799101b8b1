"""The exact prompt strings of the authors' data-creation scripts (issues 11 and 15).

The authors' public repository (`src/generation/expand.py`, `generate_gpt.py`) builds its prompts
from two fixed blocks of text, reproduced here character for character (the `\\"` and `\\uXXXX`
escapes of their source are the characters they stand for at run time). They differ from the
paper's Figures 9 and 10, which print one exemplar each "due to limited space":

- `AUTHORS_EXPANSION_PROMPT` (`base_prompt` of `expand.py`, 3,191 characters): an `[INST]`
  instruction block (no space after `[INST]`), a blank line, then four exemplars (Kiwi Travel,
  Helianthus occidentalis, Proletarian Unity Party, The Kent Island Bay Times), each followed by
  a blank line. The query `Passage: {title} | {text}\\nQuestion: {q}\\nAnswer: ` follows.
- `AUTHORS_QUESTION_EXEMPLARS` (`comp_prompt` of `generate_gpt.py`, 2,896 characters): a leading
  newline and two exemplars (Gimnasia y Esgrima, Young Conservatives), the second labelled
  `Answer to Article 1/2`, each followed by a blank line. The GPT-4 user turn appends
  `Entity: {sn}Passage 1: {title} | {text}Passage 2: {title} | {text}\\nQuestion:` with no
  newline between those parts; the system turn is `generation.prompts.QUESTION_INSTRUCTION`.

Rendering lives in `generation.prompts` (`render_question_prompt(..., prompt_format="authors")`,
`render_expansion_prompt(..., prompt_format="authors")`).
"""

AUTHORS_EXPANSION_PROMPT = (
    "[INST]Given a passage related to the question, answer to the question. Find "
    "the shortest span of the passage as an answer.[/INST]\n"
    "\n"
    "Passage: Kiwi Travel International Airlines | Kiwi Travel International "
    "Airlines Kiwi Travel International Airlines was a New Zealand based airline "
    "which pioneered discount flights between secondary airports in Australia and "
    "New Zealand in the mid 1990s. The airline was established by Ewan Wilson and "
    "several associates. Ewan Wilson served as CEO and was later convicted on four "
    "counts of fraud. It was reported in March 2015 that Wilson was looking at "
    "restarting an airline, under the name Kiwi Regional Airlines. The airline "
    "started out as Kiwi Travel Air Charters in July 1994, operating weekly "
    "charters between Hamilton, New Zealand and Brisbane, Australia, using a "
    "leased Air\n"
    "Question: Who founded Kiwi Airlines?\n"
    "Answer: Ewan Wilson\n"
    "\n"
    "Passage: Helianthus occidentalis | Helianthus occidentalis Helianthus "
    "occidentalis (fewleaf sunflower or western sunflower) is a species of "
    "sunflower native to the Eastern and Central United States. It grows mostly in "
    "the Great Lakes Region and in the Ozarks, with additional populations "
    'scattered as far as Massachusetts, Texas, and the Florida Panhandle. "H. '
    'occidentalis" differs from other, similar species by its sparse leaves, most '
    "of which are crowded around the lower part of the stem. This perennial plant "
    "reaches heights from 2 to 5 ft (60\u2013150 cm). It produces one to several yellow "
    "flower heads, each with 8-14 ray florets surrounding more than 50 disc\n"
    "Question: Where is the Western sunflower primarily found?\n"
    "Answer: Eastern and Central United States\n"
    "\n"
    "Passage: Proletarian Unity Party (France) | Proletarian Unity Party (France) "
    'The Party of Proletarian Unity (, "PUP") was a French socialist political '
    "party. It was formed on December 21, 1930 by leftists expelled from the "
    "French Communist Party (PCF), together with some who had previously belonged "
    "to the left-wing of the Section fran\u00e7aise de l'Internationale ouvri\u00e8re "
    '(SFIO). Its members were known in France as "pupistes", and one of its '
    "notable leaders was Alexandre Bachelet. Owing to proportional representation, "
    "it at one time had ten seats in the Chamber of Deputies of the Third "
    "Republic. The PUP affiliated to the London Bureau of left-socialist parties. "
    "On January\n"
    "Question: When was the Proletarian Unity Party formed?\n"
    "Answer: December 21, 1930\n"
    "\n"
    "Passage: The Kent Island Bay Times | The Kent Island Bay Times The Kent "
    "Island Bay Times or simply the Bay Times is a weekly newspaper based in "
    "Stevensville, Maryland and is owned by Chesapeake Publishing, the same "
    "company that owns The Record Observer in Centreville, Maryland and The Star "
    "Democrat in Easton, Maryland, and other newspapers on both sides of the "
    "Chesapeake Bay. It is published every Wednesday and covers news mostly in "
    "southern Queen Anne's County including all of Kent Island, Grasonville and "
    "Queenstown. The Bay Times was Founded by Christopher J. Rosendale Sr. and his "
    "wife Mary Lou in 1963. The first issue of\n"
    "Question: What type of community does the Bay Times primarily serve?\n"
    "Answer: Southern Queen Anne's County including all of Kent Island, "
    "Grasonville and Queenstown\n"
    "\n"
)

AUTHORS_QUESTION_EXEMPLARS = (
    "\n"
    "Entity: Gimnasia y Esgrima\n"
    "Passage 1: Gimnasia y Esgrima de Buenos Aires | football. Because of the "
    "growth of the activity, the club built one field more. After leaving the "
    "official football leagues in the decade of 1920, rugby union was one of the "
    "predominant sports of Gimnasia y Esgrima, winning the Torneo de la URBA "
    "titles of 1911 and 1912. The club won two more titles in 1932 and 1939, its "
    "last championship to date. Gimnasia y Esgrima currently plays in the Grupo "
    "II, the second division of the Uni\u00f3n de Rugby de Buenos Aires league system. "
    "In 1942 president Aldao moved to the club's distinguished guest apartment, "
    "establishing it as its\n"
    "Passage 2: Gimnasia y Esgrima de Jujuy | Gimnasia y Esgrima de Jujuy Club "
    "Atl\u00e9tico Gimnasia y Esgrima , (usually known as Gimnasia y Esgrima de Jujuy "
    "or GEJ) is an Argentine sports club based in San Salvador de Jujuy, Jujuy "
    "Province. The club was founded in 1931 and is best known for its football "
    "team, which currently plays in the Primera B Nacional, the second division of "
    "the Argentine football league system. The team is one of the most important "
    "football clubs in the North-West region of Argentina. It played most of the "
    "time in the Argentine second division, although it has also played at the "
    "highest\n"
    "Question: What is the main sport associated with Gimnasia y Esgrima?\n"
    "Answer to Passage 1: Rugby union\n"
    "Answer to Passage 2: Football\n"
    "\n"
    "Entity: Young Conservatives\n"
    "Passage 1: Young Conservatives (Czech Republic) | The Young Conservatives () "
    "is a political youth organisation in the Czech Republic. It is the youth wing "
    "of the Civic Democratic Party (ODS), a centre-right political party, and "
    "shares that party's conservative and economically liberal ideology. Young "
    "people within the age from 15 to 35 apply for a membership in the MK. Several "
    "significant politicians from the ODS party started as members of Young "
    "Conservatives, including Jan Zahradil, Ji\u0159\u00ed Posp\u00ed\u0161il, Petr Sokol, Martin "
    "Baxa, Petr Gandalovi\u010d, Ivan Langer, Martin Novotn\u00fd, and Pavel Drobil. Former "
    "Chairman of Young Conservatives Petr Mach went on to found a\n"
    "Passage 2: Young Conservatives (UK) | The Young Conservatives (YC) is the "
    "youth wing of the Conservative Party in the United Kingdom for members aged "
    "25 and under. The organisation shares the same values and policies as its "
    "parent political party with branches being an integrated part of local "
    "associations, with the exception of college and university branches which are "
    "run independently. YC is both social and political, aiming to bring together "
    "young conservatives and encouraging young people to get involved in "
    'campaigning. The "Junior Imperial and Constitutional League" was formed in '
    "1906 with objectives to encourage practical political work and organisation "
    "among\n"
    "Question: What is the age range for membership in the Young Conservatives?\n"
    "Answer to Article 1: 15 to 35\n"
    "Answer to Article 2: 25 and under\n"
    "\n"
)
