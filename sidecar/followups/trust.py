"""Trust: what a workspace's files may make sidecar run unattended, as this machine's user
approved it, by content.

A firing runs an agent or a command on words and settings that live in the workspace
(`runtime/hooks.json`, `.context/hooks/*.md`), which a clone, a pull or a hand edit can
change. So a hook fires only if the workspace's owner trusted exactly what it would do now:
a digest over the hook's whole definition (its event, delay, reasons, the flags that widen
it, its action: the resume, the command's argv or the notice's target), the bytes of its
prompt file, and the workspace's identity: its real path *and* the random id `init` writes
into its runtime (`workspace-id`, which git ignores), so a different repository later cloned
at the same path is a different workspace. The firing hashes the very bytes it then sends:
what was approved is what runs. Any change (a pull, a hand edit) is a new digest, untrusted
until `sidecar hooks trust` shows it and the user says yes, the way direnv's `allow` works.

Trust lives in the owner's own config folder (`trust.json`), never in the workspace. What
the user writes through sidecar (`init`'s seeded hooks and prompts, `hooks add/update/edit`)
is trusted as written, where every part of it the user did not write then was approved
before (see `trust_written`). The user's global hooks (globalhooks.py) are trusted in the
same file, by their definition alone (`trust_global`), and each workspace's copy of one only
by that: nothing a workspace holds adds to it.

Run records (`pending[].run`) carry a MAC keyed by a per-user secret (`run-key`, 0600, in the
daemon user's config folder), so a pid planted in `hooks.json` is never adopted nor signalled.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import shlex
import stat
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from sidecar import jsonfile, layout, locks, safedir
from sidecar.base import trustcheck
from sidecar.base.errors import SidecarError
from sidecar.base.escapes import escaped  # what a terminal shows is exactly what runs
from sidecar.base.outcome import skipped
from sidecar.base.timeutil import iso
from sidecar.followups import prompts
from sidecar.followups.model import Hook, Run
from sidecar.followups.notify import targets
from sidecar.followups.notify.targets import Notify
from sidecar.followups.seeds import PROMPTS, default_doc
from sidecar.layout import TamperedRuntime, Workspace
from sidecar.owner import MAX_OWNED_BYTES, CannotActAsOwner, config_home_of, owner_uid, read_owned

TRUST_FILE = "trust.json"
RUN_KEY = "run-key"
NOT_TRUSTED = skipped("not trusted on this machine")
KEPT = 8  # approvals kept per hook: a branch switched back to is still trusted
SIDECARS_OWN = frozenset(trustcheck.sha(text.encode()) for text in PROMPTS.values())


class TrustFileFull(SidecarError):
    """trust.json would grow past what its readers read: refused, never silently unread."""


def shown(action: list[str] | Notify, *, whole: bool = False) -> str:
    """A command as a shell would read it (a notice as `notify TARGET`, its secrets hidden
    unless `whole`: the trust prompt shows the user exactly what they allow), escaped."""
    if isinstance(action, Notify):
        return escaped(f"notify {action.target if whole else targets.shown(action.target)}")
    return escaped(shlex.join(action))


def described(hook: Hook) -> str:
    """What firing the hook does, in one line (its secrets hidden), escaped."""
    if isinstance(hook.action, str):
        prompt = f" with {hook.prompt_file}" if hook.prompt_file else " with no prompt"
        return escaped(f"resumes the session{prompt}")
    text = f"runs {shown(hook.action)}" if not isinstance(hook.action, Notify) else \
        f"sends a notice: {shown(hook.action)}"
    return escaped(text + (f" (prompt {hook.prompt_file})" if hook.prompt_file and
                           not isinstance(hook.action, Notify) else ""))


@dataclass(frozen=True, slots=True)
class Content:
    """What a hook would do if it fired now: its definition and its prompt's bytes (None
    where it has no prompt)."""

    hook: Hook
    prompt: bytes | None

    def definition(self) -> dict[str, Any]:
        return trustcheck.definition_of(self.hook.to_json())

    def definition_sha(self) -> str:
        return trustcheck.sha(trustcheck.canonical(self.definition()))

    def prompt_sha(self) -> str | None:
        return None if self.prompt is None else trustcheck.sha(self.prompt)

    def digest(self, place: str, identity: str) -> str:
        return trustcheck.digest(place, identity, self.definition(), self.prompt)


def content(ws: Workspace, hook: Hook) -> Content:
    """The hook as it stands, its prompt read once (OSError, PromptError where it cannot be)."""
    if hook.prompt_file is None or isinstance(hook.action, Notify):  # a notice has no prompt
        return Content(hook, None)
    return Content(hook, prompts.read_bytes(ws, hook.prompt_file))


# -- the workspace's identity ---------------------------------------------------------------

def place(ws: Workspace) -> str:
    return os.path.realpath(ws.root)


def workspace_id(ws: Workspace) -> str | None:
    """The random id `init` wrote into this workspace's runtime; None where there is none
    (nothing is trusted there until someone trusts it anew)."""
    try:
        data = jsonfile.read_bytes(ws.identity_file)
    except (OSError, jsonfile.NotARegularFile):
        return None
    return trustcheck.identity_of(data)


def ensure_workspace_id(ws: Workspace) -> str:
    """The workspace's id, made now if it has none (written whole, then linked into place:
    two commands making it at once agree on the first)."""
    found = workspace_id(ws)
    if found is not None:
        return found
    safedir.make_dirs(ws.runtime)
    with safedir.opened(ws.runtime) as runtime:
        if os.path.lexists(ws.identity_file) and workspace_id(ws) is None:  # not an id: replaced
            if not stat.S_ISREG(os.lstat(ws.identity_file).st_mode):
                raise TamperedRuntime(f"{ws.identity_file} is not a regular file; remove it, "
                                      "then trust again")
            os.unlink(ws.identity_file.name, dir_fd=runtime)
        temp = f".{ws.identity_file.name}.{os.getpid()}.tmp"
        jsonfile.replace_in(runtime, temp, os.urandom(16).hex().encode() + b"\n")
        try:
            os.link(temp, ws.identity_file.name, src_dir_fd=runtime, dst_dir_fd=runtime,
                    follow_symlinks=False)
        except FileExistsError:
            pass
        finally:
            os.unlink(temp, dir_fd=runtime)
    made = workspace_id(ws)
    if made is None:
        raise OSError(f"{ws.identity_file} cannot be read back")
    return made


# -- approvals ------------------------------------------------------------------------------

Approvals = dict[str, list[dict[str, Any]]]  # hook id -> what was approved for it, oldest first


def _section(data: bytes | None, where: str, identity: str | None) -> Approvals:
    """One workspace's approvals in a trust file: none unless made for this identity; its
    copies of global hooks as the global hooks were approved (trustcheck.with_global)."""
    try:
        doc = orjson.loads(data) if data and identity else None
    except orjson.JSONDecodeError:
        return {}
    return trustcheck.with_global(trustcheck.section(doc, where, identity), doc)


def approvals(ws: Workspace) -> Approvals:
    """What the workspace's owner approved for it (read from the owner's folder, only if the
    file is theirs and nobody else may write it); none where the workspace has no owner to act
    for (a link on its path, two users who could replace it)."""
    try:
        uid = owner_uid(ws)
    except CannotActAsOwner:
        return {}
    return _section(read_owned(config_home_of(uid) / TRUST_FILE, uid), place(ws), workspace_id(ws))


def _is_approved(ws: Workspace, found: Content, given: Approvals) -> bool:
    identity = workspace_id(ws)
    if identity is None:
        return False
    want = trustcheck.wanted_digest(found.hook.id, place(ws), identity, found.definition(), found.prompt)
    return want is not None and trustcheck.approved(given, found.hook.id, want)


def is_trusted(ws: Workspace, found: Content) -> bool:
    return _is_approved(ws, found, approvals(ws))


def untrusted(ws: Workspace, hooks: Iterable[Hook]) -> list[Hook]:
    """The enabled hooks whose content as it stands the owner has not trusted (one whose
    prompt cannot be read among them: nothing of it was approved)."""
    enabled = [h for h in hooks if h.enabled]
    if not enabled:
        return []
    given = approvals(ws)
    out = []
    for hook in enabled:
        with suppress(OSError, prompts.PromptError):
            if _is_approved(ws, content(ws, hook), given):
                continue
        out.append(hook)
    return out


def trust(ws: Workspace, found: Content, now: float) -> None:
    """Record, in this user's own folder, that they trust `found` in this workspace."""
    identity = ensure_workspace_id(ws)

    def record(doc: dict[str, Any]) -> None:
        section = doc["workspaces"].get(place(ws))
        if not isinstance(section, dict) or section.get("id") != identity or \
                not isinstance(section.get("hooks"), dict):
            section = doc["workspaces"][place(ws)] = {"id": identity, "hooks": {}}
        _approve(section["hooks"], found, found.digest(place(ws), identity), now)

    _change_trust_file(record)


