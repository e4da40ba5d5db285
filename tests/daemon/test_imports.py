"""What starting the daemon loads: its configuration is read without the integration code
(tomlkit, the install and settings-merge modules), in a fresh interpreter."""

from __future__ import annotations

import os
import subprocess
import sys

import orjson
import pytest

from helpers import SIDECAR

LOADED = ("import sys, json, sidecar.daemon.process; "
          "print(json.dumps(sorted(sys.modules)))")


def test_the_daemon_does_not_load_the_integration_code():
    out = subprocess.run([sys.executable, "-c", LOADED], capture_output=True, check=True).stdout
    loaded = orjson.loads(out)
    assert "sidecar.config" in loaded and "sidecar.envfile" in loaded
    assert "tomlkit" not in loaded
    assert [m for m in loaded if m == "sidecar.install" or m.startswith("sidecar.install.")] == []
    assert "sidecar.cli" not in loaded
    # of the machinery that edits other programs' files, only what tells a plugin file is sidecar's
    assert [m for m in loaded if m.startswith("sidecar.hosts.files.")] == ["sidecar.hosts.files.plugin_file"]
    # the cost extra is imported at the first price asked (a turn's end), never at the start
    assert "sidecar.cost.table" in loaded and "genai_prices" not in loaded


def launched(*argv: str, site: bool = True, **run) -> tuple[subprocess.CompletedProcess, list[str]]:
    """`sidecar ARGV` run through the real launcher in a fresh interpreter (`-S` unless `site`):
    its result, and the modules it loaded beyond those loaded before the launcher ran."""
    code = ("import atexit, json, sys\nbefore = set(sys.modules)\n"
            "atexit.register(lambda: print(json.dumps(sorted(set(sys.modules) - before)), "
            f"file=sys.stderr))\nsys.argv = {['sidecar', *argv]!r}\n"
            f"exec(compile(open({SIDECAR!r}).read(), 'sidecar', 'exec'))\n")
    result = subprocess.run([sys.executable, *([] if site else ["-S"]), "-c", code],
                            capture_output=True, text=True, **run)
    return result, orjson.loads(result.stderr.strip().splitlines()[-1])


def test_the_launcher_starts_the_daemon_without_the_rest_of_the_command_line():
    """`sidecar run` is dispatched as `emit` is: the daemon's process imports neither the
    integration code nor doctor nor the other commands."""
    result, loaded = launched("run", "--help", check=True)
    assert "Usage: sidecar run" in result.stdout
    assert [m for m in loaded if m.startswith("sidecar.cli.")] == ["sidecar.cli.common",
                                                                   "sidecar.cli.run"]
    assert not [m for m in loaded if m.startswith(("tomlkit", "sidecar.install", "sidecar.doctor",
                                                   "sidecar.hosts.files.settings"))]


def test_textual_is_loaded_by_top_alone():
    """The live view's toolkit is imported when `sidecar top` runs, never by the daemon, emit
    or any other command (their help included)."""
    for argv in (["status", "--help"], ["top", "--help"], ["run", "--help"], ["emit", "--help"]):
        _, loaded = launched(*argv)
        assert not [m for m in loaded if m == "textual" or m.startswith("textual.")], argv
        assert "sidecar.top.app" not in loaded, argv
    out = subprocess.run([sys.executable, "-c", LOADED], capture_output=True, check=True).stdout
    assert "textual" not in orjson.loads(out)


