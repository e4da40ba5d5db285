"""JSON strings read and written without a JSON parser, for the hook path (`emit`).

Importing `json` costs a hook more than its own work: `emit` quotes the few strings it adds
with `json_string` and finds the payload's top-level `cwd` with `top_level_string`, walking the
bytes from one quote, bracket or comma to the next.
"""


def json_string(text: str) -> str:
    """Quote `text` as a JSON string (the subset of escaping JSON requires)."""
    out = []
    for ch in text:
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif ch < " ":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _string_end(raw: bytes, start: int) -> int:
    """The index of the quote closing the JSON string that opens at `start`, or -1."""
    end = start
    while True:
        end = raw.find(b'"', end + 1)
        if end < 0:
            return -1
        backslashes = 0
        while raw[end - 1 - backslashes] == 0x5C:
            backslashes += 1
        if backslashes % 2 == 0:
            return end


def _decode_string(body: bytes) -> str | None:
    try:
        if b"\\" not in body:
            return body.decode("utf-8")
        import json  # rare: an escaped string is worth the import

        value = json.loads(b'"' + body + b'"')
        return value if isinstance(value, str) else None
    except ValueError:
        return None


def top_level_string(raw: bytes, key: str) -> str | None:
    """The string value of `key` in the payload's own top level, found without a JSON parser.

    It walks the structure from one quote, bracket or comma to the next with `bytes.find`, so a
    key of the same name nested in a tool's input or output is never taken for the top-level
    one; it stops at the first top-level match (hosts put `cwd` near the start).
    """
    body = raw.lstrip()
    if not body.startswith(b"{"):
        return None
    depth, expect_key = 1, True
    upcoming = {c: body.find(c, 1) for c in b'"{}[],'}
    while depth > 0:
        i = min((p for p in upcoming.values() if p >= 0), default=-1)
        if i < 0:
            return None
        char = body[i]
        if char == 0x22:  # a string: a key where one is expected at the top level, else a value
            end = _string_end(body, i)
            if end < 0:
                return None
            if depth == 1 and expect_key and _decode_string(body[i + 1:end]) == key:
                return _value_string(body, end + 1)
            expect_key = False
            i = end
        elif char in b"{[":
            depth += 1
        elif char in b"}]":
            depth -= 1
        elif depth == 1:  # a comma at the top level: a key comes next
            expect_key = True
        for c, p in upcoming.items():
            if 0 <= p <= i:
                upcoming[c] = body.find(c, i + 1)
    return None


def _value_string(body: bytes, after_key: int) -> str | None:
    rest = body[after_key:].lstrip()
    if not rest.startswith(b":"):
        return None
    rest = rest[1:].lstrip()
    if not rest.startswith(b'"'):
        return None
    end = _string_end(rest, 0)
    return None if end < 0 else _decode_string(rest[1:end])
