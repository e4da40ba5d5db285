"""Who leads a workspace (daemon/lead.py), stepped in process with an explicit monotonic clock
and a coordination service held in memory: the file backend's membership (life locks and
instance files), with a lead that the test can let lapse or make unreachable, as Redis's can.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import pytest

from helpers import read_json
from sidecar.base.ids import harness_id
from sidecar.base.wslog import WorkspaceLog
from sidecar.coordination import current, instances
from sidecar.coordination.base import Conflict, LeaseLost, Unreachable
from sidecar.coordination.files import FileCoordination
from sidecar.coordination.instances import Identity, Reportable
from sidecar.daemon.lead import LOST_LEAD_PAUSE, Lead, LeadState
from sidecar.daemon.workspace import WorkspaceServer
from sidecar.layout import Workspace
from support.ingest import CONFIG, T0, Fixture
from support.loops import HandClock


class Service:
    """The one lock every instance's lead is taken on."""

    def __init__(self) -> None:
        self.holder: str | None = None
        self.reachable = True
        self.tries = 0
        self.leads: dict[str, MemoryLeadership] = {}

    def lapse(self) -> None:
        """The holder's lease expires (its connection stalled): anyone may take the lead."""
        lost = self.leads[self.holder] if self.holder is not None else None
        self.holder = None
        if lost is not None:
            lost.on_lost()


class MemoryLeadership:
    term = ""

    def __init__(self, service: Service, instance_id: str, on_lost: Callable[[], None]) -> None:
        self.service = service
        self.id = instance_id
        self.on_lost = on_lost

    def try_acquire(self) -> bool:
        self.service.tries += 1
        if not self.service.reachable:
            raise Unreachable("memory", "it does not answer")
        if self.service.holder is None:
            self.service.holder = self.id
        return self.service.holder == self.id

    def check(self) -> None:
        if self.service.holder != self.id:
            raise LeaseLost(f"instance {self.id} no longer leads")

    def held(self) -> bool:
        return self.service.holder == self.id

    def claim_lives(self, claimer: str) -> bool:
        return claimer == self.service.holder

    def release(self) -> None:
        if self.service.holder == self.id:
            self.service.holder = None


class MemoryCoordination(FileCoordination):
    said = ", through memory"

    def __init__(self, look_every: float = 0.0) -> None:
        super().__init__()
        self.service = Service()
        self.look_every = look_every

    def leadership(self, ws, instance_id, on_lost):  # type: ignore[override]
        self.service.leads[instance_id] = MemoryLeadership(self.service, instance_id, on_lost)
        return self.service.leads[instance_id]


class Writer:
    """What a leader writes through, fenced the way the workspace fences its stores."""

    def __init__(self) -> None:
        self.fence: Callable[[], None] = self.no_lead
        self.written: list[str] = []

    @staticmethod
    def no_lead() -> None:
        raise LeaseLost("not leading")

    def write(self, what: str) -> None:
        self.fence()
        self.written.append(what)


class Instance:
    """One instance's lead of the workspace, wired as the workspace server wires it."""

    def __init__(self, ws: Workspace, backend: MemoryCoordination, clock: HandClock,
                 taken: Callable[[float], None] | None = None) -> None:
        self.writer = Writer()
        self.woken = 0
        self.identity = Identity(build="test")
        self.extra_take = taken
        self.lead = Lead(ws, self.identity, backend, WorkspaceLog(ws.root), self._taken,
                         self._stepped_down, self._wake, clock)
        self.lead.join()

    def _taken(self, now: float) -> None:
        self.writer.fence = self.lead.leadership.check
        self.beat()
        if self.extra_take is not None:
            self.extra_take(now)

    def _stepped_down(self) -> None:
        self.writer.fence = Writer.no_lead

    def _wake(self) -> None:
        self.woken += 1

    def beat(self) -> None:
        self.lead.beat(Reportable(self.lead.role, {}, "", None, {}, {}, self.lead.trouble))


@pytest.fixture
def backend() -> Iterator[MemoryCoordination]:
    backend = MemoryCoordination()
    current.use(backend)  # what the instance files' liveness is asked of
    yield backend
    current.reset()


@pytest.fixture
def clock() -> HandClock:
    clock = HandClock()
    clock.now = 100.0
    return clock


@pytest.fixture
def instance(ws, backend, clock) -> Iterator[Callable[..., Instance]]:
    """Instances of the workspace, closed at the end (their life locks are open files)."""
    made: list[Instance] = []

    def make(taken: Callable[[float], None] | None = None) -> Instance:
        made.append(Instance(ws, backend, clock, taken))
        return made[-1]

    yield make
    for one in made:
        if one.lead.state is not LeadState.CLOSED:
            one.lead.close()


def test_the_first_to_try_leads_and_the_other_stands_by_saying_who_leads(ws, instance, caplog):
    caplog.set_level(logging.INFO)
    a, b = instance(), instance()
    assert a.lead.step(T0) is True
    assert f"leading (instance {a.identity.id}, through memory)" in caplog.text
    assert b.lead.step(T0) is False and b.lead.state is LeadState.STANDING_BY
    b.beat()
    assert instances.leader(ws, b.identity.id).id == a.identity.id
    assert read_json(b.lead.membership.file)["role"] == "standby"
    assert f"(pid {a.identity.pid}, started" in caplog.text
    assert f"leads; this one stands by (instance {b.identity.id})" in caplog.text
    for _ in range(20):
        b.lead.step(T0)
    assert caplog.text.count("this one stands by") == 1  # said once, not at every look


