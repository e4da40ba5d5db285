"""Trust as `status` sees it (views/status.py): whether each enabled hook is trusted as it
stands, by the digest followups/trust.py checks (trustcheck.py), read with the standard
library alone where that is plain. Where it is not (`Unsure`), followups/trust.py weighs it:
a workspace that may not be this user's (another user's trust would count), a trust file, id
or prompt that cannot be read as plainly.
"""

from __future__ import annotations

import os
import stat

from sidecar.base import trustcheck
from sidecar.base.files import FILE, NotRegular, parse, read, read_capped, read_owned, walk

TYPE_CHECKING = False  # typing costs this command 2 ms (see base/words.py)
if TYPE_CHECKING:
    from typing import Any

MAX_PROMPT_BYTES = 64 * 1024  # followups/prompts.py's
MAX_OWNED_BYTES = 1024 * 1024  # owner.py's


class Unsure(Exception):
    """Not plain to the standard library: followups/trust.py says."""


def plainly_mine(root: str) -> bool:
    """Whether owner.owner_uid would say this process's user, and no less plainly: no link
    on the path, every folder root's or this user's, none that others may change, and one of
    them this user's (or this user is root). Anything else is the full command's to weigh."""
    me, mine, path = os.geteuid(), False, "/"
    for name in ["", *(n for n in root.split("/") if n)]:
        path = os.path.join(path, name) if name else path
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode) or st.st_uid not in (0, me) or (
                st.st_mode & 0o002 and not st.st_mode & stat.S_ISVTX and path != root):
            return False
        mine = mine or st.st_uid == me
    return mine or me == 0


def own_trust_file(config_folder: str) -> bytes | None:
    """This user's trust.json as owner.read_owned reads one's own: a regular file of theirs
    that nobody else may write (None where there is none)."""
    try:
        fd = os.open(os.path.join(config_folder, "trust.json"),
                     os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Unsure(f"trust.json: {exc}") from None
    data = read_owned(fd, os.geteuid(), MAX_OWNED_BYTES)
    if data is None:
        raise Unsure("trust.json is not as the full command reads it")
    return data


class Trusted:
    """The approvals for one workspace, read once, for its hooks one by one."""

    def __init__(self, root: str, base: int, runtime: int, config_folder: str) -> None:
        self.root, self.base, self.runtime = root, base, runtime
        self.config_folder = config_folder
        self.given: dict[str, list[dict[str, Any]]] | None = None
        self.identity: str | None = None

    def check(self, raw: dict[str, Any]) -> bool:
        """Whether the enabled hook `raw` (as hooks.json has it) is trusted; Unsure where
        that is not plain."""
        if self.given is None:
            if not plainly_mine(self.root):
                raise Unsure("whose trust counts is the full command's to say")
            self.identity = trustcheck.identity_of(read(self.runtime, trustcheck.ID_FILE))
            data = own_trust_file(self.config_folder)
            doc = parse(data) if data else None
            self.given = trustcheck.with_global(trustcheck.section(doc, self.root, self.identity), doc)
        definition = trustcheck.definition_of(raw)
        action = raw.get("action", "resume")
        prompt = raw.get("promptFile") if not isinstance(action, dict) else None
        data = None if prompt is None else self.prompt(str(prompt))
        if self.identity is None:
            raise Unsure("no workspace id to trust it by")
        hook_id = str(raw.get("id"))
        want = trustcheck.wanted_digest(hook_id, self.root, self.identity, definition, data)
        return want is not None and trustcheck.approved(self.given, hook_id, want)

    def prompt(self, name: str) -> bytes:
        """The prompt file's bytes as prompts.read_bytes reads them: `hooks/NAME.md` below
        `.context`, never through a link, a regular file of at most 64 KiB."""
        folder, _, file = name.rpartition("/")
        if folder != "hooks" or not file or file.startswith("."):
            raise Unsure("a prompt file named otherwise")
        hooks = walk(self.base, ".context", "hooks")
        try:
            fd = os.open(file, FILE | os.O_NOCTTY, dir_fd=hooks)
        except OSError as exc:
            raise Unsure(f"{name}: {exc}") from None
        finally:
            os.close(hooks)
        try:
            return read_capped(fd, MAX_PROMPT_BYTES)
        except NotRegular as exc:
            raise Unsure(f"{name} {exc}") from None
