"""`ambigdocs build gather`: the disambiguation map from a MediaWiki XML dump (docs/pipeline.md §1).

Disambiguation pages are found by their templates; their entities follow the authors' rule
(`gather_rules.py`) or the toolkit's `list-items` rule. `--source api` is the authors' live
route (unverified). Options and output: docs/building-seed.md, "gather".
"""

from __future__ import annotations

import bz2
import gzip
import os
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from generation.boundary import one_line
from generation.datagen.gather_rules import (
    authors_dump_entities,
    authors_entities,
    authors_valid_title,
    normalize_title,
    opens_a_line,
)
from generation.datagen.stage_io import check_output, format_stats, stage_main, stats_path
from generation.extras import require
from generation.io.records import atomic_write_json
from generation.options import option

# The disambiguation templates of the English Wikipedia (Category:Disambiguation message boxes)
# and their common redirects, lower-cased, spaces for underscores.
DISAMBIGUATION_TEMPLATES: tuple[str, ...] = (
    "disambiguation",
    "disambig",
    "disamb",
    "dab",
    "disambiguation page",
    "hndis",
    "human name disambiguation",
    "geodis",
    "geo-dis",
    "geographic disambiguation",
    "numberdis",
    "number disambiguation",
    "letter-numbercombdisambig",
    "letter-number combination disambiguation",
    "mil-unit-dis",
    "military unit disambiguation",
    "hospitaldis",
    "hospital disambiguation",
    "mathdab",
    "mathematical disambiguation",
    "schooldis",
    "school disambiguation",
    "roaddis",
    "road disambiguation",
    "call sign disambiguation",
    "species latin name disambiguation",
    "genus disambiguation",
    "chinese title disambiguation",
    "church disambiguation",
    "place name disambiguation",
)

# Interwiki prefixes of the sister projects: a link like [[wikt:mercury]] is not an article.
INTERWIKI_PREFIXES = frozenset(
    "wikt wiktionary commons c w wikipedia meta m species wikispecies wikisource s wikiquote q "
    "wikibooks b wikinews n wikivoyage voy wikidata d wikiversity v mw mediawikiwiki".split()
)

ENTITY_RULES = ("authors", "list-items")
_SEE_ALSO = re.compile(r"^\s*=+\s*see also\s*=+\s*$", re.IGNORECASE | re.MULTILINE)
_LIST_ITEM = re.compile(r"^[*#]+[:;]*\s*(.*)$")


def normalize_template(name: str) -> str:
    """A template name for matching: lower-cased, `_` = space, no `Template:` prefix."""
    name = " ".join(name.replace("_", " ").split()).lower()
    if name.startswith("template:"):
        name = name[len("template:") :].strip()
    return name


def _screen(templates: Iterable[str]) -> re.Pattern:
    # A fast first look over every article's text; mwparserfromhell confirms the few that pass.
    names = sorted({normalize_template(t) for t in templates}, key=len, reverse=True)
    alternatives = "|".join(re.escape(n).replace(r"\ ", r"[ _]+") for n in names)
    return re.compile(
        r"\{\{\s*(?:template\s*:\s*)?(?:" + alternatives + r")\s*(?:\||\}\})", re.IGNORECASE
    )


def uses_template(wikitext: str, templates: frozenset[str]) -> bool:
    """Whether the wikitext transcludes one of `templates` (normalised names)."""
    import mwparserfromhell

    code = mwparserfromhell.parse(wikitext)
    return any(
        normalize_template(str(t.name)) in templates for t in code.filter_templates(recursive=False)
    )


def _opening_link(code):
    """The wikilink that opens a parsed list item (through bold/italics), or None."""
    from mwparserfromhell.nodes import Comment, Tag, Text, Wikilink

    for node in code.nodes:
        if isinstance(node, Comment) or (isinstance(node, Text) and not node.value.strip()):
            continue
        if isinstance(node, Wikilink):
            return node
        if isinstance(node, Tag) and node.wiki_markup in ("''", "'''") and node.contents:
            return _opening_link(node.contents)
        return None
    return None


