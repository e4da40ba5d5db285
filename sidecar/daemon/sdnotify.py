"""systemd's notify protocol, spoken directly: one datagram per message to $NOTIFY_SOCKET.

No libsystemd: the protocol is a line-based datagram to a Unix socket (abstract when the
address starts with `@`). Outside systemd, every call is a no-op.
"""

from __future__ import annotations

import os
import socket


class Notifier:
    """Sends READY, STATUS, STOPPING and WATCHDOG messages when systemd asked for them."""

    def __init__(self, environ: dict[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        address = env.get("NOTIFY_SOCKET", "")
        if address.startswith("@"):
            address = "\0" + address[1:]
        self.address = address or None
        watchdog_pid = env.get("WATCHDOG_PID")
        usec = env.get("WATCHDOG_USEC", "")
        mine = watchdog_pid is None or watchdog_pid == str(os.getpid())
        self.watchdog_interval = int(usec) / 1e6 if usec.isdigit() and mine and int(usec) > 0 else None

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def send(self, *lines: str) -> bool:
        if self.address is None:
            return False
        message = "\n".join(lines).encode()
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.sendto(message, self.address)
        except OSError:
            return False
        return True

    def ready(self, status: str) -> bool:
        return self.send("READY=1", f"STATUS={status}")

    def status(self, status: str) -> bool:
        return self.send(f"STATUS={status}")

    def stopping(self) -> bool:
        return self.send("STOPPING=1", "STATUS=stopping")

    def watchdog(self) -> bool:
        return self.send("WATCHDOG=1")
