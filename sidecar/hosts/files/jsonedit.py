"""Format-preserving edits of another program's JSON file, as tomlkit does for TOML.

`rewrite(text, new)` returns `text` changed only where its value differs from `new`: every
member and element whose value stays the same keeps its bytes (indentation, one-line
objects, tabs, CRLF, a byte-order mark, `//` and `/* */` comments where the host allows
them); a removed member takes its separator with it; an added one is written in the file's
own style (its indent unit, newline and `": "`), after the container's last one. So adding
sidecar's hooks and taking them out again gives the user's file back byte for byte.

Written here rather than taken from a library: the ones on PyPI that keep layout either
parse JSON5 only into a model that is awkward to edit, or are young bindings to a native
parser; this is one small module, used only by `sidecar integrate` and `uninstall` (never on
the hook path, `sidecar emit`).
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from typing import Any

import orjson

from sidecar.base.errors import SidecarError

BOM = "\ufeff"


class JsonEditError(SidecarError, ValueError):
    """The text is not JSON sidecar can edit (the message says why)."""


@dataclass
class Node:
    """One value of the text: its span, and its members (objects) or elements (arrays)."""

    start: int
    end: int
    kind: str  # "object", "array" or "scalar"
    keys: list[str] = field(default_factory=list)  # objects: the member keys, in order
    key_starts: list[int] = field(default_factory=list)  # where each member (its key) begins
    key_ends: list[int] = field(default_factory=list)
    children: list[Node] = field(default_factory=list)

    def member_start(self, i: int) -> int:
        return self.key_starts[i] if self.kind == "object" else self.children[i].start


def blank_comments(text: str) -> str:
    """`text` with every comment replaced by spaces (newlines kept), so offsets stay."""
    out, i, n = list(text), 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif text.startswith("//", i):
            while i < n and text[i] not in "\r\n":
                out[i], i = " ", i + 1
            continue
        elif text.startswith("/*", i):
            close = text.find("*/", i + 2)
            if close < 0:
                raise JsonEditError("a /* comment is not closed")
            for j in range(i, close + 2):
                out[j] = out[j] if text[j] in "\r\n" else " "
            i = close + 2
            continue
        i += 1
    return "".join(out)


class _Parser:
    """Spans of an already validated JSON text (comments blanked)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def ws(self) -> None:
        while self.i < len(self.text) and self.text[self.i] in " \t\r\n":
            self.i += 1

    def value(self) -> Node:
        self.ws()
        start, c = self.i, self.text[self.i]
        if c in "{[":
            node = Node(start, start, "object" if c == "{" else "array")
            self.i += 1
            self.ws()
            while self.text[self.i] not in "}]":
                if node.kind == "object":
                    node.key_starts.append(self.i)
                    node.key_ends.append(self.string_end())
                    node.keys.append(json.loads(self.text[node.key_starts[-1]:self.i]))
                    self.ws()
                    self.i += 1  # the colon
                node.children.append(self.value())
                self.ws()
                if self.text[self.i] == ",":
                    self.i += 1
                    self.ws()
            self.i += 1
            node.end = self.i
            return node
        if c == '"':
            return Node(start, self.string_end(), "scalar")
        while self.i < len(self.text) and self.text[self.i] not in " \t\r\n,]}":
            self.i += 1
        return Node(start, self.i, "scalar")

    def string_end(self) -> int:
        self.i += 1
        while self.text[self.i] != '"':
            self.i += 2 if self.text[self.i] == "\\" else 1
        self.i += 1
        return self.i


def loads(text: str, comments: bool = False) -> Any:
    """The value of `text` (comments allowed if `comments`); JsonEditError if it is not JSON."""
    try:
        return orjson.loads(blank_comments(text) if comments else text.removeprefix(BOM))
    except orjson.JSONDecodeError as exc:
        raise JsonEditError(str(exc)) from None


def _same(a: Any, b: Any) -> bool:
    option = orjson.OPT_SORT_KEYS
    return orjson.dumps(a, option=option) == orjson.dumps(b, option=option)


@dataclass
class _Style:
    newline: str
    unit: str  # one level of indentation
    colon: str  # between a key and its value


def _style(text: str, root: Node) -> _Style:
    newline = "\r\n" if "\r\n" in text else "\n"
    unit = "  "
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and stripped != line:
            unit = line[: len(line) - len(stripped)]
            break
    colon = ": "
    first = _first_object(root)
    if first is not None:
        between = text[first.key_ends[0]:first.children[0].start]
        if between.strip() == ":" and "\n" not in between:
            colon = between
    return _Style(newline, unit, colon)


def _first_object(node: Node) -> Node | None:
    if node.kind == "object" and node.children:
        return node
    for child in node.children:
        found = _first_object(child)
        if found is not None:
            return found
    return None