def list_entities(wikitext: str, namespaces: Iterable[str] = ()) -> list[str]:
    """The entities of a disambiguation page: targets of links opening list items before See also.

    Args:
        wikitext: the page's wikitext.
        namespaces: names of the wiki's namespaces other than the main one (links into them
            are not entities).

    Returns:
        Normalised targets in page order, each once.
    """
    import mwparserfromhell

    blocked = {n.lower() for n in namespaces if n} | INTERWIKI_PREFIXES
    cut = _SEE_ALSO.search(wikitext)
    body = wikitext[: cut.start()] if cut else wikitext
    out: dict[str, None] = {}  # targets in page order, each once
    for line in body.splitlines():
        item = _LIST_ITEM.match(line)
        if not item:
            continue
        link = _opening_link(mwparserfromhell.parse(item.group(1)))
        if link is None:
            continue
        target = str(link.title).strip()
        if not target or target.startswith(":") or "#" in target:
            continue  # a colon link (category/file mention) or a link into a section
        prefix, colon, _ = target.partition(":")
        if colon and prefix.strip().lower() in blocked:
            continue
        out[normalize_title(target)] = None
    return list(out)


def iter_disambiguation_pages(
    dump: str | os.PathLike,
    templates: Sequence[str] = DISAMBIGUATION_TEMPLATES,
    redirects: dict[str, str] | None = None,
    stats: dict | None = None,
    progress: bool = True,
    entity_rule: str = "authors",
) -> Iterator[tuple[str, list[str]]]:
    """Streams a dump and yields (page title, entities) for each disambiguation page.

    Args:
        dump: the XML dump (plain, .bz2 or .gz).
        templates: names of the disambiguation templates.
        redirects: if given, filled with {redirect title: target} of the main namespace.
        stats: if given, counts are added to it (articles, redirects, disambiguation pages).
        progress: show a progress bar (pages).
        entity_rule: `authors` or `list-items` (docs/building-seed.md, "gather").

    Raises:
        ValueError: the file is not a MediaWiki XML dump.
    """
    import mwxml
    from tqdm.auto import tqdm

    wanted = frozenset(normalize_template(t) for t in templates)
    screen = _screen(wanted)
    stats = {} if stats is None else stats
    for key in ("pages_read", "articles", "redirects", "disambiguation_pages", "invalid_titles"):
        stats.setdefault(key, 0)
    path = Path(dump)
    with {".bz2": bz2.open, ".gz": gzip.open}.get(path.suffix, open)(path, "rb") as f:
        try:
            parsed = mwxml.Dump.from_file(f)
        except Exception as err:  # mwxml raises several types on a non-dump file
            raise ValueError(f"{path}: not a MediaWiki XML dump ({one_line(err)})") from None
        namespaces = [ns.name for ns in (parsed.site_info.namespaces or []) if ns.id != 0]
        pages = tqdm(parsed, desc=f"reading {path.name}", unit=" pages", disable=not progress)
        with _unreadable_dump(path, stats):
            for page in pages:
                found = _disambiguation_entry(page, screen, wanted, namespaces, redirects, stats,
                                              entity_rule)  # fmt: skip
                if found is not None:
                    yield found


def _disambiguation_entry(page, screen, wanted, namespaces, redirects, stats, entity_rule):
    """(title, entities) when the page is a disambiguation page that passes the title rule;
    counts the page in `stats` and records a redirect in `redirects`."""
    stats["pages_read"] += 1
    if page.namespace != 0:
        return None
    if page.redirect:
        stats["redirects"] += 1
        if redirects is not None:
            redirects[normalize_title(page.title)] = normalize_title(page.redirect)
        return None
    stats["articles"] += 1
    text = None
    for revision in page:  # the last revision is the current one
        text = revision.text
    if not text or not screen.search(text) or not uses_template(text, wanted):
        return None
    stats["disambiguation_pages"] += 1
    if entity_rule == "list-items":
        return page.title, list_entities(text, namespaces)
    if not authors_valid_title(page.title):
        stats["invalid_titles"] += 1
        return None
    blocked = [*namespaces, "image", *INTERWIKI_PREFIXES]
    return page.title, authors_dump_entities(text, blocked)


