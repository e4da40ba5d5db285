"""Machines with a network and a user of their own: each test "machine" (support/machines.py)
is also its own network namespace, reaching the test's redis-server over a veth pair through a
proxy that can slow its link (support/latency_proxy.py), and has its own HOME, so that what
sidecar keeps per user per machine (`~/.config/sidecar/run-key`, `trust.json`, the registry,
`config.toml`; `~/.local/state/sidecar/daemon.log`) is the machine's own, as on separate
machines. The workspace is shared (a folder every namespace sees, as a network volume), and so
is the kernel's clock, unless a machine's wall clock is faked (support/fakeclock.py).

    a = net_machines("a", redis_server)              # fixture: made, and torn down whole
    b = net_machines("b", redis_server, clock="+25h")
    a.join(ws)                                       # registered and its hooks trusted, on a
    a.start([SIDECAR, "run", "--root", str(ws.root), "-v"], cwd=ws.root)
    a.run([SIDECAR, "status", "--root", str(ws.root)])   # inside a: its HOME, its network
    a.stop(); a.cont()                               # SIGSTOP / SIGCONT of its sidecar
    a.kill()                                         # the power cut: its PID namespace, whole
    a.partition(); a.heal()                          # its veth down / up
    a.proxy.delay = 1.8                              # Redis answers it 1.8 s late; 0: at once

The network: machine N's veth pair is `sct<slot>` (root side, 10.201.X.Y+1/30) and
`sct<slot>m` (inside, +2), a /30 of 10.201.0.0/16 per machine; a slot is claimed by creating
its veth (which fails if another test process holds it). redis-server keeps listening on
loopback only: each machine's proxy listens on its veth's root-side address, and the
machine's `[coordination] url` names that proxy, so nothing but the test's machines reaches
the server, and a partition (the veth down) cuts the machine's every connection to it.

Root only (namespaces, veths); elsewhere, or where `ip` cannot make a network namespace, a
test skips, saying why. Teardown kills each machine, stops its proxy, and deletes its veth and
network namespace; namespaces a killed test process left behind are deleted by the next run.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from helpers import SIDECAR
from sidecar.base.timeutil import parse_ts
from sidecar.layout import Workspace
from support import machines
from support.fakeclock import clock_env
from support.latency_proxy import LatencyProxy
from support.machines import UNSHARE, Machine
from support.redis_server import RedisServer

NETNS_PREFIX = "sidecar-t"  # sidecar-t<pid of the test process>-<slot>-<machine>
LINK_PREFIX = "sct"
SUBNET = "10.201"
SLOTS = 64 * 256  # /30s in 10.201.0.0/16
# Short timers so the daemons act within a test's seconds (as tests/conftest.py's config_home).
SETTINGS = "reconcileInterval = 0.5\nheartbeatInterval = 0.5\nsweepInterval = 1\n"
# What a machine's processes must not inherit from the test process: its user's folders (the
# test's own SIDECAR_CONFIG_HOME would win over the machine's HOME) and a URL over its file.
NOT_INHERITED = ("SIDECAR_CONFIG_HOME", "SIDECAR_COORDINATION_URL", "XDG_CONFIG_HOME",
                 "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR")
LOG_LINE = re.compile(r"^(\S+) \d+ (\w+) (.*)$")
REGISTER = "import sys; from pathlib import Path; from sidecar.config import register; " \
           "register(Path(sys.argv[1]))"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


@functools.cache
def why_not() -> str | None:
    """Why network machines cannot be made here, or None: tried once per test run."""
    reason = machines.why_not()
    if reason is not None:
        return reason
    if shutil.which("ip") is None:
        return "ip (iproute2) is not installed"
    _forget_left_behind()
    probe = f"{NETNS_PREFIX}{os.getpid()}-probe"
    tried = _ip("netns", "add", probe, check=False)
    if tried.returncode != 0:
        return f"ip netns add failed: {tried.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


def require_net_machines() -> None:
    reason = why_not()
    if reason is not None:
        pytest.skip(f"no network machines here: {reason}")


def _forget_left_behind() -> None:
    """Delete the network namespaces of test processes that are gone (killed before their
    teardown); their veths go with them."""
    listed = _ip("netns", "list", check=False).stdout.split()
    for name in listed:
        found = re.fullmatch(rf"{NETNS_PREFIX}(\d+)-.*", name)
        if found and not Path(f"/proc/{found.group(1)}").exists():
            _ip("netns", "del", name, check=False)


class Link:
    """A machine's network namespace and its veth pair to the root namespace."""

    def __init__(self, machine: str) -> None:
        self.slot = self._claim()
        self.outside = f"{LINK_PREFIX}{self.slot}"
        self.inside = f"{LINK_PREFIX}{self.slot}m"
        self.netns = f"{NETNS_PREFIX}{os.getpid()}-{self.slot}-{machine}"
        net = f"{SUBNET}.{self.slot // 64}"
        self.outside_ip = f"{net}.{self.slot % 64 * 4 + 1}"
        self.inside_ip = f"{net}.{self.slot % 64 * 4 + 2}"
        try:
            _ip("netns", "add", self.netns)
            _ip("link", "set", self.inside, "netns", self.netns)
            _ip("addr", "add", f"{self.outside_ip}/30", "dev", self.outside)
            _ip("link", "set", self.outside, "up")
            _ip("-n", self.netns, "addr", "add", f"{self.inside_ip}/30", "dev", self.inside)
            _ip("-n", self.netns, "link", "set", self.inside, "up")
            _ip("-n", self.netns, "link", "set", "lo", "up")
        except BaseException:
            self.delete()
            raise

    @staticmethod
    def _claim() -> int:
        """The first slot whose veth could be made: creating it is the claim, so two test
        processes never share a slot (nor its addresses)."""
        for slot in range(SLOTS):
            made = _ip("link", "add", f"{LINK_PREFIX}{slot}", "type", "veth", "peer", "name",
                       f"{LINK_PREFIX}{slot}m", check=False)
            if made.returncode == 0:
                return slot
            if "exists" not in made.stderr:
                raise RuntimeError(f"ip link add (a veth pair): {made.stderr.strip()}")
        raise RuntimeError(f"every one of the {SLOTS} veth slots is taken")

    @property
    def path(self) -> str:
        return f"/run/netns/{self.netns}"

    def down(self) -> None:
        _ip("link", "set", self.outside, "down")

    def up(self) -> None:
        _ip("link", "set", self.outside, "up")

    def delete(self) -> None:
        _ip("link", "del", self.outside, check=False)  # its peer goes with it
        _ip("netns", "del", self.netns, check=False)