class _Editor:
    """Collects the edits that turn the old value into the new one; `text` is the file's
    text with comments blanked, where positions and indents are read."""

    def __init__(self, text: str, root: Node) -> None:
        self.text = text
        self.root = root
        self.style = _style(text, root)
        self.edits: list[tuple[int, int, str]] = []

    def line_indent(self, pos: int) -> str:
        begin = self.text.rfind("\n", 0, pos) + 1
        line = self.text[begin:pos]
        return line[: len(line) - len(line.lstrip(" \t"))]

    def render(self, value: Any, indent: str | None) -> str:
        """`value` as the file would write it: on lines below `indent`, or on one line."""
        if indent is None:
            comma = ", " if self.style.colon.endswith(" ") else ","
            return json.dumps(value, ensure_ascii=False, separators=(comma, self.style.colon))
        out = json.dumps(value, ensure_ascii=False, indent=self.style.unit,
                         separators=(",", self.style.colon))
        return out.replace("\n", self.style.newline + indent)

    def member(self, key: str | None, value: Any, indent: str | None) -> str:
        """An array's element (`key` None) or an object's member, rendered as `render` does."""
        rendered = self.render(value, indent)
        return rendered if key is None else json.dumps(key, ensure_ascii=False) + self.style.colon + rendered

    def change(self, node: Node, old: Any, new: Any) -> None:
        if _same(old, new):
            return
        if node.kind == "object" and isinstance(old, dict) and isinstance(new, dict):
            self.change_object(node, old, new)
        elif node.kind == "array" and isinstance(old, list) and isinstance(new, list):
            self.change_array(node, old, new)
        else:
            self.edits.append((node.start, node.end, self.render(new, self.line_indent(node.start))))

    def change_object(self, node: Node, old: dict[str, Any], new: dict[str, Any]) -> None:
        if len(set(node.keys)) != len(node.keys):
            raise JsonEditError("an object sidecar must change has a key twice; fix it first")
        gone = [i for i, key in enumerate(node.keys) if key not in new]
        for i, key in enumerate(node.keys):
            if key in new:
                self.change(node.children[i], old[key], new[key])
        added = [(key, value) for key, value in new.items() if key not in old]
        self.splice(node, gone, [(len(node.children), key, value) for key, value in added])

    def change_array(self, node: Node, old: list[Any], new: list[Any]) -> None:
        canon = [[orjson.dumps(v, option=orjson.OPT_SORT_KEYS) for v in side] for side in (old, new)]
        matcher = difflib.SequenceMatcher(None, canon[0], canon[1], autojunk=False)
        gone: list[int] = []
        added: list[tuple[int, str | None, Any]] = []
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            paired = min(i2 - i1, j2 - j1) if op == "replace" else 0
            for k in range(paired):
                self.change(node.children[i1 + k], old[i1 + k], new[j1 + k])
            if op in ("delete", "replace"):
                gone += range(i1 + paired, i2)
            if op in ("insert", "replace"):
                added += [(i2, None, new[j]) for j in range(j1 + paired, j2)]
        self.splice(node, gone, added)

    def splice(self, node: Node, gone: list[int], added: list[tuple[int, str | None, Any]]) -> None:
        """Remove the members at `gone`; add each (before, key, value) before member `before`."""
        if not gone and not added:
            return
        count = len(node.children)
        kept = [i for i in range(count) if i not in gone]
        if not kept:
            self.fill_empty(node, count, added)
            return
        first_kept = kept[0]
        for i in gone:
            if i < first_kept:  # before every kept one: its separator is the one after it
                self.edits.append((node.member_start(i), node.member_start(i + 1), ""))
            else:
                self.edits.append((node.children[i - 1].end, node.children[i].end, ""))
        sep, indent = self.separator(node)
        by_place: dict[int, list[str]] = {}
        for before, key, value in added:
            by_place.setdefault(before, []).append(self.member(key, value, indent))
        for before, members in by_place.items():
            if before >= count:
                self.edits.append((node.children[-1].end, node.children[-1].end,
                                   "".join(sep + m for m in members)))
            else:
                at = node.member_start(before)
                self.edits.append((at, at, "".join(m + sep for m in members)))

    def separator(self, node: Node) -> tuple[str, str | None]:
        """(what goes between two members, the indent of a member or None on one line)."""
        after_open = self.text[node.start + 1:node.member_start(0)]
        if "\n" not in after_open:
            return ", " if self.style.colon.endswith(" ") else ",", None
        indent = self.line_indent(node.member_start(0))
        return "," + self.style.newline + indent, indent

    def fill_empty(self, node: Node, count: int, added: list[tuple[int, str | None, Any]]) -> None:
        """A container left with no old member: its inside is only what is added."""
        inside = self.text[node.start + 1:node.end - 1]
        if not added:
            self.edits.append((node.start + 1, node.end - 1, ""))
            return
        outer = self.line_indent(node.start)
        indent = outer + self.style.unit
        newline = self.style.newline
        members = [self.member(k, v, indent) for _, k, v in added]
        one_line = count == 0 and "\n" not in inside and node is not self.root and not any(
            isinstance(v, (dict, list)) and v for _, _, v in added)
        if one_line:
            body = ", ".join(self.member(k, v, None) for _, k, v in added)
        else:
            body = newline + indent + ("," + newline + indent).join(members) + newline + outer
        self.edits.append((node.start + 1, node.end - 1, body))

    def result(self, text: str) -> str:
        """The edits applied to `text` (the real one, comments and all)."""
        for start, end, new in sorted(self.edits, key=lambda e: (e[0], e[1]), reverse=True):
            text = text[:start] + new + text[end:]
        return text


def rewrite(text: str, new: Any, comments: bool = False) -> str:
    """`text` changed so that its value is `new`, keeping the layout of every unchanged part."""
    bom = BOM if text.startswith(BOM) else ""
    body = text[len(bom):]
    old = loads(body, comments)
    if _same(old, new):
        return text
    scanned = blank_comments(body) if comments else body
    try:
        root = _Parser(scanned).value()
        editor = _Editor(scanned, root)
        editor.change(root, old, new)
    except RecursionError:
        raise JsonEditError("nested too deeply to edit safely") from None
    return bom + editor.result(body)


def dumps_new(value: Any) -> str:
    """A file sidecar creates: two-space indentation and a final newline."""
    return json.dumps(value, ensure_ascii=False, indent=2) + "\n"
