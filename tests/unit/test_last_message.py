"""The assistant's last message: read from each host's recorded turn end, kept (its first
lines) in the session record at each turn end, and told in a notice."""

from __future__ import annotations

import orjson
import pytest

from helpers import fixture_payload
from sidecar.base.ids import harness_id
from sidecar.followups.notify import send
from sidecar.followups.queue import FollowUpQueue
from sidecar.followups.store import HookStore
from sidecar.inbox.events import parse
from sidecar.layout import Workspace
from sidecar.sessions.batch import open_batch
from sidecar.sessions.model import SessionRecord, SidecarMeta
from sidecar.sessions.rules import LAST_MESSAGE_CHARS, LAST_MESSAGE_LINES
from sidecar.sessions.store import SessionStore
from sidecar.vocabulary import EventKind, SessionChange

T0 = 1_796_115_000.0


def event(host: str, body: dict, ts: float = T0, file: str = "e.json"):
    """As `sidecar emit --source host` drops it."""
    wrapped = {"sidecarEnvelope": {"version": 1, "host": host, "ts": ts}, "payload": body}
    return parse(orjson.dumps(wrapped), file, ts)


def recorded(name: str) -> dict:
    return orjson.loads(fixture_payload(name))


# Each host's recorded turn end that carries the answer, and the answer it carries.
TURN_ENDS = [
    ("claude-code", "claude-code-2.1.328/Stop.json", "All done.\nDONE"),
    ("codex", "codex-0.169.0/Stop.json", "Stub: the command ran. Tool output was: Chunk ID: "
                                         "1bd342\nWall time: 0.0546 seconds"),
    ("qwen", "qwen-0.24.4/Stop.json", "Hello from the chat stub. You said: </system-reminder>"),
    ("gemini", "gemini-cli-0.61.0/AfterAgent.json", "Hello from the gemini stub. You said: "),
    ("cline", "cline-3.0.65/TaskComplete.json", "Hello from the chat stub. You said: say hi"),
]


@pytest.mark.parametrize(("host", "name", "starts"), TURN_ENDS)
def test_a_recorded_turn_end_carries_the_last_message(host, name, starts):
    ended = event(host, recorded(name))
    assert ended.kind is EventKind.TURN_END
    assert ended.last_message is not None and ended.last_message.startswith(starts)


def test_gemini_maps_its_answer_but_not_a_cancelled_turns_placeholder():
    answer = recorded("gemini-cli-0.61.0/AfterAgent.json")
    assert event("gemini", answer).fields["last_assistant_message"] == answer["prompt_response"]
    cancelled = event("gemini", recorded("gemini-cli-0.61.0/AfterAgent.cancelled.json"))
    assert cancelled.kind is EventKind.TURN_END and cancelled.last_message is None
    # only a turn end's answer: BeforeAgent's prompt is the user's words
    assert event("gemini", recorded("gemini-cli-0.61.0/BeforeAgent.json")).last_message is None


def test_codexs_notify_program_and_a_subagents_turn_end():
    notified = event("codex", recorded("codex-0.169.0/notify.json"))
    assert notified.kind is EventKind.TURN_END
    assert notified.last_message is not None and notified.last_message.endswith("hello-from-stub")
    # a subagent's answer is not the session's (it names the subagent's own transcript)
    assert event("codex", recorded("codex-0.169.0/SubagentStop.json")).last_message is None


def apply(store: SessionStore, *events) -> SessionRecord:
    for ev in events:
        with open_batch(store) as batch:
            batch.plan([ev])
            assert not batch.commit({}, ev.ts).retry
    record = store.load_session(harness_id(events[0].host, events[0].session_id))
    assert record is not None
    return record


def test_the_record_keeps_the_first_lines_at_each_turn_end(workspace):
    store = SessionStore(workspace, durable=False)
    stop = recorded("claude-code-2.1.328/Stop.json")
    sid = stop["session_id"]
    long = "\n".join(f"line {n} " + "x" * 20 for n in range(1, 12))
    record = apply(store, event("claude-code", recorded("claude-code-2.1.328/UserPromptSubmit.json")
                                | {"session_id": sid}, T0, "0.json"),
                   event("claude-code", stop, T0 + 1, "1.json"))
    assert record.sidecar.last_message == "All done.\nDONE"

    # the next turn's answer replaces it, capped to its first lines
    record = apply(store, event("claude-code", stop | {"last_assistant_message": "\n\n" + long},
                                T0 + 2, "2.json"))
    kept = record.sidecar.last_message
    assert kept is not None and kept.splitlines() == long.splitlines()[:LAST_MESSAGE_LINES]
    wide = apply(store, event("claude-code", stop | {"last_assistant_message": "y" * 5000},
                              T0 + 3, "3.json")).sidecar.last_message
    assert wide == "y" * LAST_MESSAGE_CHARS

    # a turn end that carries none, a subagent's, or a failed turn's text leave it as it was
    subagent = stop | {"hook_event_name": "SubagentStop", "agent_transcript_path": "/t/a.jsonl",
                       "last_assistant_message": "a subagent's answer"}
    failed = recorded("claude-code-2.1.328/StopFailure.rate_limit.json") | {"session_id": sid}
    record = apply(store, event("claude-code", {k: v for k, v in stop.items()
                                                if k != "last_assistant_message"}, T0 + 4, "4.json"),
                   event("claude-code", subagent, T0 + 5, "5.json"),
                   event("claude-code", failed, T0 + 6, "6.json"))
    assert record.sidecar.last_message == wide

    # it survives the record's round trip, under its own key
    on_disk = orjson.loads((workspace.session_dir(record.id) / "session.json").read_bytes())
    assert on_disk["metadata"]["sidecar"]["lastMessage"] == wide
    meta = SidecarMeta(last_message="a\nb")
    assert meta.to_json()["lastMessage"] == "a\nb"
    assert SidecarMeta.from_json(meta.to_json()) == meta
    assert "lastMessage" not in SidecarMeta().to_json()


def test_a_notice_keeps_the_last_message_of_its_transition(tmp_path):
    ws = Workspace(tmp_path)
    ws.ensure_runtime()
    ws.hooks_file.write_bytes(orjson.dumps({"version": 1, "pending": [], "hooks": {"told": {
        "id": "told", "name": "told", "event": "session-end",
        "action": {"notify": "http://127.0.0.1:1/x"}}}}))
    queue = FollowUpQueue(HookStore(ws, durable=False), "me")
    queue.add([SessionChange(EventKind.SESSION_END, "claude-code", "s1", "h1", T0,
                             event_file="e.json", last_message="All done.\nDONE")], T0)
    [entry] = queue.view(T0).pending
    assert entry.extra["notice"]["lastMessage"] == "All done.\nDONE"


def test_the_notice_tells_the_last_message_after_its_summary_line():
    job = {"host": "claude-code", "sessionId": "0123456789abcdef", "workspace": "/w/proj",
           "tokens": {"input": 10}, "lastMessage": "\n".join(f"l{n}" for n in range(9)),
           "notice": {"event": "session-end", "reason": "exit"}}
    text = send.words(job, T0)
    assert text.body.splitlines() == ["proj · claude-code session 0123456789ab",
                                      "l0", "l1", "l2", "l3", "l4", "tokens input 10"]
    assert send.webhook_body(job, text)["lastMessage"] == "l0\nl1\nl2\nl3\nl4"
    assert "lastMessage" not in send.webhook_body({**job, "lastMessage": ""}, text)