class NetMachine(Machine):
    """A machine (support/machines.py) with its own network namespace, linked to `server`
    through a LatencyProxy, its own HOME and config.toml (`settings`, and the proxy's URL as
    its `[coordination] url`), and, with `clock`, a wall clock that far from the real one
    ("+25h", "-2m") for every process of it."""

    def __init__(self, name: str, folder: Path, server: RedisServer, *, clock: str | None = None,
                 settings: str = SETTINGS) -> None:
        require_net_machines()
        if server.port is None:
            raise ValueError("a network machine reaches a TCP redis-server, not a unix socket")
        super().__init__(name, folder)
        self.home = folder / name / "home"
        self.config_home = self.home / ".config" / "sidecar"
        self.state_home = self.home / ".local" / "state"
        self.config_home.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.clock = clock
        self.clock_env = clock_env(clock, folder) if clock else {}
        self.link = Link(name)
        self.proxy: LatencyProxy | None = None
        try:
            self.proxy = LatencyProxy(self.link.outside_ip, ("127.0.0.1", server.port)).start()
        except BaseException:
            self.link.delete()
            raise
        self.redis_url = f"redis://{self.link.outside_ip}:{self.proxy.port}/0"
        (self.config_home / "config.toml").write_text(
            f'{settings}\n[coordination]\nurl = "{self.redis_url}"\n')

    # -- what makes it a machine of its own ----------------------------------------------

    def launcher(self) -> list[str]:
        # nsenter joins the network namespace and execs unshare (no fork): the machine's
        # process outside stays the one Machine knows.
        return ["nsenter", f"--net={self.link.path}", "--", *UNSHARE]

    def entered(self) -> list[str]:
        return [*super().entered(), "--net"]

    def environment(self, env: dict[str, str] | None) -> dict[str, str]:
        inherited = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
        return {**inherited, "HOME": str(self.home),
                "XDG_CONFIG_HOME": str(self.home / ".config"),
                "XDG_STATE_HOME": str(self.state_home),
                "XDG_CACHE_HOME": str(self.home / ".cache"), **self.clock_env, **(env or {})}

    def run(self, argv: list[str], *, input: bytes | None = None, cwd: Path | None = None,
            env: dict[str, str] | None = None, timeout: float = 30) -> subprocess.CompletedProcess:
        """Run one short command inside the machine (Machine.run); a machine that is down is
        booted for that command alone (its user's command while its sidecar does not run)."""
        if self.up:
            return super().run(argv, input=input, cwd=cwd, env=env, timeout=timeout)
        status = self.folder / f"machine-{self.name}.once.status"
        return subprocess.run(
            [*self.launcher(), "--", sys.executable, "-S", str(machines.INIT), str(status),
             self.name, *argv],
            input=input if input is not None else b"", capture_output=True,
            env=self.environment(env), cwd=cwd, timeout=timeout)

    # -- its link ------------------------------------------------------------------------

    def partition(self) -> None:
        """Cut the machine off: its veth goes down, so nothing it sends reaches Redis and
        nothing reaches it (its connections stay open at both ends, as in a real partition)."""
        self.link.down()

    def heal(self) -> None:
        self.link.up()

    # -- its user's sidecar --------------------------------------------------------------

    def join(self, ws: Workspace) -> None:
        """What this machine's user does to serve a shared workspace: register it (its hooks'
        `sidecar emit` drops events only into registered workspaces; `sidecar init` would set
        the runtime another machine wrote aside as foreign) and trust its hooks as they stand
        (trust is per user per machine)."""
        self.check(self.run([sys.executable, "-c", REGISTER, str(ws.root)], cwd=ws.root))
        self.trust(ws)

    def trust(self, ws: Workspace) -> None:
        """`sidecar hooks trust --yes` on this machine, for its own user."""
        self.check(self.run([SIDECAR, "hooks", "trust", "--yes", "--root", str(ws.root)],
                            cwd=ws.root))

    def check(self, done: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
        if done.returncode != 0:
            raise RuntimeError(f"machine {self.name}: {done.args[-4:]} failed "
                               f"({done.returncode}):\n{done.stdout.decode(errors='replace')}"
                               f"{done.stderr.decode(errors='replace')}")
        return done

    @property
    def daemon_log(self) -> Path:
        return self.state_home / "sidecar" / "daemon.log"

    def log_lines(self, ws: Workspace) -> list[tuple[float, str, str]]:
        """(time, level, message) of the machine's daemon.log lines about `ws`, its message
        without the workspace's path; times by this machine's wall clock."""
        try:
            text = self.daemon_log.read_text(errors="replace")
        except FileNotFoundError:
            return []
        found = []
        prefix = f"{ws.root}: "
        for line in text.splitlines():
            parsed = LOG_LINE.match(line)
            if parsed and parsed.group(3).startswith(prefix):
                at = parse_ts(parsed.group(1))
                if at is not None:
                    found.append((at, parsed.group(2), parsed.group(3)[len(prefix):]))
        return found

    def close(self) -> None:
        """Kill the machine, stop its proxy, delete its veth and network namespace."""
        try:
            self.kill()
        finally:
            if self.proxy is not None:
                self.proxy.close()
            self.link.delete()


@pytest.fixture
def net_machines(tmp_path: Path) -> Iterator[Callable[..., NetMachine]]:
    """Make network machines by name: `net_machines("a", server, clock="+25h", settings=...)`;
    each is killed and its network deleted at teardown, the test failed or not."""
    require_net_machines()
    yield from machines.made_by_name(NetMachine, tmp_path / "netmachines", NetMachine.close)
