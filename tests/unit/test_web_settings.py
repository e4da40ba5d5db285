"""`[web]` in config.toml: off by default, checked key by key, and a network address without
TLS refused there as on the command line."""

from __future__ import annotations

import pytest

from sidecar.config import ConfigError, load_config


def config_with(tmp_path, text: str):
    path = tmp_path / "config.toml"
    path.write_text(text)
    return load_config(path)


def test_the_view_is_not_served_by_default(tmp_path):
    assert not config_with(tmp_path, "").web.get("serve")
    table = config_with(tmp_path, "[web]\nserve = true\n").web
    assert table["serve"] and table["address"] == "127.0.0.1" and table["port"] == 8765


@pytest.mark.parametrize(("text", "said"), [
    ("[web]\nserve = 'yes'\n", "web.serve must be true or false"),
    ("[web]\nport = 70000\n", "web.port"),
    ("[web]\nlisten = 1\n", "[web] takes"),
    ("[web]\ncertfile = 'c.pem'\n", "go together"),
    ("[web]\naddress = '0.0.0.0'\n", "not a loopback address"),
])
def test_a_bad_table_is_named(tmp_path, text, said):
    with pytest.raises(ConfigError) as caught:
        config_with(tmp_path, text)
    assert said in str(caught.value)


def test_a_network_address_takes_tls_or_the_explicit_setting(tmp_path):
    tls = config_with(tmp_path, "[web]\naddress = '0.0.0.0'\ncertfile = 'c.pem'\nkeyfile = 'k.pem'\n")
    assert tls.web["certfile"] == "c.pem"
    plain = config_with(tmp_path, "[web]\naddress = '0.0.0.0'\nallowPlainHttpOnNetwork = true\n")
    assert plain.web["address"] == "0.0.0.0"