@contextmanager
def _unreadable_dump(path: Path, stats: dict):
    """A dump that breaks off or goes bad mid-stream (truncated XML or compression) is bad
    input: a ValueError naming the file and how far it was read."""
    from mwxml.errors import MalformedXML

    try:
        yield
    except (SyntaxError, EOFError, OSError, MalformedXML) as err:  # ParseError is a SyntaxError
        raise ValueError(
            f"{path}: the dump is not readable after {stats['pages_read']} pages ({one_line(err)})"
        ) from None


def run(
    dump: str | os.PathLike | None,
    output: str | os.PathLike,
    templates: Sequence[str] = DISAMBIGUATION_TEMPLATES,
    min_entities: int = 2,
    max_entities: int = 10,
    resolve_redirects: bool = False,
    source: str = "dump",
    progress: bool = True,
    entity_rule: str = "authors",
) -> dict:
    """Runs the gather stage (docs/building-seed.md, "gather").

    Args:
        dump: the MediaWiki XML dump (ignored with source="api").
        output: the map JSON to write.
        templates: disambiguation template names.
        min_entities / max_entities: pages kept (authors: 2..10).
        resolve_redirects: map entities through the dump's redirects (named option).
        source: "dump" (default) or "api" (the authors' live route; unverified offline).
        progress: show a progress bar.
        entity_rule: `authors` (default) or `list-items`.

    Returns:
        The statistics as saved.
    """
    _check_options(source, entity_rule, min_entities, max_entities, templates)
    readers = ["mwparserfromhell"] if source == "api" else ["mwparserfromhell", "mwxml"]
    require("build", *readers, what="reading a MediaWiki dump")
    check_output(output)
    counts: dict[str, int] = {}
    if source == "api":
        found = gather_from_api(progress=progress, entity_rule=entity_rule)
        counts["disambiguation_pages"] = len(found)
    else:
        if dump is None:
            raise ValueError("the dump route needs --dump PATH")
        redirects: dict[str, str] | None = {} if resolve_redirects else None
        pages = iter_disambiguation_pages(
            dump, templates, redirects, counts, progress, entity_rule=entity_rule
        )
        found = dict(pages)
        if redirects:
            found = {
                page: list(dict.fromkeys(redirects.get(t, t) for t in titles))
                for page, titles in found.items()
            }
    kept = {p: ts for p, ts in found.items() if min_entities <= len(ts) <= max_entities}
    if not kept:
        print(f"gather: warning: no disambiguation page kept; {output} is empty", file=sys.stderr)
    atomic_write_json(output, kept)
    stats = {
        "stage": "gather",
        "output": str(output),
        "entity_rule": entity_rule,
        **counts,
        f"fewer_than_{min_entities}_entities": sum(len(t) < min_entities for t in found.values()),
        f"more_than_{max_entities}_entities": sum(len(t) > max_entities for t in found.values()),
        "pages_kept": len(kept),
        "entities_kept": sum(map(len, kept.values())),
    }
    atomic_write_json(stats_path(output), stats)
    print(format_stats(stats))
    return stats


def _check_options(source, entity_rule, min_entities, max_entities, templates) -> None:
    if source not in ("dump", "api"):
        raise ValueError(f"source must be 'dump' or 'api', got {source!r}")
    if entity_rule not in ENTITY_RULES:
        raise ValueError(f"entity_rule must be one of {ENTITY_RULES}, got {entity_rule!r}")
    if not 0 <= min_entities <= max_entities:
        raise ValueError(
            f"--min-entities {min_entities} and --max-entities {max_entities}: need 0 <= min <= max"
        )
    if source == "dump" and not [t for t in templates if normalize_template(t)]:
        raise ValueError("--templates: give at least one template name")


