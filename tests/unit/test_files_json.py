"""base/files.py's JSON reader says what the daemon's (orjson) makes of a state file: the
same values, and no JSON where orjson finds none, on the standard library alone."""

from __future__ import annotations

import json

import orjson
from hypothesis import given
from hypothesis import strategies as st

from sidecar.base import files

SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
           | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(st.characters(blacklist_categories=())))  # lone surrogates too
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=5), inner, max_size=4), max_leaves=12)


def _orjson(data: bytes) -> object:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return ValueError


def _ours(data: bytes) -> object:
    try:
        return files.parse(data)
    except ValueError:
        return ValueError


@given(VALUES, st.booleans())
def test_any_json_reads_as_orjson_reads_it(value, ascii_only):
    data = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    assert _ours(data) == _orjson(data)


@given(st.binary(max_size=40) | st.text(alphabet='{}[]",:0123456789.eE-+ \\ud8fnulrtasx',
                                        max_size=40).map(str.encode))
def test_what_is_not_json_to_orjson_is_not_json_here(data):
    assert _ours(data) == _orjson(data)


def test_the_edges_orjson_reads_its_own_way():
    assert files.parse(b"18446744073709551616") == 2.0**64  # past 64 bits: a float
    for refused in (b"1e400", b'"\\ud800"', b'{"a\\uDC00": 1}', b"NaN", b"[1] 2"):
        assert _ours(refused) is ValueError and _orjson(refused) is ValueError
    assert files.parse(b'"\\ud83d\\ude00"') == "\U0001f600"  # a pair is one character
