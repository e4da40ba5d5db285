"""The options `sidecar hooks add` and `hooks update` share, and the hook fields they set."""

from __future__ import annotations

from typing import Any, NoReturn

import typer

from sidecar.base.exitcodes import FAILURE
from sidecar.base.timeutil import parse_duration
from sidecar.cli.common import fail


def _refuse(message: str) -> NoReturn:
    fail(message, FAILURE, "sidecar hooks")


def delay_seconds(text: str) -> int:
    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        _refuse(str(exc))
    if seconds != int(seconds):
        _refuse(f"delay must be whole seconds, not {text!r}")
    return int(seconds)


def options(event: str | None, delay: str | None, prompt_file: str | None, no_prompt: bool,
             skip_cron: bool | None, skip_subagents: bool | None, max_context_k: int | None,
             command: list[str]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if event is not None:
        fields["event"] = event
    if delay is not None:
        fields["delaySeconds"] = delay_seconds(delay)
    if no_prompt:
        fields["promptFile"] = None
    elif prompt_file is not None:
        fields["promptFile"] = prompt_file
    if skip_cron is not None:
        fields["skipCron"] = skip_cron
    if skip_subagents is not None:
        fields["skipSubagents"] = skip_subagents
    if max_context_k is not None:
        fields["maxContextK"] = max_context_k
    if command:
        fields["action"] = list(command)
    return fields


EventOpt = typer.Option(None, "--event", metavar="EVENT",
                        help="session-end (default), session-start, session-reset, turn-end, "
                        "turn-failed or tool-use; a notify hook: session-end, turn-end, "
                        "needs-input, turn-failed, follow-up-failed, resume-started or over-budget.")
DelayOpt = typer.Option(None, "--delay", metavar="SECONDS",
                        help="Seconds (or 30s, 5m, 1h) after the event; 0..86400.")
PromptOpt = typer.Option(None, "--prompt-file", metavar="FILE",
                         help="A .md file under .context/hooks/, e.g. hooks/post-task.md.")
NoPromptOpt = typer.Option(False, "--no-prompt", help="The hook has no prompt file.")
CronOpt = typer.Option(None, "--skip-cron/--no-skip-cron", help="Skip sessions started by cron.")
SubagentOpt = typer.Option(None, "--skip-subagents/--no-skip-subagents", help="Skip subagent sessions.")
ContextOpt = typer.Option(None, "--max-context-k", metavar="THOUSANDS",
                          help="Skip transcripts over this many thousand tokens (0: no cap).")
ResumeOpt = typer.Option(False, "--resume", help="Make the action `resume` again.")
ReasonsOpt = typer.Option(None, "--reasons", metavar="REASONS",
                          help="End reasons that queue a session-end hook, "
                          "comma-separated (e.g. exit,host-exited); `default`: all but stale.")
InterruptedOpt = typer.Option(None, "--also-interrupted/--not-interrupted",
                              help="Also fire for a session whose last turn never ended "
                              "(Ctrl-C, a kill); by default such a session is left alone.")
AgainOpt = typer.Option(None, "--again-after-user-turn/--once-per-session",
                        help="Run again for a conversation once the user's own next turn "
                        "ends after it ran; by default a hook runs once per session.")


def turn_options(reasons: str | None, also_interrupted: bool | None, again: bool | None) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if reasons is not None:
        listed = [r.strip() for r in reasons.split(",") if r.strip()]
        if not listed:
            _refuse("--reasons needs at least one end reason (like exit,host-exited), or default")
        fields["reasons"] = None if listed == ["default"] else listed
    if also_interrupted is not None:
        fields["alsoInterrupted"] = also_interrupted
    if again is not None:
        fields["againAfterUserTurn"] = again
    return fields
