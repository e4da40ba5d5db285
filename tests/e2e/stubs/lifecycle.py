"""The whole promise, asserted the same way for every host's end-to-end test.

tracked -> completed by its own end -> the follow-up fired once -> the resumed run carried the
earlier turn -> nothing queued again.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from helpers import read_json, run_cli, wait_until
from sidecar.base.ids import harness_id

MARKER = "POST-TASK-MARKER-5b1e"
# The prompt a host must receive, to the byte: quotes, two spaces and a line break included,
# since a host that re-quotes or re-splits an argument would change exactly these.
PROMPT = f'{MARKER}: save memories and tidy up. Say "done"  when finished.\nThank you.'


def prepare_post_task(ws: Any, delay: int = 3) -> None:
    """A recognisable prompt, and a short delay so the test does not wait ten seconds (but
    over the 2 s a transcript must be quiet, so no postponement of a minute). Edited by hand,
    so trusted afterwards as the user would: `sidecar hooks trust --yes` after seeing it."""
    (ws.prompts / "post-task.md").write_text(f"---\ndescription: test prompt\n---\n{PROMPT}\n")
    doc = read_json(ws.hooks_file)
    doc["hooks"]["post-task"]["delaySeconds"] = delay
    ws.hooks_file.write_text(json.dumps(doc))
    trusted = run_cli("hooks", "trust", "--yes", "--root", str(ws.root))  # every enabled hook
    assert trusted.returncode == 0, trusted.stderr


def set_resume(config_home: Path, host: str, argv: list[str]) -> None:
    with open(config_home / "config.toml", "a") as config:
        config.write(f"[resume]\n{json.dumps(host)} = {json.dumps(argv)}\n")


def enable_limit_resume(ws: Any, config_home: Path, host: str, argv: list[str],
                        scale: float = 0.01) -> None:
    """resume-after-limit enabled, post-task 1 s after an end, both trusted as they stand, the
    back-off scaled by `scale` (0.01: a minute becomes 0.6 s), and `host` resumed by `argv`."""
    assert run_cli("hooks", "enable", "resume-after-limit", cwd=ws.root).returncode == 0
    prepare_post_task(ws, delay=1)
    with open(config_home / "config.toml", "a") as config:
        config.write(f"limitBackoffScale = {scale}\n")
    set_resume(config_home, host, argv)


def post_task(ws: Any) -> dict[str, Any]:
    return read_json(ws.hooks_file)["hooks"]["post-task"]


def limit_hook(ws: Any) -> dict[str, Any]:
    return read_json(ws.hooks_file)["hooks"]["resume-after-limit"]


def settled_record(ws: Any, host: str, session_id: str) -> Path:
    """The session's record, once it is written and its follow-up settled (`settled`)."""
    record: Path = ws.session_dir(harness_id(host, session_id)) / "session.json"
    wait_until(lambda: record.exists() and settled(ws), 120, 0.2)
    return record


def wait_for_the_limit_resume(ws: Any, timeout: float = 120) -> None:
    """`resume-after-limit` has an outcome and nothing is queued or unread; then 2 s more, in
    which a wrong post-task (1 s delay) would be queued and fire."""
    wait_until(lambda: limit_hook(ws)["lastStatus"] is not None and not read_json(ws.hooks_file)[
        "pending"] and not list(ws.inbox.glob("*.json")), timeout, 0.2)
    time.sleep(2)


def settled(ws: Any) -> bool:
    """The follow-up has an outcome, every event (the resumed run's too) is applied, and every
    session is completed: a resumed run's end may come after its outcome (its host's end hook
    still on its way, or its exit seen a second's grace later)."""
    return post_task(ws).get("lastStatus") not in (None,) and not list(ws.inbox.glob("*.json")) \
        and not read_json(ws.hooks_file)["pending"] \
        and all(read_json(record)["status"] == "completed" for record in ws.sessions.glob("*/session.json"))


def trace_lines(record_path: Path) -> list[dict[str, Any]]:
    """The session's trace, beside its record."""
    return [json.loads(line) for line in record_path.with_name("trace.jsonl").read_bytes().splitlines()]


