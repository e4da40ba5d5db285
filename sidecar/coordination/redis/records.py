"""In Redis mode, Redis is the store of record: what a leader decides is kept there, and Redis
itself refuses the write of a leader that no longer leads.

A workspace's records are named as their files are, relative to `.context/runtime/`
(`hooks.json`, `hooks/host-sessions.json`, `sessions/<id>/session.json`, its `trace.jsonl`,
`usage.json`), and kept under `sidecar:<ws>:doc:<name>`. The stores (sessions/store.py,
followups/store.py) put their changes here first (`put`, `append`, `delete`), and their
fencing check sends them (`flush`): one Lua script that first verifies that the lead's holder
record still names the caller's term, then applies every change and marks the inbox files the
changes came from as applied, all or nothing. A deposed, paused or partitioned leader's
script is refused whenever it arrives (and counted, in `<ws>:refused`), so its changes never
land, however late. Only then are the files written, as a mirror of what Redis accepted: for
people, for `status`'s fast path, for hosts that read them.

A mirror can still be set back: a leader stopped between Redis's acceptance and its rename
renames an older copy when it resumes. So the leader writes again, every few seconds, the copy
of each record changed in the last `RECENT` seconds whose file differs (`remirror`).

hooks.json is also edited by people, and changed by commands (`sidecar hooks add`), which lead
nothing and write unfenced. So it is changed by compare-and-set: a change names the revision
it was read at (`expect`) and is refused if the record moved on (`Conflict`), and its copy
carries the revision it was written at (`redisRevision`): a file that is, byte for byte, the
copy written at an older revision (its digest is kept by revision) is a late copy; anything
else is a person's edit (followups/hooks_record.py). The script itself is redis/script.py.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import redis

from sidecar import jsonfile, safedir, together
from sidecar.base import timeutil
from sidecar.base.errors import SidecarError
from sidecar.base.wslog import WorkspaceLog
from sidecar.coordination.base import Conflict, LeaseLost, Unreachable, workspace_key
from sidecar.coordination.records import HOOKS, LAST_GOOD, OFFSETS, REMIRROR_EVERY, copy_revision
from sidecar.coordination.redis.script import COMMIT
from sidecar.layout import Workspace

APPLIED_FOR = 7 * 24 * 3600  # seconds an inbox file's id is remembered once applied
RECENT = 600  # seconds a changed record's copy is checked again (`remirror`)
OFFSET_FRESH = 120.0  # seconds a machine's clock offset counts once its daemon said it

class RecordError(Unreachable):
    """Redis cannot be asked, or refused a change for a reason other than a lost lead: never
    taken for a record that is absent; the step that met it is retried, as for any
    coordination service that does not answer."""

    def __init__(self, message: str) -> None:
        SidecarError.__init__(self, message)
        self.why = message


@dataclass
class Pending:
    """This thread's changes not yet sent: sent together by the next `flush`."""

    sets: dict[str, bytes | None] = field(default_factory=dict)  # None: deleted
    appends: dict[str, list[bytes]] = field(default_factory=dict)
    applied: list[str] = field(default_factory=list)
    expect: tuple[str, int] | None = None  # (record, the revision it was read at)
    copies: list[str] = field(default_factory=list)  # `<revision> <sha1>` of hooks.json's copies

    def __bool__(self) -> bool:
        return bool(self.sets or self.appends or self.applied)


