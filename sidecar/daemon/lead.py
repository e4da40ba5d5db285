"""One instance's part in who serves a workspace: standing by, leading, or resting after a
lost lead, as a state machine stepped by the workspace's step.

A stand-by tries for the leader lock at every step (every STANDBY_RETRY, and at most every
`look_every` of the backend), so a successor takes over well within a second of a leader's
death. A leader checks at each step that its lead still holds; one it lost (a lapsed lease,
a fencing check that failed, an unreachable service, a conflict it cannot settle) steps down
at once and rests LOST_LEAD_PAUSE before it tries again. What taking the lead and stepping
down mean for ingestion and the follow-ups is the workspace's (`taken`, `stepped_down`):
this module knows only the lead, the instance's membership and what is said of both.

Every change of state goes through `_change_state`, which asserts where it comes from
(supervisor's `Subprocess.change_state` and `_assertInState` are the model).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable

from sidecar.base.wslog import WorkspaceLog
from sidecar.coordination import instances
from sidecar.coordination.base import Conflict, Coordination, LeaseLost, Unreachable
from sidecar.coordination.instances import Identity, Membership, Reportable
from sidecar.layout import Workspace

STANDBY_RETRY = 0.2  # seconds between a stand-by's attempts at the leader lock
LOST_LEAD_PAUSE = 1.0  # seconds before an instance that lost the lead tries for it again
LEADER_LOOKS = 10  # a stand-by's looks for the leader's file (it follows the lock) before it speaks


class LeadState(enum.Enum):
    STANDING_BY = "standby"  # tries for the lead at each step
    LEADING = "leader"  # holds the lead: ingestion and the follow-ups are stepped
    RESTING = "resting"  # lost the lead: stands by, and tries again after LOST_LEAD_PAUSE
    CLOSED = "closed"  # handed over for good: the workspace is no longer served


# Where each state may be entered from.
ENTERED_FROM: dict[LeadState, tuple[LeadState, ...]] = {
    LeadState.STANDING_BY: (LeadState.RESTING,),
    LeadState.LEADING: (LeadState.STANDING_BY,),
    LeadState.RESTING: (LeadState.LEADING,),
    LeadState.CLOSED: (LeadState.STANDING_BY, LeadState.LEADING, LeadState.RESTING),
}


class Lead:
    """Whether this instance leads one workspace, and the changes between that and not."""

    def __init__(self, ws: Workspace, identity: Identity, coordination: Coordination,
                 log: WorkspaceLog, taken: Callable[[float], None],
                 stepped_down: Callable[[], None], wake: Callable[[], None],
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.ws = ws
        self.identity = identity
        self.coordination = coordination
        self.log = log
        # Taking the lead over (fencing the stores, starting ingestion and the follow-ups):
        # LeaseLost, Unreachable or Conflict from it steps down again.
        self.taken = taken
        self.stepped_down = stepped_down  # stop writing: called before the lead is given up
        self.wake = wake  # the loop's: step the workspace now (from any thread)
        self.monotonic = monotonic
        self.leadership = coordination.leadership(ws, identity.id, self._lost)
        self.membership = Membership(ws, identity)
        self.state = LeadState.STANDING_BY
        self.trouble: str | None = None  # why the coordination service cannot be reached
        self.leader_looks = 0  # looks for who leads since standing by; past LEADER_LOOKS: said
        self.next_try = 0.0  # a stand-by's next try for the lead (monotonic)
        self.rest_until = 0.0  # after losing the lead: not tried for before (monotonic)

    @property
    def leading(self) -> bool:
        return self.state is LeadState.LEADING

    @property
    def role(self) -> str:
        """What the instance file says of it: `leader` or `standby`."""
        return "leader" if self.leading else "standby"

    def _change_state(self, new: LeadState) -> None:
        assert self.state in ENTERED_FROM[new], f"{self.state.name} cannot become {new.name}"
        self.state = new

    # -- membership ----------------------------------------------------------------------

    def join(self) -> None:
        self.membership.join()  # the workspace's first step writes the instance file

    def beat(self, reported: Reportable) -> None:
        """Write the instance file; a leader also clears the files of dead instances."""
        self.membership.heartbeat(*reported)
        if self.leading:
            self.membership.clean_dead()

    # -- the step ------------------------------------------------------------------------

    def step(self, now: float) -> bool:
        """Whether this instance leads for this step: a lead found lost is stepped down from,
        and a stand-by tries for it when its rest and the backend's least interval allow."""
        if self.leading and not self.leadership.held():
            self.step_down("the lead was lost")
        if self.state is LeadState.RESTING and self.monotonic() >= self.rest_until:
            self._change_state(LeadState.STANDING_BY)
        if self.state is LeadState.STANDING_BY and self.monotonic() >= self.next_try:
            self.next_try = self.monotonic() + self.coordination.look_every
            self._try(now)
        if not self.leading:
            self._say_standing_by()
        return self.leading

    def _try(self, now: float) -> None:
        try:
            if not self.leadership.try_acquire():
                self._reachable()
                return
        except Unreachable as exc:
            self._unreachable(exc)
            return
        self._reachable()
        self._change_state(LeadState.LEADING)
        self.log.info("leading (instance %s%s)", self.identity.id, self.coordination.said)
        self.leader_looks = 0
        try:
            self.taken(now)
        except (LeaseLost, Unreachable, Conflict) as exc:
            self.step_down(str(exc))

    def _lost(self) -> None:
        """Called on the coordination's own thread when the lead is lost: the next step
        steps down, and every write before it fails its fencing check."""
        self.log.warning("the lead was lost (instance %s)", self.identity.id)
        self.wake()

    def step_down(self, why: str) -> None:
        """Stop leading at once: write nothing more; running actions run on, detached, for
        the next leader to adopt (this instance too, if it leads again). `why` empty: said by
        the caller."""
        if why:
            self.log.warning("no longer leading (instance %s): %s; it stands by", self.identity.id, why)
        self._change_state(LeadState.RESTING)
        self.stepped_down()
        self.leadership.release()
        self.leader_looks = 0
        # A lead lost while the process lives came of its connection or its pace: a stand-by
        # whose own are sound takes over first (it tries every STANDBY_RETRY).
        self.rest_until = self.monotonic() + LOST_LEAD_PAUSE

    def close(self) -> None:
        """Hand the workspace over at once and leave it (the caller stopped its writers)."""
        self._change_state(LeadState.CLOSED)
        self.leadership.release()
        self.membership.leave()

    # -- what is said ----------------------------------------------------------------------

    def _unreachable(self, exc: Exception) -> None:
        if self.trouble is None:
            self.log.warning("%s; standing by until it answers", exc)
        self.trouble = str(exc)

    def _reachable(self) -> None:
        if self.trouble is not None:
            self.log.info("the coordination service answers again")
        self.trouble = None

    def _say_standing_by(self) -> None:
        """Say once who leads instead, so a second `sidecar run` started by mistake is not a
        silent stand-by. The leader writes its file just after taking the lock: it is looked
        for a few times before the line is said without it."""
        if self.leader_looks > LEADER_LOOKS:
            return
        self.leader_looks += 1
        try:
            other = instances.leader(self.ws, self.identity.id)
        except Unreachable:
            return  # said by `_unreachable`
        if other is None and self.leader_looks <= LEADER_LOOKS:
            return
        self.leader_looks = LEADER_LOOKS + 1
        who = "another instance"
        if other is not None:
            where = f" on {other.hostname}" if other.hostname != self.identity.hostname else ""
            who += f" (pid {other.pid}{where}, started {other.started_at})"
        self.log.info("%s leads; this one stands by (instance %s)", who, self.identity.id)