def trace_events(record_path: Path) -> list[str]:
    return [line["event"] for line in trace_lines(record_path)]


def user_texts(body: dict[str, Any]) -> list[str]:
    """The text blocks of the last user message of a model request, in any API's shape:
    Anthropic messages and chat completions (`messages`), OpenAI responses (`input`),
    Gemini (`contents` of `parts`)."""
    for key, parts in (("messages", "content"), ("input", "content"), ("contents", "parts")):
        turns = [t for t in body.get(key) or [] if isinstance(t, dict) and t.get("role") == "user"]
        if turns:
            content = turns[-1].get(parts)
            if isinstance(content, str):
                return [content]
            return [c["text"] for c in content or [] if isinstance(c, dict)
                    and isinstance(c.get("text"), str)]
    return []


def assert_prompt_arrived_exactly(request: dict[str, Any]) -> None:
    """The resumed run's prompt reached the model as written in the prompt file."""
    texts = user_texts(request["body"])
    assert PROMPT in texts or PROMPT + "\n" in texts, texts


def carries_marker(request: dict[str, Any], latest_user_only: bool) -> bool:
    """Whether a model request carries the follow-up's prompt: anywhere in it, or (for a host
    whose own later requests send the whole conversation again, such as Qwen Code's memory
    extraction after every turn) in its latest user message, where a turn's prompt goes."""
    if latest_user_only:
        return any(MARKER in text for text in user_texts(request["body"]))
    return MARKER in json.dumps(request["body"])


def assert_whole_lifecycle(ws: Any, record_path: Path, requests: list[dict[str, Any]],
                           first_prompt: str, end_reason: str | None = None,
                           latest_user_only: bool = False) -> dict[str, Any]:
    """Everything a user is promised about one session and its follow-up; returns the record.
    `latest_user_only`: the resumed turn is told by its latest user message (carries_marker)."""
    record = read_json(record_path)
    meta = record["metadata"]["sidecar"]
    assert record["status"] == "completed", record
    if end_reason is not None:
        assert meta["completionReason"] == end_reason
    assert "post-task" in meta["followUps"]
    hook = post_task(ws)
    assert [h["status"] for h in hook["history"]] == ["ok"], hook["history"]
    assert hook["history"][0]["sessionId"] == record["metadata"]["hostSessionId"]
    resumed = [r for r in requests if carries_marker(r, latest_user_only)]
    assert len(resumed) == 1, f"{len(resumed)} resumed requests reached the model"
    assert first_prompt in json.dumps(resumed[0]["body"]), "the resumed run lost the earlier turn"
    assert_prompt_arrived_exactly(resumed[0])
    assert read_json(ws.hooks_file)["pending"] == []  # the resumed run's own end queued nothing
    trace = trace_events(record_path)
    assert trace.count("session.completed") == 2  # the first run, then the resumed one
    assert "session.reopened" in trace
    log = Path(hook["history"][0]["log"]).read_text()
    assert record["metadata"]["hostSessionId"] in log
    return record


def assert_resumed_after_limit(ws: Any, host: str, session_id: str, answered: list[dict[str, Any]],
                               latest_user_only: bool = False) -> dict[str, Any]:
    """resume-after-limit fired once, ok, for the session; of the `answered` model requests
    exactly one is its resumed turn (told by its latest user message with `latest_user_only`),
    which carries the first prompt, the same conversation; no post-task ran; the record is
    completed and its limit gone. Returns the record."""
    assert [(h["status"], h["sessionId"]) for h in limit_hook(ws)["history"]] == [("ok", session_id)]
    resumed = [r for r in answered if any(
        "Continue where you left off" in text for text in
        (user_texts(r["body"]) if latest_user_only else [json.dumps(r["body"])]))]
    assert len(resumed) == 1 and "remember banana" in json.dumps(resumed[0]["body"])
    assert post_task(ws)["history"] == []
    record = read_json(ws.session_dir(harness_id(host, session_id)) / "session.json")
    assert record["status"] == "completed" and "limit" not in record["metadata"]["sidecar"]
    return record
