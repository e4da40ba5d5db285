"""Small transcripts written in the shapes the real hosts write (Claude Code 2.1.328's JSONL,
Codex 0.169.0's rollout), with the figures a test chooses."""

from __future__ import annotations

import uuid
from pathlib import Path

import orjson


def claude_turn(message_id: str, model: str, at: str, usage: dict[str, int], session: str = "s1") -> bytes:
    """One turn of a Claude Code transcript: the user's prompt, then the assistant's message
    written once per content block (two here), as 2.1.328 writes it."""
    prompt = {"parentUuid": None, "isSidechain": False, "type": "user", "uuid": str(uuid.uuid4()),
              "timestamp": at, "message": {"role": "user", "content": "go on"}, "sessionId": session,
              "version": "2.1.328", "cwd": "/home/dev/proj"}
    lines = [prompt]
    for block in ({"type": "thinking", "thinking": "..."}, {"type": "text", "text": "All done."}):
        lines.append({
            "parentUuid": prompt["uuid"], "isSidechain": False, "type": "assistant",
            "uuid": str(uuid.uuid4()), "timestamp": at, "sessionId": session, "version": "2.1.328",
            "requestedModel": model, "message": {
                "id": message_id, "type": "message", "role": "assistant", "model": model,
                "content": [block], "stop_reason": "end_turn",
                "usage": {"input_tokens": usage.get("input", 0),
                          "cache_creation_input_tokens": usage.get("cacheWrite", 0),
                          "cache_read_input_tokens": usage.get("cacheRead", 0),
                          "output_tokens": usage.get("output", 0), "service_tier": "standard",
                          "cache_creation": {"ephemeral_1h_input_tokens": 0,
                                             "ephemeral_5m_input_tokens": usage.get("cacheWrite", 0)}}}})
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


def write_claude(path: Path, *turns: bytes) -> str:
    path.write_bytes(b"".join(turns))
    return str(path)


def codex_turn(model: str, at: str, totals: dict[str, int], *, repeat: bool = False) -> bytes:
    """One turn of a Codex rollout: its `turn_context` (the model), then the `token_count`
    event with the session's running totals (Codex's input counts the cached tokens);
    `repeat`: Codex sends the same count twice."""
    turn_id = str(uuid.uuid4())
    usage = {"input_tokens": totals["input"], "cached_input_tokens": totals["cached"],
             "cache_write_input_tokens": 0, "output_tokens": totals["output"],
             "reasoning_output_tokens": 0, "total_tokens": totals["input"] + totals["output"]}
    lines = [
        {"timestamp": at, "type": "turn_context", "payload": {
            "turn_id": turn_id, "cwd": "/home/dev/proj", "approval_policy": "never", "model": model,
            "collaboration_mode": {"mode": "default", "settings": {"model": model}}}},
        {"timestamp": at, "type": "event_msg", "payload": {"type": "task_started", "turn_id": turn_id}},
        {"timestamp": at, "type": "event_msg", "payload": {
            "type": "token_count", "info": {"total_token_usage": usage, "last_token_usage": usage,
                                            "model_context_window": 258400},
            "rate_limits": {"limit_id": "codex", "primary": None}}},
    ]
    if repeat:
        lines.append(lines[-1])
    lines.append({"timestamp": at, "type": "event_msg", "payload": {
        "type": "task_complete", "turn_id": turn_id, "last_agent_message": "done"}})
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


def write_codex(path: Path, *turns: bytes) -> str:
    meta = {"timestamp": "2026-08-20T17:00:00.000Z", "type": "session_meta",
            "payload": {"id": "0199a213-81c0-7800-8aa1-bbab2a035a53", "cli_version": "0.169.0"}}
    path.write_bytes(orjson.dumps(meta) + b"\n" + b"".join(turns))
    return str(path)
