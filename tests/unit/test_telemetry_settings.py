"""Where the daemon exports its spans: `[otel]` in config.toml and the OTLP variables
(telemetry/settings.py). That nothing of OpenTelemetry is imported where nothing asks for export
is tested in a fresh interpreter (tests/daemon/test_imports.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sidecar.config import ConfigError, load_config
from sidecar.telemetry.settings import resolve


def test_the_standard_variable_names_the_collector():
    found = resolve({}, {}, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:6006/",
                             "OTEL_EXPORTER_OTLP_HEADERS": "api_key=a%3Db,x-tenant=t1"})
    assert found is not None
    assert found.endpoint == "http://127.0.0.1:6006/v1/traces"
    assert found.headers == {"api_key": "a=b", "x-tenant": "t1"}
    assert found.service_name == "sidecar"


def test_the_traces_variable_is_taken_as_it_is_and_the_environment_file_wins():
    found = resolve({}, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://collector:4318/custom"},
                    {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://elsewhere:4318", "OTEL_SERVICE_NAME": "me"})
    assert found is not None and found.endpoint == "https://collector:4318/custom"
    assert found.service_name == "me" and found.source == "the environment file"


def test_config_toml_wins_and_can_turn_export_off(tmp_path: Path):
    config = tmp_path / "config.toml"
    config.write_text('[otel]\nendpoint = "http://127.0.0.1:4318"\nheaders = { authorization = "Bearer k" }\n')
    otel = load_config(config).otel
    found = resolve(otel, {}, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://other:1"})
    assert found is not None and found.endpoint == "http://127.0.0.1:4318/v1/traces"
    assert found.headers == {"authorization": "Bearer k"}
    config.write_text("[otel]\nenabled = false\n")
    assert resolve(load_config(config).otel, {}, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://other:1"}) is None
    assert resolve({}, {}, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:1", "OTEL_SDK_DISABLED": "true"}) is None
    assert resolve({}, {}, {}) is None


@pytest.mark.parametrize("table, said", [
    ('[otel]\nendpoint = "127.0.0.1:4318"\n', "http:// or https://"),
    ('[otel]\nheaders = { a = 1 }\n', "otel.headers"),
    ('[otel]\nsampler = "x"\n', "[otel] takes"),
])
def test_a_bad_otel_table_is_named(tmp_path: Path, table: str, said: str):
    config = tmp_path / "config.toml"
    config.write_text(table)
    with pytest.raises(ConfigError, match=said.replace("[", r"\[").replace("]", r"\]")):
        load_config(config)