def test_the_status_line_loads_only_the_standard_library():
    """`status --line` runs on every refresh of a status bar: like `emit`, the launcher runs it
    with nothing but the standard library (not even orjson) and the base/ and views/ modules
    it reads through (`paths`, emit's own, reads the registry for both; `escapes` escapes what
    it shows; the record's state is views/activity's, as `sessions` and `top` show it)."""
    result, loaded = launched("status", "--line", check=True, input="")  # beyond the interpreter's own
    assert result.stdout.endswith("\n")
    assert sorted(m for m in loaded if m.split(".")[0] == "sidecar") == [
        "sidecar", "sidecar.base", "sidecar.base.endreasons", "sidecar.base.escapes",
        "sidecar.base.files", "sidecar.base.paths", "sidecar.base.posixos",
        "sidecar.base.timeutil", "sidecar.base.words", "sidecar.views", "sidecar.views.activity",
        "sidecar.views.line"]
    assert [m for m in loaded if m.split(".")[0] not in (*sys.stdlib_module_names, "sidecar")] == []


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_status_loads_only_the_standard_library_base_and_views(tmp_path, extra):
    """`status` reads its report with the standard library: sidecar.base and sidecar.views,
    its command module and the coordination row's and the fleet row's, nothing typed (a rare
    branch imports its module where it is met)."""
    from typer.testing import CliRunner

    from sidecar.cli.main import app

    assert CliRunner().invoke(app, ["init", str(tmp_path)]).exit_code == 0
    result, loaded = launched("status", "--root", str(tmp_path), *extra, site=False)
    assert result.returncode == 3, result.stderr  # served by no daemon
    ours = {m for m in loaded if m.split(".")[0] == "sidecar"}
    assert {m for m in ours if not m.startswith(("sidecar.base.", "sidecar.views."))} == {
        "sidecar", "sidecar.base", "sidecar.views", "sidecar.cli", "sidecar.cli.status",
        "sidecar.coordination", "sidecar.coordination.report", "sidecar.fleet", "sidecar.fleet.report"}
    assert [m for m in loaded if m.split(".")[0] not in (*sys.stdlib_module_names, "sidecar")] == []
    assert not {"typing", "dataclasses", "pathlib", "re", "json"} & set(loaded)


# `sessions` and `top` list every record with its follow-ups through the typed stores (the same
# readers the daemon writes with); they are no hot path, so their read model may use them.
TYPED_VIEWS = ("sidecar.views.sessions", "sidecar.views.rowjson")


def test_base_and_views_load_only_the_standard_library():
    """Every module of sidecar.base and sidecar.views, imported alone, loads nothing but the
    standard library and the two folders (a rare branch imports lazily), but TYPED_VIEWS."""
    import pkgutil

    import sidecar.base
    import sidecar.views

    names = [f"{package.__name__}.{info.name}" for package in (sidecar.base, sidecar.views)
             for info in pkgutil.iter_modules(package.__path__)
             if f"{package.__name__}.{info.name}" not in TYPED_VIEWS]
    for name in names:
        code = (f"import sys; before = set(sys.modules); import {name}; "
                "print('\\n'.join(sorted(set(sys.modules) - before)))")
        result = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True,
                                text=True, check=True)
        loaded = result.stdout.split()
        assert [m for m in loaded if m.split(".")[0] not in (*sys.stdlib_module_names, "sidecar")
                or (m.startswith("sidecar.") and not m.startswith(("sidecar.base", "sidecar.views")))
                ] == [], name


def _runner_imports(tmp_path, env: dict[str, str]) -> set[str]:
    """What the follow-up runner imports beyond the interpreter's start-up, run as the daemon
    runs it: `python -S runner.py FD LOG -- ARGV`, the action a no-op."""
    import os

    from sidecar.followups.run import actions

    folder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        result = subprocess.run(
            [sys.executable, "-S", "-X", "importtime", actions.RUNNER, str(folder), "action.log",
             "--", "true"], env={**os.environ, **env}, pass_fds=(folder,), capture_output=True,
            text=True, check=True)
    finally:
        os.close(folder)
    baseline = subprocess.run([sys.executable, "-S", "-X", "importtime", "-c", "pass"],
                              capture_output=True, text=True, check=True).stderr
    return _imported(result.stderr) - _imported(baseline)


def _imported(importtime: str) -> set[str]:
    return {line.rsplit("|", 1)[1].strip() for line in importtime.splitlines()
            if line.startswith("import time:") and not line.rstrip().endswith("package")}


def test_the_runner_imports_only_the_standard_library_and_the_lease_only_in_redis_mode(tmp_path):
    """The runner starts every action: without `site`, nothing beyond the standard library and
    the one reader of /proc (base/proc.py); the lease (by the runner's own folder) and redis-py
    (by the folder the daemon names) only when it keeps a lease."""
    from sidecar.coordination.redis.client import library

    (tmp_path / "plain").mkdir()
    plain = _runner_imports(tmp_path / "plain", {})
    assert not {"lease", "redis", "socket", "threading"} & plain
    assert "sidecar.base.proc" in plain
    assert not [m for m in plain if m.split(".")[0] not in sys.stdlib_module_names
                and m not in ("sidecar", "sidecar.base", "sidecar.base.proc")]
    (tmp_path / "lease").mkdir()
    # Nothing listens on port 1: the lease is not taken, but everything it needs is loaded.
    leased = _runner_imports(tmp_path / "lease", {"SIDECAR_RUN_LEASE": "sidecar:run:x",
                                                  "SIDECAR_COORDINATION_URL": "redis://127.0.0.1:1",
                                                  "SIDECAR_RUN_LIBRARY": library()})
    assert {"lease", "redis", "socket", "threading"} <= leased
    # Beyond the lease, whatever redis-py itself may load (its optional extras are tried):
    # never the rest of the sidecar package, nor its start-up.
    assert {m for m in leased if m.split(".")[0] == "sidecar"} <= {
        "sidecar", "sidecar.base", "sidecar.base.proc"}


