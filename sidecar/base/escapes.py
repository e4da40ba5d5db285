"""What hosts, models and files said, made safe to show: every character a terminal would act
on or not show becomes a visible escape (`\\x1b`, `\\x9b`, `\\u202e`, `\\n`), so an end
reason, a tool's name, a hook's outcome or a log line can never write the clipboard (OSC 52),
clear the screen, retitle the window or reorder what is shown around it.

Escaped are what `str.isprintable` calls unprintable: the C0 controls (ESC, BEL, CR, LF...),
DEL and the C1 controls (U+0080-U+009F: U+009B is a CSI of its own), the bidirectional
overrides and isolates and every other format character (U+202E, U+2066, zero-width ones),
line and paragraph separators, spaces other than ' ', surrogates (bytes that were not UTF-8)
and private or unassigned code points. Nothing is dropped: the text says what was there.

Every command escapes what it prints with this, before painting it (base/words.py's colours
are sidecar's own and stay codes). `status` and `status --line` import it on their fast paths:
it imports nothing.
"""

TYPE_CHECKING = False  # typing is not imported: a status bar runs `status --line` each refresh
if TYPE_CHECKING:
    from typing import TypeVar

    T = TypeVar("T")

_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def escaped(text: str, keep: str = "") -> str:
    """`text` with each unprintable character as its escape, but those in `keep` (where a
    surface prints a value's own line breaks or tabs as such: a notice's body, a log line)."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch in keep else _escape(ch) for ch in text)


def _escape(ch: str) -> str:
    """The character as Python writes it in a string literal (`unicode_escape`'s form)."""
    code = ord(ch)
    return _NAMED.get(ch) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
                              if code < 0x10000 else f"\\U{code:08x}")


# What JSON may carry raw but a terminal acts on or reorders: DEL, the C1 controls (U+009B is
# a CSI of its own), the bidirectional marks, overrides and isolates, the line and paragraph
# separators, zero-width characters. (JSON itself escapes the C0 controls.)
_JSON_UNSAFE = {code: f"\\u{code:04x}" for code in (
    0x7F, *range(0x80, 0xA0), *range(0x200B, 0x2010), *range(0x2028, 0x202F),
    *range(0x2060, 0x206A), 0xFEFF)}


def json_escaped(text: str) -> str:
    """JSON text with each character a terminal would act on written as its `\\u` escape:
    the same JSON, safe to print (`--json` on a terminal)."""
    return text if text.isascii() and "\x7f" not in text else text.translate(_JSON_UNSAFE)


def json_bytes_escaped(data: bytes) -> bytes:
    """`json_escaped` of UTF-8 JSON bytes."""
    return data if data.isascii() and b"\x7f" not in data else \
        json_escaped(data.decode("utf-8")).encode("utf-8")


def escaped_values(value: "T") -> "T":
    """A report (dicts and lists of values, as `--json` gives it) with every text in it, keys
    included, escaped: what a command prints of it is then safe whatever field it shows."""
    if isinstance(value, str):
        return escaped(value)  # type: ignore[return-value]  # a str is its own T
    if isinstance(value, dict):
        return {escaped_values(k): escaped_values(v)  # type: ignore[return-value]
                for k, v in value.items()}
    if isinstance(value, list):
        return [escaped_values(item) for item in value]  # type: ignore[return-value]
    return value
