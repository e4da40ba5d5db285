"""Several "machines" on one: each a PID namespace (and a hostname) of its own, made with
`unshare --pid --fork --mount-proc --uts --kill-child`, so that its processes see only one
another, their pids are those of a machine of their own (a pid of one machine means nothing on
another), and killing the namespace's init kills every process of it at once, as a machine
that loses its power. The workspace's files are shared, as over a network volume.

Root only (a PID namespace needs CAP_SYS_ADMIN); elsewhere a test skips, saying why.

    machine = Machine("a", tmp_path)
    machine.start([SIDECAR, "run", "--root", str(ws.root)], env, cwd=ws.root)
    machine.run([SIDECAR, "emit", ...], input=payload, cwd=ws.root)   # inside machine a
    machine.stop(); machine.cont()   # SIGSTOP / SIGCONT of its sidecar
    machine.kill()                   # the power cut: every process of the machine
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from support.redis_server import _die_with_parent

INIT = Path(__file__).with_name("machine_init.py")
UNSHARE = ["unshare", "--pid", "--fork", "--mount-proc", "--uts", "--kill-child"]
FOUND_TIMEOUT = 10.0
M = TypeVar("M", bound="Machine")
# What runs a `run()` command inside the machine: its parent there, as a host is a hook's (a
# process of the machine, where nsenter, its parent outside, is not).
WRAPPER = "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"


@functools.cache
def why_not() -> str | None:
    """Why machines cannot be made here, or None: tried once per test run."""
    if os.geteuid() != 0:
        return "a PID namespace needs root (CAP_SYS_ADMIN); these tests run as root in CI"
    for tool in ("unshare", "nsenter"):
        if shutil.which(tool) is None:
            return f"{tool} (util-linux) is not installed"
    try:
        tried = subprocess.run([*UNSHARE, "--", "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unshare could not make a PID namespace: {exc}"
    if tried.returncode != 0:
        return f"unshare could not make a PID namespace: {tried.stderr.decode(errors='replace').strip()}"
    return None


def require_machines() -> None:
    reason = why_not()
    if reason is not None:
        pytest.skip(f"no machines here: {reason}")


def children(pid: int) -> list[int]:
    """The pids (as seen from here) of a process's children: from every thread's `children`
    file, or, on a kernel without them (CONFIG_PROC_CHILDREN), from every process's parent."""
    found: list[int] = []
    try:
        threads = list(Path(f"/proc/{pid}/task").iterdir())
        for thread in threads:
            found += [int(child) for child in (thread / "children").read_text().split()]
    except FileNotFoundError as exc:
        if exc.filename is None or not str(exc.filename).endswith("children"):
            return found  # the process is gone
        return [child for child in _all_pids() if _parent(child) == pid]
    except OSError:
        return found
    return found


