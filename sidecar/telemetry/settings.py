"""Where the daemon sends its spans, if anywhere: `[otel]` in config.toml, else the standard
OTLP variables (the environment file's, then the daemon's own environment).

Standard library only: config.py validates `[otel]` with it, and a daemon with nothing
configured learns here that it exports nothing, without importing OpenTelemetry at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

TRACES_PATH = "/v1/traces"
KEYS = frozenset(("endpoint", "headers", "serviceName", "enabled"))
SERVICE_NAME = "sidecar"


class OtelTableError(ValueError):
    """`[otel]` holds a key or a value it cannot take; the message says which."""


@dataclass(frozen=True)
class OtelSettings:
    """Where spans go: the traces URL (OTLP over HTTP, protobuf), its headers, and the
    service name the spans' resource carries."""

    endpoint: str
    headers: Mapping[str, str] = field(default_factory=dict)
    service_name: str = SERVICE_NAME
    source: str = "config.toml"  # what configured it, for the log and `status`


def parse_table(value: Any) -> dict[str, Any]:
    """`[otel]` as config.toml gives it, checked: OtelTableError names what is wrong."""
    if not isinstance(value, dict) or set(value) - KEYS:
        raise OtelTableError(f"[otel] takes {', '.join(sorted(KEYS))}")
    endpoint = value.get("endpoint", "")
    if not isinstance(endpoint, str) or (endpoint and not endpoint.startswith(("http://", "https://"))):
        raise OtelTableError('otel.endpoint must be an http:// or https:// URL ("http://127.0.0.1:4318")')
    headers = value.get("headers", {})
    if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
        raise OtelTableError('otel.headers must be a table of name = "value"')
    name = value.get("serviceName", SERVICE_NAME)
    if not isinstance(name, str) or not name:
        raise OtelTableError("otel.serviceName must be a non-empty string")
    enabled = value.get("enabled", True)
    if not isinstance(enabled, bool):
        raise OtelTableError("otel.enabled must be true or false")
    return {"endpoint": endpoint, "headers": dict(headers), "serviceName": name, "enabled": enabled}


def traces_url(base: str) -> str:
    """A base endpoint as OTEL_EXPORTER_OTLP_ENDPOINT means it: the traces path appended (one
    that already ends in it is taken as it is)."""
    base = base.rstrip("/")
    return base if base.endswith(TRACES_PATH) else base + TRACES_PATH


def parse_headers(text: str) -> dict[str, str]:
    """OTEL_EXPORTER_OTLP_HEADERS: `name=value` pairs split by commas, values URL-encoded; a
    pair without `=` is left out."""
    pairs = (item.split("=", 1) for item in text.split(",") if "=" in item)
    return {unquote(k).strip(): unquote(v).strip() for k, v in pairs if k.strip()}


def resolve(table: Mapping[str, Any], env_file: Mapping[str, str],
            environ: Mapping[str, str]) -> OtelSettings | None:
    """The settings in force, None where nothing asks for export. `[otel]` wins over the
    variables; the environment file's over the daemon's own (as systemd's EnvironmentFile=
    does); `enabled = false`, OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn it off."""
    variables = {**environ, **env_file}
    if table.get("enabled") is False or variables.get("OTEL_SDK_DISABLED", "").lower() == "true" \
            or variables.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return None
    name = str(table.get("serviceName") or variables.get("OTEL_SERVICE_NAME") or SERVICE_NAME)
    if table.get("endpoint"):
        return OtelSettings(traces_url(str(table["endpoint"])), dict(table.get("headers") or {}), name)
    source = "the environment file" if any(k.startswith("OTEL_EXPORTER_OTLP") for k in env_file) \
        else "the environment"
    headers = {**parse_headers(variables.get("OTEL_EXPORTER_OTLP_HEADERS", "")),
               **parse_headers(variables.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "")),
               **dict(table.get("headers") or {})}
    signal = variables.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if signal:
        return OtelSettings(signal, headers, name, source)
    base = variables.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    return OtelSettings(traces_url(base), headers, name, source) if base else None
