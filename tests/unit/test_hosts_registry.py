"""The hosts' registry: every host declares the whole protocol (`hosts/base.py`), event names
mean what their own host says, and what lists hosts (the CLI, config.toml) comes from it."""

from __future__ import annotations

import inspect
from pathlib import Path

import orjson
import pytest

from helpers import fixture_payload
from sidecar.cli.integrate import integrate_app
from sidecar.config import DEFAULT_RESUME, ConfigError, parse_config
from sidecar.envfile import EnvFile
from sidecar.followups.run.actions import Firing
from sidecar.hosts import registry
from sidecar.hosts.base import EndFacts, Host
from sidecar.inbox.events import HOST_NAME, parse
from sidecar.layout import Workspace
from sidecar.vocabulary import EventKind

HOSTS = registry.hosts()
INTEGRABLE = registry.integrable()


def overrides(host: Host, method: str) -> bool:
    return getattr(type(host), method) is not getattr(Host, method)


def test_hosts_have_unique_valid_names_and_each_is_found_by_its_name():
    names = registry.names()
    assert len(set(names)) == len(names) == len(HOSTS)
    assert registry.UNKNOWN not in names
    for host in HOSTS:
        assert HOST_NAME.fullmatch(host.name) and host.title
        assert registry.get(host.name) is host and registry.find(host.name) is host
    assert registry.find("mine") is None
    with pytest.raises(KeyError):
        registry.get("mine")


@pytest.mark.parametrize("host", HOSTS, ids=lambda h: h.name)
def test_every_host_declares_its_events_as_event_kinds(host):
    assert host.events, f"{host.name} names none of its events"
    assert all(isinstance(kind, EventKind) for kind in host.events.values())
    for name, kind in host.events.items():
        assert registry.event_kind(host.name, name) is kind


@pytest.mark.parametrize("host", INTEGRABLE, ids=lambda h: h.name)
def test_every_integrable_host_declares_the_whole_protocol(host, tmp_path, monkeypatch):
    # A host's home is the one given here, whatever the environment says.
    for variable in ("CODEX_HOME", "XDG_CONFIG_HOME", "PI_CODING_AGENT_DIR", "COPILOT_HOME"):
        monkeypatch.delenv(variable, raising=False)
    if host.resume_refusal() is None:  # a host that cannot resume unattended says why instead
        assert host.executable and host.resume and host.resume[0] == host.executable
        assert "{session_id}" in " ".join(host.resume)
        assert host.key_variables  # what its resume needs in the follow-ups' environment
    else:
        assert host.executable is None and not host.resume
    assert host.integrate_help and host.id_shape is not None
    for method in ("place", "integrate", "integrated", "end_facts"):
        assert overrides(host, method), f"{host.name} lacks {method}"
    for scope in host.scopes:
        place = host.place(scope, tmp_path / "project", tmp_path / "home")
        assert isinstance(place, Path) and host.shown(place) in host.written(place)
    assert host.integrated(tmp_path / "project", tmp_path / "home") is False
    assert host.integrated(None, tmp_path / "home") is False
    assert host.end_facts(None, "") == EndFacts()  # no transcript: nothing known
    assert host.end_facts(str(tmp_path / "missing.jsonl"), "s") == EndFacts()
    signature = inspect.signature(host.integrate)
    assert list(signature.parameters) == ["place", "sidecar", "uninstall"]
    assert signature.parameters["uninstall"].kind is inspect.Parameter.KEYWORD_ONLY


@pytest.mark.parametrize("host", HOSTS, ids=lambda h: h.name)
def test_a_hosts_options_are_placeholders_of_its_resume_with_a_valid_default(host):
    for option in host.options:
        assert f"{{{option.name}}}" in " ".join(host.resume)
        assert option.default in option.choices
    keys = [option.key for h in HOSTS for option in h.options]
    assert len(keys) == len(set(keys))  # one config.toml key, one host
    names = [option.name for h in HOSTS for option in h.options]
    assert len(names) == len(set(names))  # one placeholder, one option


def test_no_option_can_stand_in_for_a_firings_own_value(tmp_path):
    """An option named like a firing's own placeholder is filled with the firing's value."""
    firing = Firing(hook_id="h", host="claude-code", session_id="s-1", harness_session_id="x",
                    prompt="the prompt", prompt_file=None, cwd=tmp_path,
                    options={"session_id": "forged", "prompt": "forged", "sandbox": "on"})
    filled = firing.placeholders(Workspace(tmp_path))
    assert filled["{session_id}"] == "s-1" and filled["{prompt}"] == "the prompt"
    assert filled["{sandbox}"] == "on"


def test_hermes_on_session_end_ends_a_turn_for_hermes_and_only_for_hermes():
    assert registry.event_kind("hermes", "on_session_end") is EventKind.TURN_END
    assert registry.event_kind("hermes", "on_session_finalize") is EventKind.SESSION_END
    assert registry.event_kind("claude-code", "on_session_end") is not EventKind.TURN_END
    assert registry.event_kind("unknown", "on_session_end") is not EventKind.TURN_END
    assert registry.event_kind("claude-code", "SessionEnd") is EventKind.SESSION_END
    assert registry.event_kind("hermes", "SessionEnd") is EventKind.SESSION_END  # generic names too
    for host in HOSTS:  # sidecar's own kinds mean themselves for every host
        for kind in EventKind:
            assert registry.event_kind(host.name, kind.value) is kind


def test_a_claude_code_session_end_still_ends_its_session():
    payload = orjson.loads(fixture_payload("claude-code-2.1.328/SessionEnd.json"))
    event = parse(orjson.dumps({**payload, "host": "claude-code"}), "f.json", 1.0)
    assert event.kind is EventKind.SESSION_END


def test_only_an_unmistakable_payload_names_its_host():
    notify = orjson.loads(fixture_payload("codex-0.169.0/notify.json"))
    assert registry.infer_host(notify) == "codex"
    assert registry.infer_host({"hook_event_name": "Stop", "session_id": "s"}) == registry.UNKNOWN


def test_session_id_shapes_are_each_hosts_own():
    assert registry.id_misfit("claude-code", "127bda75-deea-4f1f-9e2b-3d2745d3dec5") is None
    assert "claude-code" in (registry.id_misfit("claude-code", "s1") or "")
    assert registry.id_misfit("hermes", "anything") is None  # no shape known: nothing held back
    assert registry.id_misfit("mine", "anything") is None


def test_sidecar_integrate_has_one_subcommand_per_integrable_host():
    made = sorted(command.name for command in integrate_app.registered_commands)
    assert made == sorted(host.name for host in INTEGRABLE)
    assert "hermes" not in made  # hermes-agent loads sidecar's plugin itself


@pytest.mark.parametrize("option", list(registry.options().values()), ids=lambda o: o.key)
def test_config_reads_every_hosts_option_by_its_key(option, tmp_path):
    path = tmp_path / "config.toml"
    for choice in option.choices:
        config = parse_config({option.key: choice}, path, EnvFile())
        assert config.option(option.key) == choice == config.options[option.name]
    assert parse_config({}, path, EnvFile()).option(option.key) == option.default
    with pytest.raises(ConfigError, match=f"{option.key} must be one of "
                                          f"{', '.join(option.choices)}, not 'nope'"):
        parse_config({option.key: "nope"}, path, EnvFile())


def test_the_default_resume_commands_are_the_hosts_own():
    assert dict(DEFAULT_RESUME) == {host.name: host.resume for host in HOSTS if host.resume}
    assert "hermes" not in DEFAULT_RESUME
