"""Every command's --help, walked over the whole app: values named, sentences whole, and an
example each. A command or option added later is checked the same way."""

from __future__ import annotations

import re

import pytest
import typer
from typer.testing import CliRunner

from sidecar.cli.main import app
from sidecar.cli.run import main as run_main
from sidecar.emit import main as emit_main

TYPE_METAVAR = re.compile(r"<(bool|str|int|float|path|list|tuple|choice|datetime|uuid)\b",
                          re.IGNORECASE)
WIDE = "400"  # no paragraph wraps: a line that ends mid-sentence was broken by hand


def commands(group, path: tuple[str, ...] = ()):
    for name, command in sorted(group.commands.items()):
        if command.hidden:
            continue
        yield (*path, name), command
        if getattr(command, "commands", None):  # a group (typer's own click, or click's)
            yield from commands(command, (*path, name))


ROOT = typer.main.get_command(app)
ALL = [((), ROOT), *commands(ROOT)]  # `sidecar --help` too


@pytest.mark.parametrize("path,command", ALL, ids=[" ".join(p) or "sidecar" for p, _ in ALL])
def test_help_names_values_has_an_example_and_breaks_no_sentence(path, command):
    for param in command.params:  # every value option names its value
        if param.param_type_name == "option" and not param.is_flag and not param.count:
            assert param.metavar, f"sidecar {' '.join(path)} {param.opts[0]}: no metavar="
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": WIDE, "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    text = result.output
    assert not TYPE_METAVAR.search(text), f"sidecar {' '.join(path)}: a type as a metavar"
    assert re.search(r"Example: sidecar \S", text), f"sidecar {' '.join(path)}: no example"
    prose = text.split("╭", 1)[0].splitlines()[2:]  # below the usage line, above the panels
    for this, after in zip(prose, prose[1:], strict=False):
        assert not (this.strip() and after.strip()), \
            f"sidecar {' '.join(path)}: a paragraph broken across lines: {this.strip()!r}"
    for row in text.splitlines():  # a panel's row whose first cell (an option, a command) is
        cells = row.strip("│ ")        # empty continues the row before it: broken by hand
        if re.match(r"│ {2,}\S", row) and not re.match(r"│ +[A-Z][A-Z_]* {2,}", row):  # an argument
            pytest.fail(f"sidecar {' '.join(path)}: a help line broken: {cells!r}")


def test_the_daemons_own_entry_shows_plain_help_too(capsys, monkeypatch):
    # `sidecar run` is dispatched before the command line (bin/sidecar), through its own app.
    monkeypatch.setenv("COLUMNS", WIDE)
    monkeypatch.setenv("NO_COLOR", "1")
    assert run_main(["--help"]) == 0
    text = capsys.readouterr().out
    assert "--root DIR" in text.replace("  ", " ") or "DIR" in text
    assert not TYPE_METAVAR.search(text) and re.search(r"Example: sidecar run", text)


def test_the_launchers_own_emit_help_has_an_example_and_fits_the_terminal(capsys):
    """`sidecar emit --help` is answered by emit itself (the hook path never loads typer)."""
    assert emit_main(["--help"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^Example: sidecar emit \S", out, re.M), out
    assert all(len(line) <= 100 for line in out.splitlines()), out
