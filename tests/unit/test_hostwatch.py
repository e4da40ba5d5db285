"""The host watch: which sessions a host process holds, and which of them its exit ends."""

from __future__ import annotations

from sidecar.daemon.hostwatch import HostWatch
from sidecar.procwatch import Proc
from sidecar.vocabulary import EventKind, SessionChange

HOST = Proc(4242, 1000)
OTHER = Proc(4343, 2000)


def change(kind, session="s1", pid=None, start=None):
    return SessionChange(kind=kind, host="codex", session_id=session, harness_session_id="h-" +
                         session, ts=0.0, host_pid=pid, host_start=start)


def test_a_host_named_by_events_is_watched_once_and_its_exit_ends_its_sessions():
    asked = []
    hosts = HostWatch(asked.append)
    hosts.note([change(EventKind.SESSION_START, "s1", HOST.pid, HOST.start),
                change(EventKind.TURN_END, "s1", HOST.pid, HOST.start),
                change(EventKind.SESSION_START, "s2", HOST.pid, HOST.start)])
    assert asked == [HOST]  # one watch for the process, however many events name it
    assert hosts.ended() == []  # nothing exited yet
    hosts.exited(HOST)
    assert hosts.ended() == [(HOST, [("codex", "s1"), ("codex", "s2")])]
    hosts.exited(HOST)
    assert hosts.ended() == [(HOST, [])]  # forgotten: its sessions are not ended twice


def test_a_session_that_ended_is_not_ended_again_by_its_host_exit():
    hosts = HostWatch()
    hosts.note([change(EventKind.SESSION_START, "s1", HOST.pid, HOST.start),
                change(EventKind.SESSION_START, "s2", HOST.pid, HOST.start)])
    hosts.note([change(EventKind.SESSION_END, "s1")])
    hosts.exited(HOST)
    assert hosts.ended() == [(HOST, [("codex", "s2")])]


def test_a_resumed_session_moves_to_its_new_host_process():
    asked = []
    hosts = HostWatch(asked.append)
    hosts.follow(HOST, ("codex", "s1"))
    hosts.follow(OTHER, ("codex", "s1"))  # resumed by another process
    assert asked == [HOST, OTHER]
    hosts.exited(HOST)
    assert hosts.ended() == [(HOST, [])]  # the old process's exit ends nothing
    hosts.exited(OTHER)
    assert hosts.ended() == [(OTHER, [("codex", "s1")])]


def test_an_exit_of_a_process_it_does_not_hold_says_nothing():
    hosts = HostWatch()
    hosts.note([change(EventKind.SESSION_START, "s1")])  # no host pid: nothing to watch
    hosts.exited(OTHER)  # an action's process, say
    assert hosts.ended() == [(OTHER, [])]
