"""Which build of sidecar this is: its version and the commit it was built from, so `status`
tells apart instances of two builds that carry the same version (a mixed-version cutover).

An installed wheel knows its commit from `BUILD_COMMIT`, which setup.py's build step writes
beside this module; a source checkout (an editable install) asks git for its HEAD. Neither:
the version alone (a wheel built from an sdist, without git), and `commit()` says None.

`status`'s report names the version on its fast path, so what finds the commit (pathlib, re,
subprocess) is imported by the functions that need it, not by the version's readers.
"""

from __future__ import annotations

import functools

TYPE_CHECKING = False  # typing costs the fast commands 2 ms (see words.py)
if TYPE_CHECKING:
    from pathlib import Path

__version__ = "0.1.0"
COMMIT = r"[0-9a-f]{7,64}"
SHOWN = 12  # hex digits of the commit shown


@functools.cache
def commit() -> str | None:
    """The full commit this code was built from; None if it cannot be told."""
    import re
    from pathlib import Path

    package = Path(__file__).resolve().parent.parent  # BUILD_COMMIT sits in the package's root
    try:
        recorded = (package / "BUILD_COMMIT").read_text().strip()
    except OSError:
        recorded = ""
    return recorded if re.fullmatch(COMMIT, recorded) else checkout_commit(package.parent)


def checkout_commit(root: Path) -> str | None:
    """HEAD of the sidecar source checkout at `root` (its own `.git` and pyproject.toml, never
    a repository that merely holds a virtual environment); None otherwise."""
    import re
    import subprocess

    try:
        if not (root / ".git").exists() or 'name = "agent-sidecar"' not in \
                (root / "pyproject.toml").read_text():
            return None
        found = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"],
                               capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    head = found.stdout.strip()
    return head if found.returncode == 0 and re.fullmatch(COMMIT, head) else None


def build_id() -> str:
    """`0.1.0+<commit>`, or the version alone when the commit cannot be told."""
    found = commit()
    return f"{__version__}+{found[:SHOWN]}" if found else __version__


def shown() -> str:
    """The build for people: says when the commit is not known."""
    return build_id() if commit() else f"{__version__} (commit unknown)"
