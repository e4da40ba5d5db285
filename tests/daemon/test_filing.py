"""Every event is filed under the right host, session and name: whatever the payload nests,
and for every recorded payload of all five hosts.
"""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import FIXTURES, emit, fixture_payload, inbox_files, read_json, wait_until
from sidecar import emit as emit_mod
from sidecar.base.ids import harness_id
from sidecar.hosts.hermes import event_for
from sidecar.inbox import events
from support.node_plugin import run_opencode_plugin

LOOK_ALIKES = ["host", "ts", "session_id", "sessionId", "thread-id", "cwd", "sidecarHookId",
               "hook_event_name", "event", "type", "hook", "payload", "sidecarEnvelope"]
ROUTING = set(LOOK_ALIKES)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                    st.floats(allow_nan=False, allow_infinity=False),
                    st.text(max_size=12), st.sampled_from(["/other/ws", "evil-id", "SessionEnd"]))
keys = st.one_of(st.sampled_from(LOOK_ALIKES), st.text(max_size=8))
nested = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=5)), max_leaves=25)
session_ids = st.from_regex(r"[A-Za-z0-9._:][A-Za-z0-9._:-]{0,39}", fullmatch=True).filter(
    lambda s: s not in (".", ".."))
names = st.sampled_from(["SessionStart", "PostToolUse", "Stop", "SessionEnd", "AfterTool",
                         "something-new"])
extras = st.dictionaries(st.text(max_size=10).filter(lambda k: k not in ROUTING), nested,
                         max_size=4)


@settings(max_examples=300, deadline=None)
@given(name=names, session=session_ids, extra=extras, before=extras,
       order=st.permutations(["hook_event_name", "session_id", "cwd"]),
       ascii_only=st.booleans(), indent=st.sampled_from([None, 2]),
       source=st.sampled_from(["claude-code", "codex", "gemini"]))
def test_nested_look_alike_keys_never_file_an_event_elsewhere(name, session, extra, before, order,
                                                              ascii_only, indent, source):
    own = {"hook_event_name": name, "session_id": session, "cwd": "/the/real/ws"}
    # Look-alike keys at any depth, before and after the real ones, in any order.
    payload = {**{f"a{k}": v for k, v in before.items()}, **{k: own[k] for k in order},
               "tool_input": {"nested": extra, **{k: "/other/ws" for k in LOOK_ALIKES}},
               **extra}
    text = json.dumps(payload, ensure_ascii=ascii_only, indent=indent)
    data, _, cwd = emit_mod.build_event({"source": source}, [text])
    assert data is not None and cwd == "/the/real/ws"
    event = events.parse(data, "f.json", 0.0)
    assert (event.name, event.host, event.session_id, event.hook_id) == (name, source, session, None)
    assert event.payload == payload


HOOK_FIXTURES = [
    (host, path) for host, folder in (("claude-code", "claude-code-2.1.328"),
                                      ("codex", "codex-0.169.0"), ("gemini", "gemini-cli-0.61.0"))
    for path in sorted((FIXTURES / folder).glob("*.json"))
]


@pytest.mark.parametrize("host,path", HOOK_FIXTURES, ids=lambda v: getattr(v, "name", v))
def test_every_recorded_hook_payload_is_filed_under_its_own_host_and_session(workspace, host, path):
    raw = path.read_bytes()
    payload = orjson.loads(raw)
    expected = payload.get("session_id") or payload.get("thread-id")
    args = ("--source", host, raw.decode()) if path.name == "notify.json" else ("--source", host)
    assert emit(workspace.root, None if path.name == "notify.json" else raw, *args,
                cwd=workspace.root).returncode == 0
    [dropped] = inbox_files(workspace)
    event = events.parse(dropped.read_bytes(), dropped.name, 0.0)
    assert (event.host, event.session_id) == (host, expected)


