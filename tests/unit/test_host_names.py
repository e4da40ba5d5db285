"""The rule that keeps hosts pluggable: outside `sidecar/hosts/`, no code names a host.

Every module of the package outside `sidecar/hosts/` is tokenized; a host's name in an
identifier or a string literal fails the test with its file and line. Comments and docstrings
may name hosts: they explain, they do not decide. Adding a host is then one module under
`sidecar/hosts/` and one registry entry, never an edit elsewhere.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize

from helpers import REPO

PACKAGE = REPO / "sidecar"
# String text: f-strings come as FSTRING_MIDDLE tokens from Python 3.12 on.
TEXT = {tokenize.STRING} | ({tokenize.FSTRING_MIDDLE} if hasattr(tokenize, "FSTRING_MIDDLE") else set())
HOST_NAME = re.compile(r"claude|codex|gemini|opencode|hermes", re.IGNORECASE)


def docstring_lines(source: str) -> set[int]:
    """The first line of every docstring (module, class, function)."""
    return {node.body[0].lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and ast.get_docstring(node, clean=False) is not None}


def host_names_in_code(source: str) -> list[tuple[int, str]]:
    """(line, token) for each identifier or non-docstring string that names a host."""
    docstrings = docstring_lines(source)
    return [(token.start[0], token.string)
            for token in tokenize.generate_tokens(io.StringIO(source).readline)
            if (token.type == tokenize.NAME or (token.type in TEXT and token.start[0] not in docstrings))
            and HOST_NAME.search(token.string)]


def test_no_code_outside_the_hosts_package_names_a_host():
    offenders = [f"{path.relative_to(PACKAGE.parent)}:{line}: {text[:60]}"
                 for path in sorted(PACKAGE.rglob("*.py")) if (PACKAGE / "hosts") not in path.parents
                 for line, text in host_names_in_code(path.read_text())]
    assert not offenders, "a host is named outside sidecar/hosts/:\n" + "\n".join(offenders)


def test_the_check_sees_names_in_code_and_strings_but_not_in_comments_or_docstrings():
    source = '''"""A docstring may say Claude Code."""
# a comment may say codex
def f():
    """So may a function's docstring: gemini."""
    x = "opencode"  # a string literal may not
    hermes_mode = 1  # nor an identifier
    return f"{x} for Claude"  # nor an f-string
'''
    assert [line for line, _ in host_names_in_code(source)] == [5, 6, 7]