class RedisRecords:
    """One workspace's records in Redis (see the module)."""

    def __init__(self, client: redis.Redis, ws: Workspace) -> None:
        self.client = client
        self.ws = ws
        self.log = WorkspaceLog(ws.root)  # its lines begin with the root
        self.base = f"sidecar:{workspace_key(ws)}"
        self.holder_key = self.base + ":leader-holder"
        #: Whether a daemon writes here: then every change needs the lead (`me`), and one made
        #: without it is refused before it is sent. A command's changes are unfenced.
        self.fenced = False
        #: The lead's holder record (`<instance>:<fence token>:<nonce>`) while this process
        #: leads the workspace (redis/lead.py).
        self.me: str | None = None
        self.local = threading.local()
        self._commit = client.register_script(COMMIT)

    def key(self, name: str) -> str:
        return f"{self.base}:doc:{name}"

    def _pending(self) -> Pending:
        pending: Pending | None = getattr(self.local, "pending", None)
        if pending is None:
            pending = self.local.pending = Pending()
        return pending

    # -- reads ---------------------------------------------------------------------------

    def read(self, name: str, adopt: bool = True) -> bytes | None:
        """The record as Redis holds it (with this thread's unsent changes), None if absent.
        With `adopt`, a record Redis does not have is the file's: a workspace new to Redis
        mode, or a Redis that lost its data (run without persistence), where the files are
        what is left of the record; the next change puts it in Redis."""
        pending = self._pending()
        if name in pending.sets:
            data = pending.sets[name]
        else:
            data = self._get(self.key(name))
            if data is None and adopt:
                data = self._file(name)
        return None if data is None else data + b"".join(pending.appends.get(name, []))

    def _file(self, name: str) -> bytes | None:
        """The file's copy of a record, None if there is none (or none that can be read)."""
        try:
            return jsonfile.read_bytes(self.ws.runtime / name) if _plain(name) else None
        except (OSError, SidecarError):
            return None

    def revision(self, name: str) -> int:
        """How many times the record was set: a change anyone made shows here."""
        value = self._get(self.key(name) + ":rev")
        return int(value) if value is not None else 0

    def unapplied(self, ids: list[str]) -> list[str]:
        """The inbox files among `ids` that no leader has applied yet."""
        if not ids:
            return []
        try:
            seen = _twice(lambda: self.client.mget([f"{self.base}:applied:{i}" for i in ids]))
        except redis.RedisError as exc:
            raise RecordError(f"cannot ask Redis which events were applied: {exc}") from None
        return [i for i, hit in zip(ids, seen, strict=True) if hit is None]

    def machine_offsets(self) -> dict[str, float]:
        """How far each machine's clock is behind Redis's (by process space), as its daemon
        measured it within the last OFFSET_FRESH seconds (redis/clock.py, every 5 s): what a
        time its hooks stamped needs added. A machine whose daemon stopped saying is taken at
        its word again."""
        try:
            found = _twice(lambda: self.client.hgetall(OFFSETS))
        except redis.RedisError as exc:
            raise RecordError(f"cannot read the machines' clocks from Redis: {exc}") from None
        offsets = {}
        for space, value in found.items():
            try:
                offset, said_at = (float(part) for part in _text(value).split())
            except ValueError:
                continue
            if timeutil.now() - said_at <= OFFSET_FRESH:
                offsets[_text(space)] = offset
        return offsets

    def _get(self, key: str) -> bytes | None:
        try:
            value = _twice(lambda: self.client.get(key))
        except redis.RedisError as exc:
            raise RecordError(f"cannot read {key} from Redis: {exc}") from None
        if value is None:
            return None
        return value if isinstance(value, bytes) else str(value).encode("utf-8", "surrogateescape")

    # -- changes -------------------------------------------------------------------------

    def put(self, name: str, data: bytes) -> None:
        pending = self._pending()
        pending.sets[name] = data
        pending.appends.pop(name, None)

    def append(self, name: str, data: bytes) -> None:
        """Append to a record; one Redis does not have starts from its file (`read`), so that
        its copy is never written again shorter."""
        pending = self._pending()
        if name not in pending.sets and name not in pending.appends:
            try:
                present = self.client.exists(self.key(name))
            except redis.RedisError as exc:
                raise RecordError(f"cannot ask Redis for {name}: {exc}") from None
            kept = None if present else self._file(name)
            if kept is not None:
                pending.sets[name] = kept
        pending.appends.setdefault(name, []).append(data)

    def delete(self, name: str) -> None:
        pending = self._pending()
        pending.sets[name] = None
        pending.appends.pop(name, None)

    def mark_applied(self, ids: list[str]) -> None:
        self._pending().applied.extend(ids)

    def note_copy(self, revision: int, data: bytes) -> None:
        """Remember what hooks.json's copy at `revision` holds: a file that says that revision
        and holds it is a late copy; one that says it and holds anything else, an edit."""
        self._pending().copies.append(f"{revision} {_sha1(data)}")

    def late_copy(self, data: bytes) -> bool:
        """Whether `data` is hooks.json's copy as some leader wrote it at a revision older
        than the record's (a deposed leader's late rename), not a person's edit of one."""
        read_at = copy_revision(data)
        if read_at is None or read_at >= self.revision(HOOKS):
            return False
        try:
            found = _twice(lambda: self.client.hget(self.base + ":copies", str(read_at)))
        except redis.RedisError as exc:
            raise RecordError(f"cannot ask Redis about hooks.json: {exc}") from None
        return found is not None and _text(found) == _sha1(data)

    def expect(self, name: str, revision: int) -> None:
        """Send the changes only if the record is still at `revision` (Conflict if not)."""
        self._pending().expect = (name, revision)

    def discard(self) -> None:
        """Forget this thread's unsent changes (their block failed)."""
        self.local.pending = None

    def flush(self) -> dict[str, int]:
        """Send this thread's changes as one fenced script (nothing sent: the fence alone);
        the new revision of each record set. LeaseLost if the lead is not the caller's,
        checked by Redis; RecordError if Redis cannot be asked. Either way nothing of them is
        kept: the caller's block is retried."""
        pending, self.local.pending = self._pending(), None
        me = self.me or ""
        if self.fenced and not me:
            raise LeaseLost("this instance does not lead the workspace")
        expect = pending.expect
        keys = [self.holder_key, self.base + ":leader-fence", self.base + ":refused",
                self.base + ":recent", self.base + ":digests",
                self.key(expect[0]) + ":rev" if expect else self.holder_key,
                *[f"{self.base}:applied:{i}" for i in pending.applied]]
        fence = me.split(":")[1] if me else ""
        args: list[str | bytes | int] = [me, fence, len(pending.applied), APPLIED_FOR, RECENT,
                                         str(expect[1]) if expect else ""]
        named = []
        for name, data in pending.sets.items():
            key = self.key(name)
            keys += [key, key + ":rev"]
            args += ["set", data] if data is not None else ["del", ""]
            if data is not None:
                named.append(name)
        for name, chunks in pending.appends.items():
            keys.append(self.key(name))
            args += ["append", b"".join(chunks)]
        for copy in pending.copies:
            keys.append(self.base + ":copies")
            args += ["copy", copy]
        if not pending and not me:
            return {}  # a command with nothing to send: nothing to check either
        try:
            answer = self._commit(keys=keys, args=args)
        except redis.RedisError as exc:
            raise RecordError(f"Redis did not take the change: {exc}") from None
        if answer == -1:
            raise LeaseLost("Redis refused the write: another instance leads the workspace now")
        if answer == -2:
            raise RecordError("an event of this batch was applied already; the batch is left")
        if answer == -3:
            raise Conflict(f"{expect[0] if expect else 'a record'} changed since it was read")
        revisions = dict(zip(named, (int(r) for r in answer), strict=True))
        self.local.revisions = revisions
        return revisions

    def sent_revision(self, name: str) -> int | None:
        """The revision this thread's last `flush` gave the record, if it set it."""
        revisions: dict[str, int] = getattr(self.local, "revisions", {})
        return revisions.get(name)

    # -- the mirror ----------------------------------------------------------------------

    def mirror(self, write: Callable[[], object]) -> None:
        """Write the files' copy of changes Redis accepted: now (after a `flush`), or within a
        `together` block once its end's fence sent them. A copy that cannot be written is
        said, never the change's failure: Redis has it, and `remirror` writes it later."""
        block = together.current()
        if block is not None and not block.finishing:
            block.once_accepted(lambda: self._mirrored(write))
        else:
            self._mirrored(write)

    def _mirrored(self, write: Callable[[], object]) -> None:
        try:
            write()
        except (OSError, SidecarError) as exc:
            self.log.warning("the files' copy of a change Redis holds cannot be written (it is "
                             "written again within %gs): %s", REMIRROR_EVERY, exc)

    def write_copy(self, name: str, data: bytes, append: bool = False) -> jsonfile.Signature | None:
        """Write (or append to) the file of a record, as Redis's copy: not made durable (Redis
        is), never through a link (safedir); a replace's signature."""
        path = self.ws.runtime / name
        safedir.make_dirs(path.parent)
        if append:
            jsonfile.append_bytes(path, data, durable=False)
            return None
        return jsonfile.write_bytes_atomic(path, data, durable=False)

    def remirror(self) -> int:
        """Write again the copy of every record changed in the last RECENT seconds whose file
        is not what Redis holds (told by digest: only those are read); how many."""
        try:
            now = self.client.time()
            keys = [k if isinstance(k, bytes) else str(k).encode() for k in
                    self.client.zrangebyscore(self.base + ":recent", now[0] - RECENT, "+inf")]
            digests = self.client.hmget(self.base + ":digests", keys) if keys else []
        except redis.RedisError as exc:
            raise RecordError(f"cannot list the records changed lately: {exc}") from None
        prefix = self.key("").encode()
        rewritten = 0
        for key, digest in zip(keys, digests, strict=True):
            name = key[len(prefix):].decode("utf-8", "replace")
            if digest is None or not key.startswith(prefix) or not _plain(name) or name == LAST_GOOD:
                continue
            path = self.ws.runtime / name
            with suppress(OSError, SidecarError):  # missing or unreadable: written again
                found = jsonfile.read_bytes(path)
                if _sha1(found).encode() == digest or (name == HOOKS and not self.late_copy(found)):
                    continue  # (hooks.json's differing copy at its revision: a person's edit)
            data = self._get(key.decode())
            if data is None:
                continue
            try:
                self.write_copy(name, data)
            except (OSError, SidecarError) as exc:
                self.log.warning("cannot write the copy of %s again: %s", name, exc)
                continue
            rewritten += 1
        return rewritten


def _plain(name: str) -> bool:
    """A record's name is a path below the runtime with no way out of it."""
    parts = Path(name).parts
    return bool(parts) and all(p not in ("", ".", "..") and os.sep not in p for p in parts) \
        and not name.startswith("/")


def _sha1(data: bytes) -> str:
    return hashlib.sha1(data, usedforsecurity=False).hexdigest()


def _text(value: bytes | str) -> str:
    return value.decode("ascii", "replace") if isinstance(value, bytes) else value


T = TypeVar("T")


def _twice(read: Callable[[], T]) -> T:
    """A read asked again once after a dropped connection or a timeout (this client never
    retries by itself: a script must never be sent twice; a read may)."""
    try:
        return read()
    except (redis.ConnectionError, redis.TimeoutError):
        return read()
