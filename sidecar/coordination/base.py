"""What sidecar needs to coordinate the instances that serve a workspace, as one interface.

Every part that coordinates instances goes through a `Coordination`: who leads a workspace
(`Leadership`), the short locks of the stores (hooks.json, the bindings and session records),
which instances live, whether a follow-up's runner still runs, and the wake-up that a
workspace's files changed. Two backends implement it (huey's storage backends are the model):

- `files.FileCoordination`, the default: flock on the workspace's own lock files, the kernel's
  process liveness, inotify. Right wherever every instance runs on one machine.
- `redis.backend.RedisCoordination`, chosen by `[coordination] url` (or
  `SIDECAR_COORDINATION_URL`): one standalone Redis that every machine sharing the workspace
  reaches, for file locks that a network volume does not honour across machines.

With the file backend the state files on the workspace are the record; with Redis, Redis is
(its records refuse a deposed leader's write themselves) and the files are its mirror.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, NamedTuple, Protocol, runtime_checkable

from sidecar.base.errors import SidecarError
from sidecar.layout import Workspace

if TYPE_CHECKING:
    from sidecar.coordination.redis.clock import Reading
    from sidecar.coordination.redis.records import RedisRecords


class LeaseLost(SidecarError):
    """This instance no longer leads the workspace: it must write nothing more."""


class Conflict(SidecarError):
    """A record changed since it was read (Redis mode: by a command, or another leader): it
    is read again and the change made anew (redis/records.py)."""


class Unreachable(SidecarError):
    """The coordination service cannot be reached; the message names it (never a password)
    and says why; `why` is the reason alone."""

    def __init__(self, shown: str, why: str) -> None:
        super().__init__(f"coordination {shown} unreachable: {why}")
        self.why = why


class RunLease(NamedTuple):
    """A runner's lease: the variables naming its key and wake-up channel, and the URL to
    reach the service, which the runner is given on a pipe (it may hold a password)."""

    env: dict[str, str]
    url: bytes


class Implements(NamedTuple):
    """The capabilities of a backend (kombu's `Transport.implements` is the model). Where
    every instance runs on one machine they all hold: a process id, a pidfd and the folder
    watch see what any instance does."""

    #: The leader watches every live session's host by its pid, and a host whose event named
    #: no process space is taken to run here. Where not, each stand-by watches the hosts of
    #: its own machine and reports their exits through the inbox, and a host whose machine
    #: is unknown is not watched.
    every_host_by_pid: bool
    #: A follow-up's runner is watched by its pid, wherever it was started. Where not, one
    #: started on another machine is told by its lease (`run_alive`, followups/run/remote.py).
    every_runner_by_pid: bool
    #: The folder watch sees every event file that arrives, so the inbox is not also listed
    #: on a timer (an instance on another machine writes where this one's watch does not see).
    every_arrival_by_watch: bool


ONE_MACHINE = Implements(every_host_by_pid=True, every_runner_by_pid=True, every_arrival_by_watch=True)
MANY_MACHINES = Implements(every_host_by_pid=False, every_runner_by_pid=False, every_arrival_by_watch=False)


class Leadership(Protocol):
    """One instance's claim to lead one workspace."""

    #: The current term's name while held where a lead can be lost while the process lives
    #: (`<instance>.<fencing token>`): follow-ups are claimed in its name. "" for a file lead.
    term: str

    def try_acquire(self) -> bool:
        """Take the lead if nobody holds it; never waits for a holder. Unreachable if the
        service cannot be asked."""

    def check(self) -> None:
        """Raise LeaseLost unless the lead is still this instance's: called before every
        write a leader makes (a fencing check). Where Redis keeps the records, it is the
        write: the changes put since are sent, and Redis checks the lead as it applies them."""

    def held(self) -> bool:
        """Whether the lead is still held, as far as this instance knows without asking."""

    def claim_lives(self, claimer: str) -> bool:
        """Whether a follow-up claimed by `claimer` (an instance, or a term) is still claimed,
        for a leader settling the claims others left. Where a lead is held in terms, only the
        current term's claims live: this instance leads now. Unreachable if unknown."""

    def release(self) -> None:
        """Give the lead up (at once: a stand-by takes over)."""


class Coordination(Protocol):
    """A backend: what the instances of every workspace coordinate through."""

    #: How the backend is shown (`file`, or the Redis URL with any password masked).
    shown: str
    #: What the daemon's log says of the backend after the instance it names: nothing for the
    #: file backend, which goes without saying.
    said: str
    #: What this backend's instances can see of one another, each named for what it decides.
    implements: Implements
    #: The least time between a stand-by's tries for the lead: none where a try is a system
    #: call; where it is a round trip, every arrival wakes a stand-by, and its tries must not
    #: crowd the leader.
    look_every: float
    #: Whether another machine may serve the workspace: the kind `status` shows.
    distributed: bool

    def store_lock(self, ws: Workspace, name: str, timeout: float = 10.0) -> AbstractContextManager[None]:
        """Hold the lock of one store (`hooks`, `bindings`) for a short read-modify-write;
        LockTimeout after `timeout` seconds."""

    def leadership(self, ws: Workspace, instance_id: str, on_lost: Callable[[], None]) -> Leadership:
        """This instance's claim on the lead of `ws`; `on_lost` is called (on any thread) when
        a held lead is lost."""

    def join(self, ws: Workspace, instance_id: str) -> None:
        """Say that the instance lives, until `leave` or its death."""

    def leave(self, ws: Workspace, instance_id: str) -> None:
        ...

    def is_alive(self, ws: Workspace, instance_id: str) -> bool:
        """Whether that instance lives. Unreachable if the service cannot say."""

    def changed(self, ws: Workspace) -> None:
        """Tell the other machines that this one saw the workspace's files change."""

    def records(self, ws: Workspace) -> RedisRecords | None:
        """Where the leader's records of `ws` are kept when that is not its files: Redis, the
        store of record in Redis mode (redis/records.py). None: the files are the record."""

    def run_lease(self, ws: Workspace, entry_id: str) -> RunLease | None:
        """What makes a follow-up's runner keep a lease while it runs, for a leader on
        another machine (None where the process watch sees every runner)."""

    def run_alive(self, ws: Workspace, entry_id: str) -> bool:
        """Whether the runner of that follow-up holds its lease. Unreachable if unknown."""

    def ping(self) -> None:
        """Ask the service whether it answers: Unreachable if not."""

    def look(self) -> Reading | None:
        """Ask the service whether it answers (Unreachable if not), and what it says of its
        clock and persistence, which `status` and `doctor` show: None where there is no
        service to read them of."""

    def close(self) -> None:
        ...


@runtime_checkable
class Listening(Protocol):
    """A backend that hears the changes other machines announce (`Coordination.changed`)."""

    def listen(self, woken: Callable[[str], None]) -> None:
        """Call `woken(workspace key)` for each announced change, and `woken("")` after a
        gap in which some may have been missed."""


def workspace_key(ws: Workspace) -> str:
    """The workspace's name in a shared service: its path, which every machine must mount
    the shared workspace at (the session records hold paths too), hashed to a fixed size."""
    return hashlib.sha1(str(ws.root).encode(), usedforsecurity=False).hexdigest()[:20]