def trust_global(hook: Hook, now: float) -> None:
    """Record that this user trusts their global hook `hook` as it stands (globalhooks.py):
    every workspace's copy of it is trusted by that."""
    found = Content(hook, None)

    def record(doc: dict[str, Any]) -> None:
        section = doc.get("global")
        if not isinstance(section, dict) or not isinstance(section.get("hooks"), dict):
            section = doc["global"] = {"hooks": {}}
        # Only the latest (no branch brings an older global hook back): a stale copy is not.
        digest = trustcheck.global_digest(found.definition(), hook.id)
        _approve(section["hooks"], found, digest, now, keep=1)

    _change_trust_file(record)


def forget_global(hook_id: str) -> None:
    """Forget what was trusted for a global hook the user removed: a copy of it that a
    workspace keeps (or brings back) is trusted no more."""
    def drop(doc: dict[str, Any]) -> None:
        hooks = doc["global"].get("hooks") if isinstance(doc.get("global"), dict) else None
        if isinstance(hooks, dict):
            hooks.pop(hook_id, None)

    if hook_id in global_approvals():
        _change_trust_file(drop)


def global_approvals() -> Approvals:
    """What this user approved of their global hooks, by global hook id."""
    try:
        return trustcheck.global_section(orjson.loads(jsonfile.read_bytes(trust_file())))
    except (OSError, jsonfile.NotARegularFile, orjson.JSONDecodeError):
        return {}


