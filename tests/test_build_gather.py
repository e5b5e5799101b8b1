"""The gather stage (docs/pipeline.md §1) on the small hand-made dump in tests/data/wiki/."""

from __future__ import annotations

import bz2
import json
import sys
import types

import pytest

from generation.datagen import gather

DUMP = "tests/data/wiki/enwiki-mini.xml"

# Read off the dump by hand: see the comments on each page of enwiki-mini.xml.
# The `list-items` rule: links opening a list item, page order.
EXPECTED = {
    "Judge Day": ["Charles Bernard Day", "Edward William Day", "William Louis Day"],
    "Mercury (disambiguation)": [
        "Mercury (planet)",  # [[mercury_(planet)|...]]: normalised
        "Mercury (element)",
        "Mercury (film)",  # in italics, and listed twice
        "Mercury (band)",  # in bold
        "Mercury (Mercury album)",  # a nested item
        "Mercury (mythology)",  # a numbered item
    ],
    "John Smith (footballer)": [
        "John Smith (footballer, born 1898)",
        "John Smith (footballer, born 1990)",
    ],
    "Ace & Co": ["Ace & Co (company)", "Ace & Co (album)"],
}

# The authors' rule (default), by hand: plain text cut after the first "refer to" and before
# "See also", a link is an entity when its title first occurs at a line start, in title order.
EXPECTED_AUTHORS = {
    "Judge Day": ["Charles Bernard Day", "Edward William Day", "William Louis Day"],
    # "commonly refers to:" is no "refer to": the cut comes after "may also refer to:", so the
    # planet and the element are left out; the album's italics do not hide its title
    "Mercury (disambiguation)": [
        "Mercury (Mercury album)",
        "Mercury (band)",
        "Mercury (film)",
        "Mercury (mythology)",
    ],
    # John Smith: the 1990 footballer is piped ("John Smith"), so one entity: too few
    "Ace & Co": ["Ace & Co (album)", "Ace & Co (company)"],  # title order
}


@pytest.fixture()
def dump(repo_root):
    return repo_root / DUMP


@pytest.mark.parametrize(
    "rule, expected, too_few", [("list-items", EXPECTED, 1), (None, EXPECTED_AUTHORS, 2)]
)
def test_map_from_the_dump(dump, tmp_path, capsys, rule, expected, too_few):
    from generation.cli import main

    out = tmp_path / "map.json"
    argv = ["build", "gather", "--dump", str(dump), "--output", str(out), "--no-progress"]
    assert main(argv + (["--entity-rule", rule] if rule else [])) == 0
    got = json.loads(out.read_text())
    assert got == expected
    assert list(got) == list(expected)  # dump order
    stats = json.loads((tmp_path / "map.json.stats.json").read_text())
    assert stats["pages_read"] == 10 and stats["redirects"] == 2
    assert stats["entity_rule"] == (rule or "authors")
    # Judge Day, Mercury, John Smith, Springfield (11), Lonely (1), Ace & Co
    assert stats["disambiguation_pages"] == 6
    assert stats["more_than_10_entities"] == 1 and stats["fewer_than_2_entities"] == too_few
    assert stats["pages_kept"] == len(expected)
    assert "pages_kept" in capsys.readouterr().out


def test_bounds_templates_redirects_and_bz2(dump, tmp_path):
    packed = tmp_path / "dump.xml.bz2"
    packed.write_bytes(bz2.compress(dump.read_bytes()))
    out = tmp_path / "map.json"
    gather.run(packed, out, min_entities=1, max_entities=20, progress=False)
    got = json.loads(out.read_text())
    assert len(got["Springfield"]) == 11 and got["Lonely"] == ["Lonely (Akon song)"]

    gather.run(dump, out, templates=["geodis"], min_entities=1, max_entities=20, progress=False)
    assert list(json.loads(out.read_text())) == ["Springfield"]

    gather.run(dump, out, resolve_redirects=True, progress=False)
    assert "Mercury (American band)" in json.loads(out.read_text())["Mercury (disambiguation)"]


def test_list_entities_rules():
    text = """'''X''' may refer to:
* [[X (a)]], first
*''[[x_(b)|X]]'', second
* '''''[[X (c)]]''''', third
* A [[X (d)]] after text
* [[Category:X]] and [[wikt:x]] lines
* [[:Category:X]]
* [[X (e)#Section]]
** <!-- a comment --> [[X (f)]]
#: [[X (g)]]
Not a list line [[X (h)]]
== See Also ==
* [[X (i)]]
"""
    assert gather.list_entities(text, ["Category", "File"]) == [
        "X (a)",
        "X (b)",
        "X (c)",
        "X (f)",
        "X (g)",
    ]


