"""Follow-up hooks and plugins in a real daemon, driven through the real `sidecar emit`."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import orjson
import pytest

from helpers import SIDECAR, emit, end_session, read_json, run_cli, use_hooks, wait_for_json, wait_until
from sidecar.base.ids import harness_id


def command_hook(hook_id: str, argv: list[str], delay: int = 1, **fields) -> dict:
    return {"id": hook_id, "name": hook_id, "event": "session-end", "delaySeconds": delay,
            "promptFile": None, "action": argv, "enabled": True, **fields}


def recorder(path: Path) -> list[str]:
    """A command that appends the session id it was fired for to `path`."""
    return [sys.executable, "-c",
            "import os,sys; open(sys.argv[1],'a').write(os.environ['SIDECAR_SESSION_ID']+'\\n')",
            str(path)]


def lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def hook_status(ws, hook_id: str):
    return read_json(ws.hooks_file)["hooks"][hook_id].get("lastStatus")


def queue_one(workspace, start_daemon, hook: dict, session: str):
    """Start a daemon with only `hook` and end `session`, so the hook is queued; the daemon."""
    use_hooks(workspace, {hook["id"]: hook})
    daemon = start_daemon(workspace.root)
    end_session(workspace.root, session)
    wait_until(lambda: read_json(workspace.hooks_file)["pending"])
    return daemon


def test_fires_once_and_a_resumed_run_that_ends_again_does_not_requeue(workspace, start_daemon, tmp_path):
    fired = tmp_path / "fired.txt"
    # The action behaves like a resumed conversation: it starts and ends the same session
    # again, and also a session under a new id, through the real emit (which inherits
    # SIDECAR_HOOK_ID from the firing).
    script = (
        "import os,subprocess,sys\n"
        "open(sys.argv[1],'a').write(os.environ['SIDECAR_SESSION_ID']+'\\n')\n"
        "for sid in (os.environ['SIDECAR_SESSION_ID'], 'brand-new-id'):\n"
        "    for ev in ('session-start','session-end'):\n"
        "        subprocess.run([sys.argv[2],'emit',ev,'--session-id',sid,'--source','claude-code'],"
        " cwd=os.environ['SIDECAR_WORKSPACE'], check=True, capture_output=True)\n"
    )
    use_hooks(workspace, {"loop": command_hook("loop", [sys.executable, "-c", script, str(fired), SIDECAR])})
    start_daemon(workspace.root)
    end_session(workspace.root, "s1")
    wait_until(lambda: lines(fired) == ["s1"], 15)
    wait_until(lambda: hook_status(workspace, "loop") == "ok")
    # The resumed runs' events are all applied once the inbox is empty and both sessions are
    # completed; a wrong re-queue would now be in the queue (1 s delay) or have fired.
    wait_until(lambda: not list(workspace.inbox.glob("*.json")))
    for sid in ("s1", "brand-new-id"):
        record = workspace.session_dir(harness_id("claude-code", sid)) / "session.json"
        wait_until(lambda r=record: r.exists() and read_json(r)["status"] == "completed")
    assert read_json(workspace.hooks_file)["pending"] == []
    assert lines(fired) == ["s1"]


@pytest.mark.slow
def test_queued_entries_survive_a_restart_and_fire_once_after_it(workspace, start_daemon, tmp_path):
    fired = tmp_path / "fired.txt"
    first = queue_one(workspace, start_daemon, command_hook("later", recorder(fired), delay=4), "s-restart")
    assert first.stop() == 0
    assert lines(fired) == []
    assert len(read_json(workspace.hooks_file)["pending"]) == 1
    start_daemon(workspace.root)
    wait_until(lambda: hook_status(workspace, "later") == "ok", 15)
    # Fired and recorded: nothing is left in the queue that could fire it again.
    assert lines(fired) == ["s-restart"]
    assert read_json(workspace.hooks_file)["pending"] == []


@pytest.mark.slow
def test_a_hook_deleted_while_queued_never_fires(workspace, start_daemon, tmp_path):
    fired = tmp_path / "fired.txt"
    queue_one(workspace, start_daemon, command_hook("gone", recorder(fired), delay=3), "s-del")
    assert run_cli("hooks", "remove", "gone", "--root", str(workspace.root)).returncode == 0
    # A firing needs a queued entry to claim, and the removal took it out of the file.
    assert read_json(workspace.hooks_file)["pending"] == []
    assert lines(fired) == []


@pytest.mark.slow
def test_a_broken_hand_edit_is_kept_shown_and_taken_up_once_fixed(workspace, start_daemon, tmp_path):
    fired = tmp_path / "fired.txt"
    use_hooks(workspace, {"rec": command_hook("rec", recorder(fired), delay=1)})
    daemon = start_daemon(workspace.root)
    last_good = workspace.runtime / "hooks.last-good.json"
    wait_until(lambda: last_good.exists() and "rec" in read_json(last_good)["hooks"])
    good = workspace.hooks_file.read_bytes()
    broken = good.replace(b'"pending"', b'\n  oops "pending"', 1)
    assert broken != good
    workspace.hooks_file.write_bytes(broken)

    def shown_error():
        report = orjson.loads(run_cli("status", "--root", str(workspace.root), "--json").stdout)
        return report["workspaces"][0]["error"]

    assert "line" in wait_until(shown_error) and "column" in shown_error()
    end_session(workspace.root, "while-broken")
    wait_until(lambda: lines(fired) == ["while-broken"], 15)  # the last good hooks still work
    assert workspace.hooks_file.read_bytes() == broken  # never overwritten
    text = run_cli("status", "--root", str(workspace.root)).stdout.decode()
    assert "BROKEN" in text
    assert "hooks.json is broken" in daemon.output() and "column" in daemon.output()

    fixed = orjson.loads(good)
    fixed["hooks"]["rec"]["name"] = "fixed by hand"
    workspace.hooks_file.write_bytes(orjson.dumps(fixed))
    wait_until(lambda: shown_error() is None)
    end_session(workspace.root, "after-fix")
    wait_until(lambda: lines(fired) == ["while-broken", "after-fix"], 15)
    doc = read_json(workspace.hooks_file)
    assert doc["hooks"]["rec"]["name"] == "fixed by hand"
    assert doc["hooks"]["rec"]["lastStatus"] == "ok"


def test_an_action_that_runs_too_long_is_killed(workspace, start_daemon, config_home, tmp_path):
    with open(config_home / "config.toml", "a") as config:
        config.write("actionTimeout = 1\n")
    pid_file = tmp_path / "pid"
    use_hooks(workspace, {"slow": command_hook(
        "slow", ["sh", "-c", f"echo $$ > {pid_file}; sleep 60 & wait"], delay=0)})
    start_daemon(workspace.root)
    end_session(workspace.root, "s-slow")
    wait_until(lambda: hook_status(workspace, "slow") == "error: timed out after 1s", 20)
    pid = int(pid_file.read_text())
    wait_until(lambda: not Path(f"/proc/{pid}").exists() or
               Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z", 10)


def test_hostile_values_reach_the_command_unchanged(workspace, start_daemon, tmp_path):
    nasty_prompt = "line one\n$(touch pwned-prompt); rm -rf nothing `id` 'single' \"double\"\n"
    (workspace.prompts / "nasty.md").write_text("---\ntitle: x\n---\n" + nasty_prompt)
    literal = "literal; $(touch pwned-literal) 'q' \"dq\"\nsecond line"
    out = tmp_path / "argv.json"
    dump = "import json,sys; json.dump(sys.argv[1:], open(sys.argv[1],'w'))"
    use_hooks(workspace, {"argv": command_hook(
        "argv", [sys.executable, "-c", dump, str(out), "{prompt}", literal, "{session_id}"],
        delay=0, promptFile="hooks/nasty.md")})
    start_daemon(workspace.root)
    end_session(workspace.root, "s.with:odd-chars_1")
    assert wait_for_json(out, 15) == [str(out), nasty_prompt.strip(), literal, "s.with:odd-chars_1"]
    assert not list(workspace.root.rglob("pwned*")) and not list(tmp_path.rglob("pwned*"))


def test_actions_run_in_the_session_cwd_inside_the_workspace_only(workspace, start_daemon, tmp_path):
    sub = workspace.root / "pkg"
    sub.mkdir()
    out = tmp_path / "cwd.txt"
    use_hooks(workspace, {"cwd": command_hook(
        "cwd", ["sh", "-c", f'pwd >> {out}'], delay=0)})
    start_daemon(workspace.root)
    for session, cwd in (("inside", sub), ("outside", tmp_path)):
        payload = orjson.dumps({"event": "session-end", "session_id": session, "cwd": str(cwd)})
        emit(workspace.root, payload, "--source", "claude-code", "--root", str(workspace.root))
    wait_until(lambda: len(lines(out)) == 2, 15)
    assert sorted(lines(out)) == sorted([str(sub), str(workspace.root)])


def test_concurrency_limit_holds(workspace, start_daemon, config_home, tmp_path):
    with open(config_home / "config.toml", "a") as config:
        config.write("concurrency = 1\n")
    log = tmp_path / "spans.txt"
    span = [sys.executable, "-c",
            "import sys,time; a=time.time(); time.sleep(1); open(sys.argv[1],'a').write(f'{a} {time.time()}\\n')",
            str(log)]
    use_hooks(workspace, {"a": command_hook("a", span, delay=0), "b": command_hook("b", span, delay=0)})
    start_daemon(workspace.root)
    end_session(workspace.root, "s-conc")
    wait_until(lambda: len(log.read_text().splitlines()) == 2 if log.exists() else False, 20)
    (a0, a1), (b0, b1) = sorted(tuple(map(float, line.split())) for line in log.read_text().splitlines())
    assert b0 >= a1


def test_a_hooks_json_change_wakes_the_scheduler(workspace, start_daemon, tmp_path):
    fired = tmp_path / "fired.txt"
    queue_one(workspace, start_daemon, command_hook("rec", recorder(fired), delay=3600), "s-wake")
    doc = read_json(workspace.hooks_file)
    doc["pending"][0]["dueAt"] = "not a time"  # unreadable: counts as due
    workspace.hooks_file.write_bytes(orjson.dumps(doc))
    started = time.monotonic()
    wait_until(lambda: lines(fired) == ["s-wake"], 10)
    assert time.monotonic() - started < 5


PLUGIN_MODULE = '''
import json, os, time

class Recorder:
    def _log(self, name, **kwargs):
        with open(os.environ["PLUGIN_LOG"], "a") as f:
            f.write(json.dumps([name, kwargs.get("host"), kwargs.get("session_id"),
                                kwargs.get("hook_id")]) + "\\n")
    def on_session_start(self, **kw): self._log("start", **kw)
    def on_session_finalize(self, **kw): self._log("end", **kw)
    def on_session_reset(self, **kw): self._log("reset", **kw)
    def on_turn_end(self, **kw): self._log("turn", **kw)
    def on_tool_use(self, **kw): self._log("tool", **kw)
    def on_hook_fired(self, **kw): self._log("fired", **kw)

class Boom:
    def on_session_start(self, **kw): raise RuntimeError("plugin bug")
    def on_session_end(self, **kw): raise RuntimeError("plugin bug")

class Stuck:
    def on_turn_end(self, **kw): time.sleep(3600)

recorder, boom, stuck = Recorder(), Boom(), Stuck()
'''


def install_plugins(tmp_path: Path) -> Path:
    site = tmp_path / "plugins"
    site.mkdir()
    (site / "sidecar_test_plugins.py").write_text(PLUGIN_MODULE)
    info = site / "sidecar_test_plugins-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: sidecar-test-plugins\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[sidecar.plugins]\nboom = sidecar_test_plugins:boom\nstuck = sidecar_test_plugins:stuck\n"
        "recorder = sidecar_test_plugins:recorder\n")
    return site


def test_plugins_are_called_in_order_and_bad_ones_stop_nothing(workspace, start_daemon, config_home, tmp_path):
    with open(config_home / "config.toml", "a") as config:
        config.write("pluginTimeout = 1\n")
    site = install_plugins(tmp_path)
    plugin_log = tmp_path / "plugin.jsonl"
    fired = tmp_path / "fired.txt"
    use_hooks(workspace, {"rec": command_hook("rec", recorder(fired), delay=0)})
    env = {"PYTHONPATH": str(site), "PLUGIN_LOG": str(plugin_log)}
    start_daemon(workspace.root, env=env)
    # hermes: a turn, then /new: finalize of the old id, then reset to the new id.
    for event, session in (("on_session_start", "old"), ("on_session_end", "old"),
                           ("on_session_finalize", "old"), ("on_session_reset", "new")):
        payload = orjson.dumps({"event": event, "session_id": session, "platform": "cli"})
        emit(workspace.root, payload, "--source", "hermes")
    wait_until(lambda: lines(fired) == ["old"], 20)

    def calls():
        return [orjson.loads(line) for line in plugin_log.read_text().splitlines()] if plugin_log.exists() else []

    wait_until(lambda: any(c[0] == "fired" for c in calls()), 20)
    names = [(c[0], c[2]) for c in calls()]
    session_calls = [n for n in names if n[0] != "fired"]
    assert session_calls == [("start", "old"), ("turn", "old"), ("end", "old"), ("reset", "new")]
    assert names.count(("fired", "old")) == 1
    wait_until(lambda: orjson.loads(run_cli("status", "--root", str(workspace.root), "--json").stdout)
               ["workspaces"][0]["plugins"].get("stuck", {}).get("hangs"), 10)
    report = orjson.loads(run_cli("status", "--root", str(workspace.root), "--json").stdout)["workspaces"][0]
    assert report["plugins"]["boom"]["errors"] >= 2
    assert report["plugins"]["stuck"]["hangs"] >= 1
    assert report["sessions"]["completed"] == 1 and report["served"]


def test_status_shows_a_running_firing_and_kill_running_ends_it(workspace, start_daemon, tmp_path):
    use_hooks(workspace, {"slow": command_hook("slow", [sys.executable, "-c",
                                                        "import time; time.sleep(60)"], delay=0)})
    start_daemon(workspace.root)
    end_session(workspace.root, "s-run")

    def running():
        queue = orjson.loads(run_cli("status", "--root", str(workspace.root), "--json").stdout)[
            "workspaces"][0]["queue"]
        return queue[0]["running"] if queue and queue[0]["running"] else None

    run = wait_until(running, 15)
    assert run["alive"] is True and run["pid"] > 1
    text = run_cli("status", "--root", str(workspace.root)).stdout.decode()
    assert f"running pid {run['pid']}" in text
    result = run_cli("hooks", "kill-running", "--root", str(workspace.root))
    assert result.returncode == 0 and b"sent SIGTERM to slow" in result.stdout
    wait_until(lambda: hook_status(workspace, "slow"), 15)
    assert hook_status(workspace, "slow") == "error: exit status -15"


def test_hooks_history_and_status_session_tell_each_firings_story(workspace, start_daemon,
                                                                    tmp_path):
    fired = tmp_path / "fired.txt"
    failing = [sys.executable, "-c", "import sys; sys.exit(3)"]
    use_hooks(workspace, {"rec": command_hook("rec", recorder(fired), delay=0),
                          "bad": command_hook("bad", failing, delay=0)})
    daemon = start_daemon(workspace.root)
    end_session(workspace.root, "s-story")
    wait_until(lambda: hook_status(workspace, "rec") and hook_status(workspace, "bad"), 20)
    root = str(workspace.root)

    listed = orjson.loads(run_cli("hooks", "history", "--json", "--root", root).stdout)["firings"]
    assert {(f["hookId"], f["status"]) for f in listed} == {("rec", "ok"),
                                                            ("bad", "error: exit status 3")}
    assert all(f["sessionId"] == "s-story" and f["log"] for f in listed)
    only = run_cli("hooks", "history", "bad", "--session", "s-story", "--root", root).stdout.decode()
    assert "error: exit status 3" in only and "rec" not in only
    assert run_cli("hooks", "history", "nope", "--root", root).returncode == 1

    story = orjson.loads(run_cli("status", "--session", "s-story", "--json", "--root", root).stdout)
    assert story["status"] == "completed" and story["completionReason"] == "session-end"
    assert [t["event"] for t in story["timeline"]][-1] == "session.completed"
    assert {f["hookId"]: f["state"] for f in story["followUps"]} == {
        "rec": "ok", "bad": "error: exit status 3"}
    text = run_cli("status", "--session", "s-story", "--root", root).stdout.decode()
    assert "follow-up  bad" in text and "error: exit status 3" in text and "log " in text
    missing = run_cli("status", "--session", "nobody", "--root", root)
    assert missing.returncode == 1 and b"no session 'nobody'" in missing.stderr
    # A failed firing is logged at WARNING with the hook, session, status and log.
    assert "WARNING" in daemon.output() and "follow-up bad for x session s-story: error: exit " \
        "status 3" in daemon.output().replace("claude-code", "x")
