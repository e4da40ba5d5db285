"""The `sidecar` command started without Python's `site`, for the hooks' sake.

pip installs the launcher (bin/sidecar) with the first line `#!<python>`, dropping any flag
written after `#!python` (pip issue 10661), so every hook would pay `site`: its search of the
installed packages and their .pth files, about a third of the interpreter's start. Where the
user may write the launcher, `rewrite` makes its first line `#!<the same python> -S` and writes
into it the folder sidecar was installed in (FOLDERS), the one folder `emit` and
`status --line` import from beyond the standard library; the launcher runs `site` itself for
every other command. `sidecar integrate` calls it (the hooks it writes run the launcher), and
`make install` runs it (`python -m sidecar.install.launcher PATH`), as does `doctor`'s fix.

The rewrite is atomic, keeps the file's mode, and touches only a regular file of this user's
that holds sidecar's launcher. A pip upgrade writes the slow launcher back; `doctor` says so.
"""

from __future__ import annotations

import os
import stat
import sys
from contextlib import suppress
from pathlib import Path

from sidecar import jsonfile

NO_SITE = b" -S"
FOLDERS_LINE = b"\nFOLDERS: tuple[str, ...] = "  # the launcher's own line (bin/sidecar)
SHEBANG_MAX = 127  # bytes of a #! line every kernel reads whole (Linux before 5.1: 127)
MAX_LAUNCHER = 64 * 1024


def package_folders() -> tuple[str, ...]:
    """The folder sidecar is imported from: site-packages, or a checkout (an editable install)."""
    import sidecar

    return (os.path.dirname(os.path.dirname(os.path.abspath(sidecar.__file__))),)


def _read(path: Path) -> tuple[bytes, os.stat_result]:
    """The launcher's bytes: a regular file of this user's (opened without following a link:
    callers resolve the path first, so a link swapped in meanwhile is refused)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{path} is not a regular file")
        if st.st_uid != os.geteuid():
            raise ValueError(f"{path} belongs to another user")
        data = os.read(fd, MAX_LAUNCHER + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_LAUNCHER or FOLDERS_LINE not in data:
        raise ValueError(f"{path} is not sidecar's launcher")
    return data, st


def faster(data: bytes, folders: tuple[str, ...]) -> bytes:
    """The launcher's text, started with -S and knowing `folders`; ValueError where its first
    line cannot carry the flag."""
    first, _, rest = data.partition(b"\n")
    interpreter = first[2:].strip()
    interpreter = interpreter.removesuffix(NO_SITE)
    if not first.startswith(b"#!/") or b" " in interpreter or b"\t" in interpreter:
        raise ValueError("its first line names no interpreter that can take a flag")
    line = b"#!" + interpreter + NO_SITE
    if len(line) > SHEBANG_MAX:
        raise ValueError(f"its interpreter's path is too long for a flag ({len(line)} bytes "
                         f"over the {SHEBANG_MAX} every system reads)")
    before, _, after = rest.partition(FOLDERS_LINE)
    _, _, tail = after.partition(b"\n")  # the line is the launcher's to write, whole
    value = repr(tuple(folders)).encode("utf-8", "surrogateescape")
    return line + b"\n" + before + FOLDERS_LINE + value + b"\n" + tail


def rewrite(path: Path, folders: tuple[str, ...] | None = None) -> bool:
    """Make the launcher at `path` start without `site`; whether it was changed. ValueError
    (or OSError) says why it cannot be."""
    path = Path(os.path.realpath(path))  # the user's own link to it (pipx's) is theirs
    data, st = _read(path)
    new = faster(data, package_folders() if folders is None else folders)
    if new == data:
        return False
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        jsonfile.replace_in(folder, path.name, new, like=st)
    finally:
        os.close(folder)
    return True


def why_slow(path: Path) -> str | None:
    """Why the launcher at `path` still starts with `site` (None: it does not)."""
    try:
        data, _ = _read(Path(os.path.realpath(path)))
        return None if faster(data, package_folders()) == data else "as it was installed"
    except (OSError, ValueError) as exc:
        return str(exc)


def prepare(path: Path) -> None:
    """`rewrite`, where it can be done; a launcher that cannot be rewritten still works as
    it is (a bit slower), so nothing is said here: `doctor` says why."""
    with suppress(OSError, ValueError):
        rewrite(path)


if __name__ == "__main__":  # make install: python -m sidecar.install.launcher .venv/bin/sidecar
    try:
        changed = rewrite(Path(sys.argv[1]))
    except (OSError, ValueError) as exc:
        sys.exit(f"sidecar: {sys.argv[1]} still starts Python with site: {exc}")
    print(f"{sys.argv[1]} starts Python without site" + ("" if changed else " (already)"))
