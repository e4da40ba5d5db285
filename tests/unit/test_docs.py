"""The README stays a short front page that points at the right places: at most 10 KB, every
relative link leads to a file (and heading) that exists, and its command table names exactly
the commands the CLI has. The docs/ site's own links are checked by `mkdocs build --strict`
(`make check`)."""

from __future__ import annotations

import itertools
import re
import unicodedata
from pathlib import Path

import typer.main

from helpers import REPO
from sidecar.cli.main import app

README = REPO / "README.md"
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """A heading's anchor, as python-markdown's toc extension (mkdocs) makes it."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(markdown: Path) -> set[str]:
    text = markdown.read_text(encoding="utf-8")
    included = re.findall(r'^--8<-- "([^"]+)"$', text, flags=re.M)
    for name in included:  # a page that includes another file (CONTRIBUTING.md) has its headings
        text += "\n" + (REPO / name).read_text(encoding="utf-8")
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return {slug(h) for h in re.findall(r"^#{1,6}\s+(.+?)\s*#*$", text, flags=re.M)}


def test_the_readme_is_at_most_10_kb():
    assert len(README.read_bytes()) <= 10 * 1024


def test_every_relative_link_in_the_readme_leads_to_an_existing_file_and_heading():
    text = README.read_text(encoding="utf-8")
    targets = [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]
    assert targets, "the README links into the docs"
    for target in targets:
        path, _, anchor = target.partition("#")
        file = (REPO / path) if path else README
        assert file.exists(), f"README links to {target}: no such file"
        if anchor:
            assert anchor in anchors(file), f"README links to {target}: no such heading"


def readme_commands() -> set[tuple[str, ...]]:
    """The command paths the README's command table names, e.g. ("hooks", "add")."""
    text = README.read_text(encoding="utf-8")
    table = text.split("## Commands", 1)[1].split("\n## ", 1)[0]
    paths: set[tuple[str, ...]] = set()
    for row in re.findall(r"^\| (.+?) \| .+ \|$", table, flags=re.M):
        previous: tuple[str, ...] = ()
        for snippet in re.findall(r"`([^`]+)`", row):
            words = snippet.split()
            if words[0] == "sidecar":
                path = tuple(itertools.takewhile(lambda word: re.fullmatch(r"[a-z][a-z-]*", word), words[1:]))
            else:  # `codex` after `sidecar integrate claude-code`: a sibling of the one before
                path = previous[:-1] + (words[0],)
            if path:
                paths.update(path[:n] for n in range(1, len(path) + 1))  # `hooks` of `hooks add`
                previous = path
    return paths


def cli_commands() -> set[tuple[str, ...]]:
    root = typer.main.get_command(app)
    paths: set[tuple[str, ...]] = set()

    def walk(group, prefix: tuple[str, ...]) -> None:  # a click group: it has .commands
        for name, command in group.commands.items():
            paths.add(prefix + (name,))
            if hasattr(command, "commands"):
                walk(command, prefix + (name,))

    walk(root, ())
    return paths


def test_the_readme_table_shows_exactly_the_commands_of_the_cli():
    shown, real = readme_commands(), cli_commands()
    assert ("hooks", "add") in shown and ("integrate", "opencode") in shown
    assert shown - real == set(), f"the README shows commands the CLI lacks: {shown - real}"
    assert real - shown == set(), f"the README's command table lacks: {sorted(real - shown)}"
