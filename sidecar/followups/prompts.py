"""A hook's prompt file: read as bytes once (what trust hashes is what the agent is told),
turned into the text a firing passes on, and written back by `sidecar hooks edit`.

A prompt file is a regular file directly inside `.context/hooks/`, never read through a
symlink (a cloned repository could point one at a credentials file), and at most 64 KiB.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from sidecar import jsonfile, safedir
from sidecar.base import files
from sidecar.base.errors import SidecarError
from sidecar.layout import Workspace

MAX_PROMPT_BYTES = 64 * 1024


class PromptError(SidecarError):
    """A prompt file that must not be used: the message says why; the firing fails with it."""


def read_bytes(ws: Workspace, prompt_file: str) -> bytes:
    """The prompt file's bytes, as they are on disk (frontmatter and all)."""
    try:
        fd = safedir.open_file(ws.context / prompt_file, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        if exc.errno == errno.ELOOP and exc.filename == Path(prompt_file).name:  # the file
            raise PromptError("is a symlink, not a regular file") from None
        if exc.errno == errno.ELOOP:  # a folder above it
            raise PromptError(f"{exc.filename} is a symlink; prompt files are never read "
                              "through one") from None
        raise
    try:
        return files.read_capped(fd, MAX_PROMPT_BYTES)
    except files.NotRegular as exc:
        raise PromptError(str(exc)) from None


def text_of(data: bytes) -> str:
    """The prompt's text: the file's, with any YAML frontmatter removed."""
    text = data.decode("utf-8", "replace")
    if text.startswith("---"):
        lines = text.splitlines(keepends=True)
        for i in range(1, len(lines)):
            if lines[i].strip() == "---":
                text = "".join(lines[i + 1:])
                break
    return text.strip()


def read(ws: Workspace, prompt_file: str) -> str:
    """The prompt's text with any YAML frontmatter removed."""
    return text_of(read_bytes(ws, prompt_file))


def write(ws: Workspace, prompt_file: str, data: bytes) -> None:
    """Replace the prompt file with `data` at once, never through a link (an existing file
    keeps its mode; a new one is private to the folder's owner)."""
    if len(data) > MAX_PROMPT_BYTES:
        raise PromptError(f"is larger than {MAX_PROMPT_BYTES // 1024} KiB")
    path = ws.context / prompt_file
    safedir.make_dirs(path.parent)
    with safedir.opened(path.parent) as folder:
        try:
            like = os.stat(path.name, dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            like = None
        if like is not None and not stat.S_ISREG(like.st_mode):
            raise PromptError("is not a regular file; move it aside first")
        jsonfile.replace_in(folder, path.name, data, like=like)
