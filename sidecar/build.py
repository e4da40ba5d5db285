"""Which build of sidecar this is: its version and the commit it was built from, so `status`
tells apart instances of two builds that carry the same version (a mixed-version cutover).

An installed wheel knows its commit from `BUILD_COMMIT`, which setup.py's build step writes
beside this module; a source checkout (an editable install) asks git for its HEAD. Neither:
the version alone (a wheel built from an sdist, without git), and `commit()` says None. Not
imported by `sidecar emit`, the hooks' hot path.
"""

from __future__ import annotations

import functools
import re
import subprocess
from pathlib import Path

from sidecar import __version__

PACKAGE = Path(__file__).resolve().parent
COMMIT = re.compile(r"[0-9a-f]{7,64}")
SHOWN = 12  # hex digits of the commit shown


@functools.cache
def commit() -> str | None:
    """The full commit this code was built from; None if it cannot be told."""
    try:
        recorded = (PACKAGE / "BUILD_COMMIT").read_text().strip()
    except OSError:
        recorded = ""
    if COMMIT.fullmatch(recorded):
        return recorded
    return checkout_commit(PACKAGE.parent)


def checkout_commit(root: Path) -> str | None:
    """HEAD of the sidecar source checkout at `root` (its own `.git` and pyproject.toml, never
    a repository that merely holds a virtual environment); None otherwise."""
    try:
        if not (root / ".git").exists() or 'name = "agent-sidecar"' not in \
                (root / "pyproject.toml").read_text():
            return None
        found = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"],
                               capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    head = found.stdout.strip()
    return head if found.returncode == 0 and COMMIT.fullmatch(head) else None


def build_id() -> str:
    """`0.1.0+<commit>`, or the version alone when the commit cannot be told."""
    found = commit()
    return f"{__version__}+{found[:SHOWN]}" if found else __version__


def shown() -> str:
    """The build for people: says when the commit is not known."""
    return build_id() if commit() else f"{__version__} (commit unknown)"