COORDINATED = ("import sys, json, sidecar.daemon.process\n"
               "from sidecar.coordination import current\n"
               "print(current.get().shown)\n"
               "print(json.dumps(sorted(sys.modules)))\n")


def test_redis_is_loaded_only_where_a_redis_url_is_configured(tmp_path):
    """The optional extra stays out of every process that does not coordinate through Redis,
    and out of the hook path even where one does (emit never reads the URL)."""
    import os

    from helpers import emit

    plain = {k: v for k, v in os.environ.items() if k != "SIDECAR_COORDINATION_URL"}
    files = subprocess.run([sys.executable, "-c", COORDINATED], capture_output=True, check=True,
                           text=True, env=plain).stdout.splitlines()
    assert files[0] == "file"
    assert not [m for m in orjson.loads(files[1]) if m == "redis" or m.startswith("redis.")]
    assert "portalocker.redis" not in orjson.loads(files[1])
    url = "redis://:pw@127.0.0.1:1/0"  # nothing listens there: choosing it connects to nothing
    redis_mode = subprocess.run([sys.executable, "-c", COORDINATED], capture_output=True,
                                check=True, text=True,
                                env={**plain, "SIDECAR_COORDINATION_URL": url}).stdout.splitlines()
    assert redis_mode[0] == "redis://:***@127.0.0.1:1/0"
    assert "redis" in orjson.loads(redis_mode[1])
    (tmp_path / "ws" / ".context").mkdir(parents=True)
    hook = emit(tmp_path / "ws", b'{"hook_event_name":"Stop","session_id":"s"}', "--source",
                "claude-code", env={"SIDECAR_COORDINATION_URL": url, "PYTHONVERBOSE": "1"})
    said = hook.stderr.decode()
    assert "import 'sidecar.emit'" in said  # (the verbose import trace is there to read)
    assert "import 'redis'" not in said and "import 'sidecar.coordination" not in said


STARTED = ("import sys, json\nfrom sidecar.telemetry import feed\nimport sidecar.daemon.process\n"
           "made = feed.start({}, {}, {'OTEL_EXPORTER_OTLP_ENDPOINT': sys.argv[1]} if sys.argv[1] else {})\n"
           "made is None or made.ready.wait(10)\n"
           "print(json.dumps([made is not None, made and made.error,\n"
           "                  sorted(m for m in sys.modules if m.startswith('opentelemetry'))]))\n")
BLOCKED = ("import sys\nclass NoOtel:\n    def find_spec(self, name, path=None, target=None):\n"
           "        if name.split('.')[0] == 'opentelemetry':\n            raise ImportError(name)\n"
           "sys.meta_path.insert(0, NoOtel())\n")


def _start(endpoint: str, blocked: bool = False) -> list:
    code = (BLOCKED if blocked else "") + STARTED
    out = subprocess.run([sys.executable, "-c", code, endpoint], capture_output=True, text=True, check=True)
    return orjson.loads(out.stdout)


def test_without_an_endpoint_nothing_of_opentelemetry_is_imported():
    assert _start("") == [False, None, []]
    started, error, loaded = _start("http://127.0.0.1:9")
    assert started and error is None and "opentelemetry.sdk.trace" in loaded


def test_without_the_extra_an_endpoint_is_reported_not_fatal():
    started, error, loaded = _start("http://127.0.0.1:9", blocked=True)
    assert started and "agent-sidecar[otel] is not installed" in error and loaded == []


def test_emit_and_the_status_line_never_load_opentelemetry(tmp_path):
    """Where export is configured too: the hooks' path is the daemon's business, never theirs."""
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    for argv in (["emit", "--help"], ["status", "--line"]):
        _, loaded = launched(*argv, site=False, input="", env=env)
        assert not [m for m in loaded if m.startswith(("opentelemetry", "sidecar.telemetry"))], argv