def test_every_recorded_hermes_callback_is_filed_under_its_own_session():
    seen = 0
    for path in sorted((FIXTURES / "hermes-agent-0.19.0").glob("on_*.json")):
        recorded = json.loads(path.read_bytes())
        for call in recorded["calls"]:
            event = event_for(recorded["hook"], call["kwargs"])
            if call["kwargs"].get("session_id") is None:
                assert event is None  # nothing to name: the plugin sends nothing
                continue
            parsed = events.parse(orjson.dumps(event), "f.json", 0.0)
            assert (parsed.host, parsed.session_id) == ("hermes", call["kwargs"]["session_id"])
            seen += 1
    assert seen > 10


NODE_HARNESS = """
import fs from "node:fs"
const [plugin, fixtures] = process.argv.slice(2)
const { SidecarPlugin } = await import(plugin)
const hooks = await SidecarPlugin({ directory: process.cwd() })
for (const name of fs.readdirSync(fixtures).sort()) {
  // The recordings name their project /home/dev/proj: here it is this workspace.
  const text = fs.readFileSync(`${fixtures}/${name}`, "utf8").replaceAll("/home/dev/proj", process.cwd())
  const data = JSON.parse(text)
  if (name === "hook.tool.execute.after.json") await hooks["tool.execute.after"](data.input, data.output)
  else if (data.type) await hooks.event({ event: data })
}
"""


def test_every_recorded_opencode_event_is_filed_under_its_own_session(workspace, tmp_path):
    run_opencode_plugin(workspace.root, tmp_path, NODE_HARNESS, str(FIXTURES / "opencode-1.18.33"))
    recorded = {json.loads(p.read_bytes()).get("properties", {}).get("sessionID")
                for p in (FIXTURES / "opencode-1.18.33").glob("*.json")} - {None}
    filed = [events.parse(p.read_bytes(), p.name, 0.0) for p in inbox_files(workspace)]
    assert {e.host for e in filed} == {"opencode"}
    assert {e.session_id for e in filed} == recorded | {"ses_dd4eb9821ffexaylvILs17A4yF"}
    ends = [e for e in filed if e.kind == "session-end"]  # written at the process's exit
    assert sorted(e.session_id for e in ends) == sorted({e.session_id for e in filed})
    assert all(e.host_pid is not None and e.host_pid > 1 for e in filed)
    assert len({(e.host_pid, e.host_start) for e in filed}) == 1  # the one opencode process


def test_clear_ends_one_session_and_starts_the_next_and_a_triple_quit_is_harmless(
        workspace, start_daemon):
    """Gemini's own recorded payloads for /clear then /quit, through the real emit."""
    start_daemon(workspace.root)

    def fixture(name, **changes):
        payload = json.loads(fixture_payload(f"gemini-cli-0.61.0/{name}"))
        return {**payload, "cwd": str(workspace.root), **changes}

    old = fixture("SessionEnd.clear.json")["session_id"]
    new = fixture("SessionStart.clear.json")["session_id"]
    quit_end = fixture("SessionEnd.json", session_id=new)  # /quit: SessionEnd(exit), three times
    for payload in (fixture("SessionStart.json", session_id=old), fixture("SessionEnd.clear.json"),
                    fixture("SessionStart.clear.json"), quit_end, quit_end, quit_end):
        assert emit(workspace.root, json.dumps(payload).encode(), "--source", "gemini").returncode == 0
    records = {sid: workspace.session_dir(harness_id("gemini", sid)) / "session.json"
               for sid in (old, new)}
    wait_until(lambda: all(p.exists() for p in records.values())
               and not list(workspace.inbox.glob("*.json")), 20)
    assert read_json(records[old])["metadata"]["sidecar"]["completionReason"] == "clear"
    assert read_json(records[new])["metadata"]["sidecar"]["completionReason"] == "exit"
    trace = [json.loads(line)["event"] for line in
             records[new].with_name("trace.jsonl").read_bytes().splitlines()]
    assert trace.count("session.completed") == 1  # the second and third /quit ends change nothing
    queued = sorted(e["sessionId"] for e in read_json(workspace.hooks_file)["pending"])
    assert queued == sorted([old, new])  # one post-task each