def is_trusted_global(hook: Hook) -> bool:
    """Whether this user trusted their global hook as it stands."""
    want = trustcheck.global_digest(Content(hook, None).definition(), hook.id)
    return trustcheck.approved(global_approvals(), hook.id, want)


def _approve(hooks: dict[str, Any], found: Content, digest: str, now: float, keep: int = KEPT) -> None:
    """One more approval of a hook in its section, the last `keep` kept."""
    earlier = hooks.get(found.hook.id)
    kept = [e for e in earlier if isinstance(e, dict) and e.get("digest") != digest] \
        if isinstance(earlier, list) else []
    # What it does as shown only: this file outlives the hook, and must keep no secret.
    kept.append({"digest": digest, "definition": found.definition_sha(),
                 "prompt": found.prompt_sha(), "does": described(found.hook),
                 "trustedAt": iso(now)})
    hooks[found.hook.id] = kept[-keep:]


def _change_trust_file(change: Callable[[dict[str, Any]], object]) -> None:
    """Change this user's trust file under its lock (a file that is not one is kept aside
    and begun anew)."""
    path = trust_file()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with locks.locked(path.with_name("trust.lock")):
        try:
            doc = jsonfile.read_json(path)
        except FileNotFoundError:
            doc = {}
        except (orjson.JSONDecodeError, jsonfile.NotARegularFile):  # kept aside, begun anew
            os.replace(path, path.with_name(f"{TRUST_FILE}.bad"))
            doc = {}
        if not isinstance(doc, dict) or doc.get("version") != trustcheck.TRUST_VERSION or \
                not isinstance(doc.get("workspaces"), dict):
            doc = {"version": trustcheck.TRUST_VERSION, "workspaces": {}}
        change(doc)
        data = jsonfile.dumps(doc)
        if len(data) > MAX_OWNED_BYTES:  # past what is read back: workspaces gone are forgotten
            doc["workspaces"] = {k: v for k, v in doc["workspaces"].items() if os.path.isdir(k)}
            data = jsonfile.dumps(doc)
        if len(data) > MAX_OWNED_BYTES:
            raise TrustFileFull(f"{path} would pass {MAX_OWNED_BYTES // 1024} KiB, more than is read back; "
                                "nothing was trusted (remove workspaces you no longer use from it)")
        jsonfile.write_bytes_atomic(path, data)