def test_a_standby_says_who_leads_without_its_file_after_a_few_looks(instance, backend, caplog):
    caplog.set_level(logging.INFO)
    backend.service.holder = "elsewhere"  # a leader whose instance file is not written yet
    b = instance()
    for _ in range(10):
        b.lead.step(T0)
    assert "stands by" not in caplog.text
    b.lead.step(T0)
    assert f"another instance leads; this one stands by (instance {b.identity.id})" in caplog.text


def test_closing_a_leader_hands_the_lead_over_at_once_to_a_standbys_next_step(instance, backend):
    a, b = instance(), instance()
    a.lead.step(T0)
    b.lead.step(T0)
    a.lead.close()
    assert a.lead.state is LeadState.CLOSED and not a.lead.membership.file.exists()
    assert backend.service.holder is None
    assert b.lead.step(T0 + 0.2) is True
    b.writer.write("applied")
    assert read_json(b.lead.membership.file)["role"] == "leader"
    with pytest.raises(AssertionError):
        a.lead.close()  # closed once: a second close is a bug


def test_a_lapsed_lease_deposes_the_leader_which_writes_nothing_more_and_rests(instance, backend,
                                                                               caplog):
    a, b = instance(), instance()
    a.lead.step(T0)
    a.writer.write("before")
    backend.service.lapse()
    assert a.woken == 1  # its loop is told at once, from the coordination's thread
    assert f"the lead was lost (instance {a.identity.id})" in caplog.text
    with pytest.raises(LeaseLost):
        a.writer.write("after")  # before its next step: the fence refuses
    assert b.lead.step(T0 + 0.1) is True  # a stand-by takes over at its next try
    assert a.lead.step(T0 + 0.1) is False and a.lead.state is LeadState.RESTING
    assert f"no longer leading (instance {a.identity.id}): the lead was lost" in caplog.text
    with pytest.raises(LeaseLost):
        a.writer.write("after")
    b.writer.write("by the new leader")
    assert a.writer.written == ["before"] and b.writer.written == ["by the new leader"]


def test_a_deposed_leader_tries_again_only_after_its_pause(instance, backend, clock):
    a = instance()
    a.lead.step(T0)
    backend.service.lapse()  # nobody else takes it: the lock is free at once
    tries = backend.service.tries
    assert a.lead.step(T0) is False
    clock.now += LOST_LEAD_PAUSE - 0.01
    assert a.lead.step(T0 + 1) is False and backend.service.tries == tries  # not even tried
    clock.now += 0.01
    assert a.lead.step(T0 + 2) is True and a.lead.state is LeadState.LEADING
    a.writer.write("again")


def test_an_unreachable_service_keeps_an_instance_standing_by_said_once(instance, backend, caplog):
    caplog.set_level(logging.INFO)
    backend.service.reachable = False
    a = instance()
    for _ in range(3):
        assert a.lead.step(T0) is False
    assert a.lead.trouble == "coordination memory unreachable: it does not answer"
    assert caplog.text.count("it does not answer; standing by until it answers") == 1
    a.beat()
    assert read_json(a.lead.membership.file)["coordinationError"] == a.lead.trouble
    backend.service.reachable = True
    assert a.lead.step(T0) is True and a.lead.trouble is None
    assert "the coordination service answers again" in caplog.text


def test_a_take_over_that_meets_a_conflict_steps_down_and_frees_the_lead(instance, caplog):
    def conflicting(now: float) -> None:
        raise Conflict("the hooks record changed meanwhile")

    a = instance(conflicting)
    b = instance()
    assert a.lead.step(T0) is False and a.lead.state is LeadState.RESTING
    said = f"no longer leading (instance {a.identity.id}): the hooks record changed meanwhile"
    assert said in caplog.text
    with pytest.raises(LeaseLost):
        a.writer.write("x")
    assert b.lead.step(T0) is True  # the lead was given up, not held by a deposed leader


def test_a_standby_tries_for_the_lead_at_most_every_look_every(instance, backend, clock):
    backend.look_every = 0.005  # a try is a round trip (Redis)
    backend.service.holder = "elsewhere"
    b = instance()
    for _ in range(12):  # a step every millisecond (arrivals wake a stand-by)
        b.lead.step(T0)
        clock.now += 0.001
    assert backend.service.tries == 3  # at 0, 5 and 10 ms


def test_only_a_leader_can_step_down(instance):
    a = instance()
    with pytest.raises(AssertionError, match="STANDING_BY cannot become RESTING"):
        a.lead.step_down("never led")


def test_a_deposed_workspace_server_applies_nothing_and_its_successor_does(ws, backend):
    """Through the whole workspace: the stores are fenced by the lead."""
    a = WorkspaceServer(ws, lambda: CONFIG, Identity(build="test"))
    b = WorkspaceServer(ws, lambda: CONFIG, Identity(build="test"))
    a.open()
    b.open()
    try:
        f = Fixture(ws)
        a.step(T0)
        b.step(T0)
        assert a.lead.leading and not b.lead.leading
        backend.service.lapse()
        with pytest.raises(LeaseLost):
            a.sessions.fence()  # every write until its next step is refused
        f.drop("e1", "session-start", "s1", T0 + 1)
        a.notice_arrival()
        a.step(T0 + 1)  # finds its lead lost: steps down, applies nothing
        assert not a.lead.leading and len(list(ws.inbox.glob("*.json"))) == 1
        assert a.sessions.fence == a.sessions.no_lead  # it writes as a command would
        b.notice_arrival()
        b.step(T0 + 1)
        assert b.lead.leading and list(ws.inbox.glob("*.json")) == []
        assert f.record("s1")["id"] == harness_id("t", "s1")
        assert read_json(a.lead.membership.file)["role"] == "standby"
        assert read_json(b.lead.membership.file)["role"] == "leader"
    finally:
        a.close()
        b.close()
