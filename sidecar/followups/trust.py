"""Trust: which commands a workspace's files may make sidecar run, as this machine's user said.

A command hook's argv comes from `hooks.json`, which a cloned repository, a pull or a hand
edit can change. Such a command runs only if the workspace's owner trusted that exact argv
for that workspace, the way direnv's `allow` and Codex's hook hashes work. Trust lives in the
owner's own config folder (`trust.json`), never in the workspace: per workspace (its real
path), the SHA-256 of the argv and the argv itself, to show (a notice's target only as
`targets.shown` shows it: the file outlives the hook, and must not keep its secret).
`sidecar hooks add/update --` trusts what the user writes; `sidecar hooks trust NAME` trusts
what arrived otherwise. A `resume` action needs no trust: its program comes from the user's
own `config.toml`.

A notify hook's target is trusted the same way: it runs no program a workspace could ship,
but a shipped hooks.json naming a URL would send that URL what the user's sessions do. Its
digest is of `{"notify": TARGET}`, which no argv (a list) can share.

Run records (`pending[].run`) carry a MAC keyed by a per-user secret (`run-key`, 0600, in
the daemon user's config folder), so a pid planted in `hooks.json` is never adopted nor
signalled.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import shlex
from collections.abc import Iterable
from pathlib import Path

import orjson

from sidecar import jsonfile, layout, locks
from sidecar.followups import targets
from sidecar.followups.model import Hook, Run
from sidecar.followups.targets import Notify
from sidecar.layout import Workspace
from sidecar.owner import CannotActAsOwner, config_home_of, owner_uid, read_owned
from sidecar.timeutil import iso

TRUST_FILE = "trust.json"
RUN_KEY = "run-key"
NOT_TRUSTED = "skipped: not trusted on this machine"


Trusted = list[str] | Notify  # what needs trust: a command's argv, or a notice's target


def what(action: Trusted) -> str:
    """What a trusted action does, in a few words, for a log or a message."""
    return f"notice target {shown(action)}" if isinstance(action, Notify) else \
        f"command {shown(action)}"


def shown(argv: Trusted, *, whole: bool = False) -> str:
    """A command as a shell would read it (a notice as `notify TARGET`, its secrets hidden
    unless `whole`: the trust prompt shows the user exactly what they allow), with every
    control character escaped (`\\x1b`, `\\r`): what a terminal shows is exactly what would
    run, never a line redrawn over."""
    target = (argv.target if whole else targets.shown(argv.target)) if isinstance(argv, Notify) \
        else ""
    text = f"notify {target}" if isinstance(argv, Notify) else shlex.join(argv)
    return "".join(ch if ch.isprintable() or ch == " " else ch.encode("unicode_escape").decode()
                   for ch in text)


def digest(argv: Trusted) -> str:
    return hashlib.sha256(orjson.dumps(argv.to_json() if isinstance(argv, Notify) else argv)).hexdigest()


def workspace_key(ws: Workspace) -> str:
    return os.path.realpath(ws.root)


def _entries(data: bytes | None, key: str) -> dict[str, object]:
    try:
        doc = orjson.loads(data) if data else {}
    except orjson.JSONDecodeError:
        return {}
    found = doc.get("workspaces", {}).get(key, {}) if isinstance(doc, dict) else {}
    return found if isinstance(found, dict) else {}


def trusted_digests(ws: Workspace) -> set[str]:
    """The argv digests the workspace's owner trusted for it (read from the owner's folder,
    only if the file is theirs and nobody else may write it); none where the workspace has no
    owner to act for (a link on its path, two users who could replace it)."""
    try:
        uid = owner_uid(ws)
    except CannotActAsOwner:
        return set()
    data = read_owned(config_home_of(uid) / TRUST_FILE, uid)
    return set(_entries(data, workspace_key(ws)))


def is_trusted(ws: Workspace, action: Trusted) -> bool:
    return digest(action) in trusted_digests(ws)


def untrusted(ws: Workspace, hooks: Iterable[Hook]) -> list[Hook]:
    """The enabled command and notify hooks whose action the owner has not trusted."""
    commands = [(h, h.action) for h in hooks if h.enabled and not isinstance(h.action, str)]
    if not commands:
        return []
    known = trusted_digests(ws)
    return [h for h, action in commands if digest(action) not in known]


def trust(ws: Workspace, action: Trusted, now: float) -> None:
    """Record, in this user's own folder, that they trust `action` in this workspace."""
    path = trust_file()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with locks.locked(path.with_name("trust.lock")):
        try:
            doc = jsonfile.read_json(path)
        except FileNotFoundError:
            doc = {}
        if not isinstance(doc, dict) or not isinstance(doc.get("workspaces"), dict):
            doc = {"version": 1, "workspaces": {}}
        entries = doc["workspaces"].setdefault(workspace_key(ws), {})
        # A target as shown only: this file outlives the hook, and the digest is what counts.
        shape = {"notify": targets.shown(action.target)} if isinstance(action, Notify) else \
            {"argv": action}
        entries[digest(action)] = {**shape, "trustedAt": iso(now)}
        jsonfile.write_json_atomic(path, doc)


# -- run records ----------------------------------------------------------------------------

def run_key() -> bytes:
    """This user's secret for run records, made once: written whole under a temporary name,
    then hard-linked into place, so a process racing to make it reads all of it or none."""
    home = layout.config_home()
    path = home / RUN_KEY
    try:
        return jsonfile.read_bytes(path)
    except FileNotFoundError:
        pass
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    temp = home / f".{RUN_KEY}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with open(fd, "wb") as handle:
            handle.write(os.urandom(32))
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temp, path)
        except FileExistsError:
            pass  # another process made it first: theirs counts
    finally:
        os.unlink(temp)
    return jsonfile.read_bytes(path)


def _run_message(ws: Workspace, entry_id: str, run: Run) -> bytes:
    return orjson.dumps([workspace_key(ws), entry_id, run.pid, run.start, run.started_at, run.log])


def sign(ws: Workspace, entry_id: str, run: Run) -> Run:
    run.mac = hmac.new(run_key(), _run_message(ws, entry_id, run), hashlib.sha256).hexdigest()
    return run


def is_ours(ws: Workspace, entry_id: str, run: Run) -> bool:
    """Whether this user's sidecar wrote this run record (its MAC checks out)."""
    if not run.mac:
        return False
    expected = hmac.new(run_key(), _run_message(ws, entry_id, run), hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, run.mac)


def trust_file() -> Path:
    return layout.config_home() / TRUST_FILE