def _mine(ws: Workspace) -> Approvals:
    """What this user (the one running a command) approved for the workspace."""
    try:
        data = jsonfile.read_bytes(trust_file())
    except (OSError, jsonfile.NotARegularFile):
        data = None
    return _section(data, place(ws), workspace_id(ws))


def settings_known(ws: Workspace, hook: Hook) -> bool:
    """Whether this user approved the hook's definition as it is, with some prompt or none."""
    known = Content(hook, None).definition_sha()
    return any(e.get("definition") == known for e in _mine(ws).get(hook.id, ()))


def trust_written(ws: Workspace, found: Content, before: Hook | None, now: float) -> str | None:
    """Trust what the user just wrote through sidecar: a hook they added (`before` None) or
    changed. Each part of it they did not write now must have been approved before in this
    workspace: the rest of an existing hook's definition, and a prompt that is not sidecar's
    own text, for this very hook (a prompt a pull brought stays untrusted however the hook is
    then changed, and one approved for a harmless command is not thereby one for a resume).
    None once trusted; otherwise why not, for the user."""
    if before is not None and not settings_known(ws, before):
        return f"{before.id}'s settings were not approved on this machine before"
    wanted = found.prompt_sha()
    if wanted is not None and wanted not in SIDECARS_OWN and not any(
            e.get("prompt") == wanted for e in _mine(ws).get(found.hook.id, ())):
        return f"its prompt {found.hook.prompt_file} is not one approved for it on this machine"
    trust(ws, found, now)
    return None


def trust_seeded(ws: Workspace, hooks: Iterable[Hook], now: float) -> list[str]:
    """Trust the hooks that are exactly what sidecar seeds, settings and prompt (`init`'s
    own words, whoever put them there); the ids trusted."""
    seeded = default_doc(now).hooks
    done = []
    for hook in hooks:
        model = seeded.get(hook.id)
        if model is None or model.prompt_file is None or \
                Content(hook, None).definition_sha() != Content(model, None).definition_sha():
            continue
        try:
            found = content(ws, hook)
        except (OSError, prompts.PromptError):
            continue
        if found.prompt == PROMPTS[Path(model.prompt_file).name].encode():
            trust(ws, found, now)
            done.append(hook.id)
    return done


def trust_file() -> Path:
    return layout.config_home() / TRUST_FILE


# -- run records ----------------------------------------------------------------------------

def run_key() -> bytes:
    """This user's secret for run records, made once: written whole under a temporary name,
    then hard-linked into place, so a process racing to make it reads all of it or none."""
    home = layout.config_home()
    path = home / RUN_KEY
    with suppress(FileNotFoundError):
        return jsonfile.read_bytes(path)
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    temp = home / f".{RUN_KEY}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with open(fd, "wb") as handle:
            handle.write(os.urandom(32))
            handle.flush()
            os.fsync(handle.fileno())
        with suppress(FileExistsError):  # another process made it first: theirs counts
            os.link(temp, path)
    finally:
        os.unlink(temp)
    return jsonfile.read_bytes(path)


def _run_message(ws: Workspace, entry_id: str, run: Run) -> bytes:
    return orjson.dumps([place(ws), entry_id, run.pid, run.start, run.started_at, run.log])


def sign(ws: Workspace, entry_id: str, run: Run) -> Run:
    run.mac = hmac.new(run_key(), _run_message(ws, entry_id, run), hashlib.sha256).hexdigest()
    return run


def is_ours(ws: Workspace, entry_id: str, run: Run) -> bool:
    """Whether this user's sidecar wrote this run record (its MAC checks out)."""
    if not run.mac:
        return False
    expected = hmac.new(run_key(), _run_message(ws, entry_id, run), hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, run.mac)