def test_template_matching():
    wanted = frozenset(gather.normalize_template(t) for t in gather.DISAMBIGUATION_TEMPLATES)
    for text in [
        "{{Disambiguation}}",
        "{{disambiguation|surname}}",
        "{{ Template:Disambig }}",
        "{{Human_name_disambiguation}}",
        "{{hndis|Smith, John}}",
    ]:
        assert gather._screen(wanted).search(text) and gather.uses_template(text, wanted), text
    for text in ["{{disambiguation needed}}", "{{Infobox}}", "disambiguation", "<!-- {{dab -->"]:
        assert not (gather._screen(wanted).search(text) and gather.uses_template(text, wanted)), (
            text
        )


def test_not_a_dump(tmp_path):
    bad = tmp_path / "x.xml"
    bad.write_text("<html><body>no dump</body></html>")
    with pytest.raises(ValueError, match="not a MediaWiki XML dump"):
        gather.run(bad, tmp_path / "m.json", progress=False)


def test_api_route_with_a_fake_client(tmp_path, monkeypatch):
    """The live route, with `wikipediaapi` replaced at the boundary (no network here)."""

    class Page:
        def __init__(self, title, ns=0, text="", links=(), members=()):
            self.title, self.ns, self.text = title, ns, text
            self.links = {lk: None for lk in links}
            self.categorymembers = {m.title: m for m in members}

    pages = {
        "Judge Day": Page(
            "Judge Day",
            text="Judge Day may refer to:\nCharles Bernard Day, judge\nWilliam Louis Day, judge\n"
            "Judge Day is also mentioned in Edward William Day\nSee also\nDay (surname)",
            links=[
                "Charles Bernard Day",
                "William Louis Day",
                "Edward William Day",
                "Day (surname)",
            ],
        )
    }
    sub = Page("Category:Sub", ns=14, members=[pages["Judge Day"]])
    cats = {"Category:Title and name disambiguation pages": Page("c", ns=14, members=[sub])}

    class Wikipedia:
        def __init__(self, **kw):
            pass

        def page(self, title):
            return pages.get(title) or cats.get(title) or Page(title, ns=14)

    fake = types.SimpleNamespace(Wikipedia=Wikipedia, ExtractFormat=types.SimpleNamespace(WIKI=1))
    monkeypatch.setitem(sys.modules, "wikipediaapi", fake)
    out = tmp_path / "map.json"
    gather.run(None, out, source="api", progress=False)
    assert json.loads(out.read_text()) == {
        "Judge Day": ["Charles Bernard Day", "William Louis Day"]
    }


def test_api_route_authors_rule_and_the_earlier_rule(tmp_path, monkeypatch):
    """The authors' cuts and title rule on the live route (fake client), against `list-items`."""

    class Page:
        def __init__(self, title, ns=0, text="", links=(), members=()):
            self.title, self.ns, self.text = title, ns, text
            self.links = {lk: None for lk in links}  # the API's order
            self.categorymembers = {m.title: m for m in members}

    text = (
        "Mercury commonly refers to:\nMercury (planet), a planet\nMercury may also refer to:\n"
        "1984 (film), a film\n1984, a year\nMercury (band), a band\nSee also\nMercury (god)"
    )
    links = ["1984", "1984 (film)", "Help:Disambiguation", "Mercury (band)", "Mercury (god)",
             "Mercury (planet)"]  # fmt: skip
    pages = {
        "Mercury": Page("Mercury", text=text, links=links),
        "1984": Page("1984", text=text, links=links),  # a title without a letter
    }
    cats = {"Category:Disambiguation pages": Page("c", ns=14, members=list(pages.values()))}

    class Wikipedia:
        def __init__(self, **kw):
            pass

        def page(self, title):
            return pages.get(title) or cats.get(title) or Page(title, ns=14)

    fake = types.SimpleNamespace(Wikipedia=Wikipedia, ExtractFormat=types.SimpleNamespace(WIKI=1))
    monkeypatch.setitem(sys.modules, "wikipediaapi", fake)
    out = tmp_path / "map.json"
    gather.run(None, out, source="api", progress=False)
    assert json.loads(out.read_text()) == {"Mercury": ["1984 (film)", "Mercury (band)"]}
    gather.run(None, out, source="api", progress=False, entity_rule="list-items")
    earlier = ["1984", "1984 (film)", "Mercury (band)", "Mercury (planet)"]
    assert json.loads(out.read_text()) == {"Mercury": earlier, "1984": earlier}
