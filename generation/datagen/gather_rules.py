"""The authors' entity rules for disambiguation pages (issue 15), for both gather routes.

Their `gather.py` read each page's plain text and links through the live API; a link is an
entity when its title's first occurrence in the text, cut before "See also" and after "refer
to", opens a line. For a dump, the wikitext is rendered as that plain text. The rule and what
a dump cannot reproduce: docs/building-seed.md, "gather".
"""

from __future__ import annotations

import re
from collections.abc import Iterable

SEE_ALSO = "See also"
REFER_TO = "refer to"


def authors_valid_title(title: str) -> bool:
    """The authors' `isvalid`: a letter first, or a digit first and a letter anywhere; never
    `Help:Disambiguation`. An empty title is not valid (their code raised and skipped it)."""
    text = title.strip()
    if not text or text == "Help:Disambiguation":
        return False
    if text[0].isnumeric():
        return any(ch.lower().isalpha() for ch in text)
    return text[0].lower().isalpha()


def cut_page_text(text: str) -> str:
    """The text the authors searched: before the first `See also`, after the first `refer to`."""
    text = text.partition(SEE_ALSO)[0]
    before, refer, after = text.partition(REFER_TO)
    return after if refer else before


def opens_a_line(text: str, title: str) -> bool:
    """Whether the first occurrence of `title` in `text` is after position 0 and right after a
    newline (the authors' test, including its use of the first occurrence only)."""
    at = text.find(title)
    return at > 0 and text[at - 1] == "\n"


def authors_entities(text: str, links: Iterable[str]) -> list[str]:
    """The entities of one page by the authors' rule.

    Args:
        text: the page's plain text (whole; the cuts are made here).
        links: the page's link titles in the order to keep (the API's).

    Returns:
        The links that pass the title and line rules, each once, in `links` order.
    """
    body = cut_page_text(text)
    return [
        link
        for link in dict.fromkeys(links)
        if authors_valid_title(link) and opens_a_line(body, link)
    ]


def api_link_order(titles: Iterable[str]) -> list[str]:
    """Main-namespace titles in the order `prop=links` lists them: binary order of the UTF-8
    title with underscores for spaces (MediaWiki's `pl_title`)."""
    return sorted(set(titles), key=lambda t: t.replace(" ", "_").encode("utf-8"))


def _render(nodes) -> str:
    """Plain text of parsed wikitext as a reader sees it (links by their shown text)."""
    from mwparserfromhell.nodes import (
        Comment,
        ExternalLink,
        Heading,
        HTMLEntity,
        Tag,
        Template,
        Text,
        Wikilink,
    )

    out = []
    for node in nodes:
        if isinstance(node, Text):
            out.append(node.value)
        elif isinstance(node, Wikilink):
            out.append(_link_text(node))
        elif isinstance(node, HTMLEntity):
            out.append(node.normalize())
        elif isinstance(node, Heading):
            out.append(_render(node.title.nodes).strip())
        elif isinstance(node, ExternalLink):
            out.append(_render(node.title.nodes) if node.title else "")
        elif isinstance(node, Tag):
            if str(node.tag).lower() in ("ref", "references", "gallery", "math"):
                continue
            if str(node.tag).lower() == "br":
                out.append("\n")
            elif node.contents is not None:
                out.append(_render(node.contents.nodes))
        elif isinstance(node, (Template, Comment)):
            continue  # templates are not expanded offline
    return "".join(out)


def _link_text(link) -> str:
    target = str(link.title).strip()
    if target.startswith(":"):
        # A colon link ([[:Category:X]]) is shown, and is a link; its text is the rest.
        return _render(link.text.nodes) if link.text is not None else target[1:]
    prefix, colon, _ = target.partition(":")
    if colon and prefix.strip().lower() in ("category", "file", "image"):
        return ""  # category assignments and images show no text
    if link.text is not None:
        return _render(link.text.nodes)
    return target.replace("_", " ")


def dump_plain_text(wikitext: str) -> str:
    """The page as the API's plain text shows it: one stripped line per displayed line, list
    markers and heading signs removed, blank lines collapsed."""
    import mwparserfromhell

    rendered = _render(mwparserfromhell.parse(wikitext).nodes)
    lines = "\n".join(line.strip() for line in rendered.split("\n"))
    return re.sub(r"\n\n+", "\n\n", lines).strip()


def normalize_title(name: str) -> str:
    """A link target as MediaWiki names the page: `_` = space, single spaces, first letter upper."""
    name = " ".join(name.replace("_", " ").split())
    return name[:1].upper() + name[1:]


def dump_links(wikitext: str, blocked_prefixes: Iterable[str]) -> list[str]:
    """The page's own links into the main namespace (normalised titles, section part dropped;
    no links into other namespaces or other wikis), as `prop=links` would list them from the
    page's wikitext, in API order."""
    import mwparserfromhell

    blocked = {p.lower() for p in blocked_prefixes}
    titles = []
    for link in mwparserfromhell.parse(wikitext).filter_wikilinks(recursive=True):
        target = str(link.title).strip().split("#", 1)[0].strip()
        if not target or target.startswith(":"):
            continue
        prefix, colon, _ = target.partition(":")
        if colon and prefix.strip().lower() in blocked:
            continue
        titles.append(normalize_title(target))
    return api_link_order(titles)


def authors_dump_entities(wikitext: str, blocked_prefixes: Iterable[str]) -> list[str]:
    """The authors' entities of a page read from a dump."""
    return authors_entities(dump_plain_text(wikitext), dump_links(wikitext, blocked_prefixes))