def _all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def namespace_pids(pid: int) -> list[int]:
    """A process's pid in each PID namespace it is in, outermost first (/proc's NSpid)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return [int(p) for p in line.split()[1:]]
    except OSError:
        pass
    return []


class Machine:
    """One machine: `start` boots it running one command (a `sidecar run`), which is its
    process of interest; `run` runs a short command inside it."""

    def __init__(self, name: str, folder: Path) -> None:
        require_machines()
        self.name = name
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.status_file = folder / f"machine-{name}.status"
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path: Path | None = None
        self._init: int | None = None
        self._main: int | None = None

    # -- the machine ---------------------------------------------------------------------

    def start(self, argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None,
              log_path: Path | None = None) -> Machine:
        """Boot the machine running `argv` (with `env` over this environment, from `cwd`, its
        output into `log_path`, by default <folder>/machine-<name>.log). The machine must be
        down: a new one boots (`kill()` first to reboot one)."""
        if self.up:
            raise RuntimeError(f"machine {self.name} is still up (pid {self.pid})")
        self.status_file.unlink(missing_ok=True)
        self.log_path = log_path or self.folder / f"machine-{self.name}.log"
        self._init = self._main = None
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [*self.launcher(), "--", sys.executable, "-S", str(INIT), str(self.status_file),
                 self.name, *argv],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=self.environment(env), cwd=cwd, start_new_session=True,
                preexec_fn=_die_with_parent)
        self.init_pid()
        # Its command started (or, a short one, already ended): main_pid() is then its pid.
        self._wait_for(lambda: self._find_main() or (-1 if self.status_file.exists() else None),
                       "the command it runs")
        return self

    @property
    def pid(self) -> int:
        """unshare's pid (the machine's process outside it)."""
        assert self.proc is not None, f"machine {self.name} was never started"
        return self.proc.pid

    @property
    def up(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def init_pid(self) -> int:
        """The pid, as seen from here, of the machine's init (pid 1 inside): unshare's child."""
        if self._init is None:
            self._init = self._wait_for(lambda: next(iter(children(self.pid)), None), "its init")
        return self._init

    def main_pid(self) -> int | None:
        """The pid, as seen from here, of the command `start` ran (pid 2 inside), None once it
        has exited."""
        if self._main is None and self.up:
            self._main = self._find_main()
        if self._main is not None and namespace_pids(self._main)[-1:] != [2]:
            return None  # exited (and reaped): the pid is not the command's any more
        return self._main

    def _find_main(self) -> int | None:
        return next((c for c in children(self.init_pid()) if namespace_pids(c)[-1:] == [2]), None)

    def _wait_for(self, find, what: str) -> int:
        deadline = time.monotonic() + FOUND_TIMEOUT
        while True:
            found = find()
            if found is not None:
                return int(found)
            if not self.up or time.monotonic() > deadline:
                raise RuntimeError(f"machine {self.name}: {what} was not found:\n{self.output()}")
            time.sleep(0.01)

    def pids(self) -> list[int]:
        """Every process of the machine (pids as seen from here), its init first."""
        if not self.up:
            return []
        found, todo = [], [self.init_pid()]
        while todo:
            pid = todo.pop(0)
            found.append(pid)
            todo += children(pid)
        return found

    def kill(self) -> None:
        """The power cut: SIGKILL the machine's init, which kills every process of the machine
        at once (the kernel's rule for a PID namespace); then reap unshare."""
        if not self.up:
            return
        try:
            os.kill(self.init_pid(), signal.SIGKILL)
        except (ProcessLookupError, RuntimeError):
            pass
        assert self.proc is not None
        try:
            self.proc.wait(FOUND_TIMEOUT)
        except subprocess.TimeoutExpired:  # unshare itself stuck: its --kill-child does the rest
            self.proc.kill()
            self.proc.wait()

    # -- its sidecar ---------------------------------------------------------------------

    def _signal_main(self, sig: signal.Signals) -> None:
        pid = self._wait_for(self.main_pid, "the command it runs")
        os.kill(pid, sig)

    def stop(self) -> None:
        """SIGSTOP the command `start` ran (a leader frozen past its lease)."""
        self._signal_main(signal.SIGSTOP)

    def cont(self) -> None:
        """SIGCONT it: it runs on from where it stood."""
        self._signal_main(signal.SIGCONT)

    def terminate(self, timeout: float = 15) -> int:
        """SIGTERM the command `start` ran and wait for it to exit; its exit status. Past
        `timeout`, the machine is killed and the test fails. The machine stays up while its
        other processes run (a follow-up's action outlives the daemon)."""
        if not self.status_file.exists():
            self._signal_main(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while not self.status_file.exists():
            if time.monotonic() > deadline:
                self.kill()
                raise AssertionError(f"machine {self.name}: its command did not exit within "
                                     f"{timeout}s of SIGTERM:\n{self.output()}")
            time.sleep(0.02)
        return self.exit_status()

    def exit_status(self) -> int:
        """The command's exit status (negative: the signal that ended it)."""
        return int(self.status_file.read_text())

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path else ""

    # -- commands inside it --------------------------------------------------------------

    def run(self, argv: list[str], *, input: bytes | None = None, cwd: Path | None = None,
            env: dict[str, str] | None = None, timeout: float = 30) -> subprocess.CompletedProcess:
        """Run one short command inside the machine (its namespaces, through nsenter): it sees
        the machine's processes only, and its parent is a process of the machine (as a host is
        the parent of its hook's `sidecar emit`)."""
        if not self.up:
            raise RuntimeError(f"machine {self.name} is not up")
        where = os.fspath(cwd or Path.cwd())
        return subprocess.run(
            ["nsenter", f"--target={self.init_pid()}", *self.entered(),
             f"--wd={where}", "--", sys.executable, "-S", "-c", WRAPPER, *argv],
            input=input if input is not None else b"", capture_output=True,
            env=self.environment(env), timeout=timeout)

    # -- what a kind of machine changes (support/netmachines.py: a network and a HOME) ---

    def launcher(self) -> list[str]:
        """The command that makes the machine's namespaces and runs its init."""
        return UNSHARE

    def entered(self) -> list[str]:
        """nsenter's options: the namespaces of the machine a `run()` command joins."""
        return ["--pid", "--mount", "--uts"]

    def environment(self, env: dict[str, str] | None) -> dict[str, str]:
        """The environment of the machine's processes: this one's, with `env` over it."""
        return {**os.environ, **(env or {})}


def made_by_name(kind: Callable[..., M], folder: Path,
                 teardown: Callable[[M], None]) -> Iterator[Callable[..., M]]:
    """A fixture's maker of machines by name (`make("a", ...)`: `kind("a", folder, ...)`); each
    torn down at the end, the test failed or not, the others too if one's teardown fails."""
    with contextlib.ExitStack() as made:
        def make(name: str, *args: object, **options: object) -> M:
            machine = kind(name, folder, *args, **options)
            made.callback(teardown, machine)
            return machine

        yield make


@pytest.fixture
def machines(tmp_path: Path) -> Iterator[Callable[[str], Machine]]:
    """Make machines by name (`machines("a")`); each is killed, whole, at teardown."""
    require_machines()
    yield from made_by_name(Machine, tmp_path / "machines", Machine.kill)
