"""The coordination URL as configured and as shown: checked at load, its secrets never shown,
and the backend a process uses chosen from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from sidecar.config import ConfigError, load_config, parse_config
from sidecar.coordination import current
from sidecar.coordination.url import masked, scrub
from sidecar.envfile import EnvFile

NO_ENV = EnvFile({}, ())


@pytest.mark.parametrize(("url", "shown"), [
    ("redis://h:6379/0", "redis://h:6379/0"),
    ("redis://:secret@h:6379/0", "redis://:***@h:6379/0"),
    ("rediss://user:pw@h/1", "rediss://***:***@h/1"),
    ("unix:///run/r.sock?db=2", "unix:///run/r.sock?db=2"),
    ("unix://:pw@/run/r.sock?db=0", "unix://:***@/run/r.sock?db=0"),
    ("redis://h:6379/0?password=s3cret&db=1", "redis://h:6379/0?password=***&db=1"),
    ("unix:///r.sock?username=bob&password=x", "unix:///r.sock?username=***&password=***"),
    ("rediss://u:p@[::1]:6380/0", "rediss://***:***@[::1]:6380/0"),
])
def test_a_url_is_shown_without_its_secrets(url, shown):
    assert masked(url) == shown


def test_an_error_is_scrubbed_of_every_secret_of_its_url():
    url = "redis://bob:pw-1@h:6379/0?password=pw-2"
    text = scrub(f"cannot log in as bob with pw-1 or pw-2 at {url}", url)
    assert "pw-1" not in text and "pw-2" not in text and "bob" not in text


def test_config_takes_the_url_and_the_variable_wins(tmp_path, monkeypatch):
    path = tmp_path / "config.toml"
    path.write_text('[coordination]\nurl = "redis://h:6379/0"\n')
    monkeypatch.delenv("SIDECAR_COORDINATION_URL", raising=False)
    assert load_config(path).coordination_url == "redis://h:6379/0"
    monkeypatch.setenv("SIDECAR_COORDINATION_URL", "unix:///run/r.sock")
    assert load_config(path).coordination_url == "unix:///run/r.sock"
    monkeypatch.setenv("SIDECAR_COORDINATION_URL", "")  # "": the file backend, whatever the file says
    assert load_config(path).coordination_url is None


@pytest.mark.parametrize("value", [
    {"url": "http://h:6379"}, {"url": 7}, {"host": "h"}, "redis://h",
])
def test_a_bad_coordination_setting_names_the_key(value):
    with pytest.raises(ConfigError, match="coordination"):
        parse_config({"coordination": value}, Path("config.toml"), NO_ENV)


@pytest.mark.parametrize("url", ["redis://:s3cret@h:notaport/0",
                                 "redis://:s3cret@h:6379/0?socket_timeout=soon"])
def test_a_url_redis_cannot_read_is_a_configuration_error_without_its_password(url):
    with pytest.raises(ConfigError, match=r"^\[coordination\] url redis://") as caught:
        current.for_url(url)
    assert "s3cret" not in str(caught.value)


def test_a_broken_config_file_leaves_commands_on_the_file_backend(tmp_path, monkeypatch):
    """A config.toml that cannot be read names no Redis: the commands that lock a store keep
    working on the files, and the config's own error is said by whoever reads it."""
    monkeypatch.setenv("SIDECAR_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("SIDECAR_COORDINATION_URL", raising=False)
    (tmp_path / "config.toml").write_text("staleAfter = [not toml")
    current.reset()
    try:
        assert current.get().shown == "file"
    finally:
        current.reset()
