"""The settings a running daemon acts on (daemon/settings.py), in process: taken up when the
files change, and never the settings of before for a follow-up once the files say otherwise."""

from __future__ import annotations

import pytest

from sidecar import config as config_mod
from sidecar.daemon.settings import Settings


def test_a_follow_up_never_fires_with_the_settings_of_before_a_bad_edit(config_home):
    (config_home / "config.toml").write_text('[resume]\n"claude-code" = ["claude-old"]\n')
    settings = Settings(config_mod.load_config())
    (config_home / "config.toml").write_text('[resume]\n"claude-code" = ["claude-new", "-p"]\n')
    assert settings.for_firing().resume["claude-code"][0] == "claude-new"  # taken up at once
    (config_home / "config.toml").write_text('[resume]\n"claude-code" = "not a list of words"\n')
    with pytest.raises(config_mod.ConfigError, match="not run with the settings of before"):
        settings.for_firing()
    assert settings.fresh().resume["claude-code"][0] == "claude-new"  # the daemon goes on