# The categories the authors walked, with their recursion depths.
API_CATEGORIES: tuple[tuple[str, int], ...] = (
    ("Disambiguation pages", 0),
    ("Buildings and structures disambiguation pages", 2),
    ("Disambiguation pages with given-name-holder lists", 0),
    ("Language and nationality disambiguation pages", 0),
    ("Military units and formations disambiguation pages", 0),
    ("Place name disambiguation pages", 1),
    ("Science disambiguation pages", 3),
    ("Disambiguation pages with surname-holder lists", 0),
    ("Title and name disambiguation pages", 2),
)


def gather_from_api(
    language: str = "en",
    user_agent: str = "ambigdocs-toolkit (https://github.com/)",
    progress: bool = True,
    entity_rule: str = "authors",
) -> dict[str, list[str]]:
    """The authors' live route: category members, then the links that start a line of each page.

    UNVERIFIED: written against the documented `wikipediaapi` API but never run here (the
    development machine has no network and the package is not installed). Pages are read
    through `wikipediaapi`. With `entity_rule="authors"` (default) the page title and the links
    pass the authors' rule (`gather_rules.authors_entities`: "See also" and "refer to" cuts, the
    title rule, API link order); with `list-items` an entity is a page link whose title starts a
    line of the text before "See also", in API order (the toolkit's earlier API rule).

    Raises:
        ValueError: `wikipedia-api` is not installed (`MissingExtraError`).
    """
    require("build", "wikipediaapi", what="--source api")
    import wikipediaapi
    from tqdm.auto import tqdm

    wiki = wikipediaapi.Wikipedia(
        user_agent=user_agent, language=language, extract_format=wikipediaapi.ExtractFormat.WIKI
    )
    titles: list[str] = []
    for name, depth in API_CATEGORIES:
        _category_members(wiki.page(f"Category:{name}"), depth, titles)
    out: dict[str, list[str]] = {}
    for title in tqdm(dict.fromkeys(titles), desc="disambiguation pages", disable=not progress):
        if entity_rule == "authors" and not authors_valid_title(title):
            continue
        page = wiki.page(title)
        if entity_rule == "authors":
            entities = authors_entities(page.text, page.links)
        else:
            text = page.text.partition("See also")[0]
            entities = [lk for lk in page.links if opens_a_line(text, lk)]
        if entities:
            out[title] = entities
    return out


def _category_members(category, depth: int, into: list[str]) -> None:
    for member in category.categorymembers.values():
        if member.ns == 0:
            into.append(member.title)
        elif member.ns == 14 and depth > 0:
            _category_members(member, depth - 1, into)


@dataclass(kw_only=True)
class GatherOptions:
    dump: str | None = option(None, help="MediaWiki XML dump (.xml, .xml.bz2, .xml.gz)")
    output: str = option(help="the map JSON to write")
    templates: list[str] = option(
        list(DISAMBIGUATION_TEMPLATES),
        help="disambiguation template names (default: the English Wikipedia's)",
    )
    min_entities: int = option(2, help="pages with fewer entities are left out")
    max_entities: int = option(10, help="pages with more entities are left out")
    resolve_redirects: bool = option(
        False, help="map entity links through the dump's redirects (not the authors')"
    )
    entity_rule: Literal["authors", "list-items"] = option(
        "authors",
        help="authors (default: their cuts, title rule and API link order) or list-items "
        "(links opening a list item, page order)",
    )
    source: Literal["dump", "api"] = option(
        "dump",
        help="dump (default) or api: the authors' live route (needs wikipedia-api; unverified)",
    )
    progress: bool = option(True, help="show progress bars (--no-progress hides them)")

    def __post_init__(self):
        # Checked when the options are made, so that `build all` reports them before any stage
        # runs (values of the wrong type are left to the type check).
        typed = isinstance(self.min_entities, int) and isinstance(self.max_entities, int)
        if typed and isinstance(self.templates, list):
            templates = [t for t in self.templates if isinstance(t, str)]
            _check_options(self.source, self.entity_rule, self.min_entities,
                           self.max_entities, templates)  # fmt: skip


OPTIONS = (GatherOptions,)
DESCRIPTION = "Build the disambiguation map {page: [entity titles]} (docs/pipeline.md §1)."
main = stage_main("gather", __name__)

if __name__ == "__main__":
    sys.exit(main())
