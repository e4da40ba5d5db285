"""The format-preserving JSON edit: any layout, any change, and the way back byte for byte."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sidecar.hosts.claude_code import host as claude_code
from sidecar.hosts.files import jsonedit
from sidecar.hosts.files import settings as settings_mod

scalars = st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=8)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=12)
user_settings = st.dictionaries(st.text(max_size=6).filter(lambda k: k != "hooks"), values,
                                max_size=5)
layouts = st.sampled_from([None, 2, 4, "\t"])
newlines = st.sampled_from(["\n", "\r\n"])


def dumped(value, indent, newline: str) -> str:
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    return text.replace("\n", newline) + (newline if indent is not None else "")


@settings(max_examples=150, deadline=None)
@given(user_settings, layouts, newlines)
def test_sidecars_hooks_go_in_and_out_leaving_the_text_as_it_was(value, indent, newline):
    text = dumped(value, indent, newline)
    assert jsonedit.rewrite(text, copy.deepcopy(value)) == text  # no change, no edit
    merged = settings_mod.merge_hooks(copy.deepcopy(value), claude_code.EVENTS,
                                   "sidecar emit --source claude-code", "*", None)
    written = jsonedit.rewrite(text, merged)
    assert jsonedit.loads(written) == merged
    if "\r\n" in text:
        assert "\n" not in written.replace("\r\n", "")
    back = settings_mod.merge_hooks(jsonedit.loads(written), claude_code.EVENTS, None, "*",
                                 None)
    assert jsonedit.rewrite(written, back) == text


@settings(max_examples=150, deadline=None)
@given(values, values, layouts, newlines)
def test_any_change_gives_exactly_the_new_value(old, new, indent, newline):
    text = dumped(old, indent, newline)
    assert jsonedit.loads(jsonedit.rewrite(text, new)) == new


def test_comments_stay_where_the_host_allows_them():
    text = '{\n  // the theme\n  "ui": {"theme": "dark"} /* kept */\n}\n'
    out = jsonedit.rewrite(text, {"ui": {"theme": "dark"}, "x": [1]}, comments=True)
    assert "// the theme" in out and "/* kept */" in out
    assert jsonedit.loads(out, comments=True) == {"ui": {"theme": "dark"}, "x": [1]}
    assert jsonedit.rewrite(out, {"ui": {"theme": "dark"}}, comments=True) == text


@pytest.mark.parametrize("text, comments, message", [
    ('{"a": 1, /* open', True, "comment is not closed"),
    ('{"a": 1 // cut short\n', True, r".+"),
    ('{"a": 1} // no', False, "unexpected"),
])
def test_text_that_cannot_be_edited_is_refused(text, comments, message):
    with pytest.raises(jsonedit.JsonEditError, match=message):
        jsonedit.rewrite(text, {"a": 2}, comments=comments)
