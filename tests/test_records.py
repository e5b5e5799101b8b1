"""The one JSON/JSONL reader: exact numbers, and errors that name the file, line and place."""

from __future__ import annotations

import pytest

from generation.io.records import iter_jsonl, read_records


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        (
            "torn.jsonl",
            b'{"a": 1}\n{"b": 2}\n{"c":\n',
            r"torn\.jsonl, line 3, column 6: not valid JSON",
        ),
        (
            "bytes.jsonl",
            b'{"a": 1}\n\n{"b": "\xff"}\n',
            r"bytes\.jsonl, line 3, byte 8: not valid UTF-8",
        ),
        (
            "bytes.json",
            b'[{"a": 1},\n {"b": "x\xc3"}]',
            r"bytes\.json, line 2, byte 10: not valid UTF-8",
        ),
        (
            "comma.json",
            b'[{"a": 1},\n {"a": 2,}]',
            r"comma\.json, line 2, column 10: not valid JSON",
        ),
        (
            "lone.jsonl",
            b'{"a": 1}\n{"q": "\\ud800"}\n',
            r"lone\.jsonl, line 2: field 'q' holds a lone",
        ),
        (
            "lone.json",
            b'[{"a": {"t": ["ok", "\\udc00"]}}]',
            r"element 0: field 'a\.t\[1\]' holds a lone",
        ),
        ("list.jsonl", b'{"a": 1}\n[1]\n', r"list\.jsonl, line 2: a list, not an object"),
        ("number.json", b"[1]", r"element 0 is a int"),
    ],
)
def test_malformed_files_name_the_place(tmp_path, name, content, expected):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ValueError, match=expected):
        read_records(path)
    if name.endswith(".jsonl"):
        with pytest.raises(ValueError, match=expected):
            list(iter_jsonl(path))


def test_valid_text_and_big_numbers_are_read_exactly(tmp_path):
    path = tmp_path / "ok.jsonl"
    # A surrogate pair is one character; integers beyond 64 bits stay integers.
    path.write_bytes(b'{"q": "\\ud83d\\ude00", "qid": -9223372036854775809}\n\n{"x": 1.5}\n')
    assert read_records(path) == [{"q": "\U0001f600", "qid": -9223372036854775809}, {"x": 1.5}]
    array = tmp_path / "ok.json"
    array.write_bytes(b'\xef\xbb\xbf [{"qid": 18446744073709551616}]')
    assert read_records(array) == [{"qid": 18446744073709551616}]


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_atomic_writes_follow_the_umask(tmp_path, umask, mode):
    import os

    from generation.io.records import atomic_write_json, atomic_write_jsonl, atomic_write_text

    previous = os.umask(umask)
    try:
        atomic_write_text(tmp_path / "a.txt", "x")
        atomic_write_json(tmp_path / "b.json", {"a": 1})
        atomic_write_jsonl(tmp_path / "c.jsonl", [{"a": 1}])
    finally:
        os.umask(previous)
    for name in ("a.txt", "b.json", "c.jsonl"):
        assert (tmp_path / name).stat().st_mode & 0o777 == mode, name
