"""`doctor`'s checks of OpenTelemetry export: configured here, and the extra installed; the
collector answering; and what the running daemon reports it exported and dropped."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import urlsplit

from sidecar import config as config_mod
from sidecar import layout
from sidecar.base.timeutil import now
from sidecar.coordination.report import instance_rows
from sidecar.hosts.base import Finding
from sidecar.telemetry.feed import NOT_INSTALLED, installed
from sidecar.telemetry.settings import OtelSettings, resolve

CONNECT_TIMEOUT = 1.0


def findings(registered: list[Path]) -> list[Finding]:
    """Nothing where no export is configured."""
    try:
        config = config_mod.load_config()
    except config_mod.ConfigError:
        return []  # said by the resume check
    settings = resolve(config.otel, config.agent_env, os.environ)
    if settings is None:
        return []
    fix = f"[otel] endpoint in {layout.config_file()}, or OTEL_EXPORTER_OTLP_ENDPOINT"
    if not installed():
        return [Finding(False, f"OpenTelemetry export to {settings.endpoint} is configured, but "
                        f"{NOT_INSTALLED.split(' (')[0]}", "pip install 'agent-sidecar[otel]', "
                        "then restart the daemon (sidecar service restart)")]
    return [_reachable(settings, fix), *_reported(registered)]


def _reachable(settings: OtelSettings, fix: str) -> Finding:
    """Whether the collector's address takes a connection (the daemon's spans go there)."""
    url = urlsplit(settings.endpoint)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname or "localhost", port), CONNECT_TIMEOUT):
            pass
    except OSError as exc:
        return Finding(False, f"the OpenTelemetry collector at {settings.endpoint} cannot be "
                       f"reached ({exc.strerror or exc}): the daemon drops the spans it cannot send",
                       f"start the collector, or correct {fix}")
    return Finding(True, f"the OpenTelemetry collector at {settings.endpoint} takes connections")


def _reported(registered: list[Path]) -> list[Finding]:
    """What the running daemons say of their export: spans dropped, and why."""
    found: list[Finding] = []
    seen: set[str] = set()
    for root in registered:
        for row in instance_rows(str(root), now()):
            export = row.get("telemetry")
            if not row["live"] or export is None or row["id"] in seen:
                continue
            seen.add(row["id"])
            dropped = export.get("dropped", 0)
            if dropped or export.get("error"):
                why = f": {export['error']}" if export.get("error") else ""
                found.append(Finding(False, f"the running sidecar (pid {row['pid']}) dropped {dropped} "
                                     f"span(s) for {export.get('endpoint')}{why}",
                                     "make the collector reachable; spans dropped are not sent again"))
            else:
                found.append(Finding(True, f"the running sidecar (pid {row['pid']}) exported "
                                     f"{export.get('exported', 0)} span(s) to {export.get('endpoint')}"))
    return found
