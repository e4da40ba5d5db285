"""base/paths.py: where sidecar's own files are, found once for `emit`, the status line,
`status` and the typed code alike."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sidecar import config, layout
from sidecar.base import paths


@pytest.mark.parametrize("override, xdg, expected", [
    ("/cfg", "/xdg", "/cfg"), (None, "/xdg", "/xdg/sidecar"), (None, None, "~/.config/sidecar")])
def test_the_config_folder_follows_the_override_then_xdg_then_home(monkeypatch, override, xdg,
                                                                   expected):
    for name, value in (("SIDECAR_CONFIG_HOME", override), ("XDG_CONFIG_HOME", xdg)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert paths.config_home() == os.path.expanduser(expected)
    assert paths.registry_file() == os.path.join(os.path.expanduser(expected), "workspaces.json")


def test_a_workspace_is_the_nearest_folder_with_a_context_folder(tmp_path):
    (tmp_path / "outer" / ".context").mkdir(parents=True)
    (tmp_path / "outer" / "inner" / ".context").mkdir(parents=True)
    (tmp_path / "outer" / "inner" / "deep").mkdir()
    (tmp_path / "outer" / "file").write_text("")
    assert paths.find_workspace(str(tmp_path / "outer" / "inner" / "deep")) \
        == str(tmp_path / "outer" / "inner")
    assert paths.find_workspace(str(tmp_path / "outer" / "file")) == str(tmp_path / "outer")
    assert paths.find_workspace(str(tmp_path)) is None


def test_a_link_is_kept_by_the_hook_and_resolved_by_the_typed_lookup(tmp_path):
    (tmp_path / "real" / ".context").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert paths.find_workspace(str(tmp_path / "link")) == str(tmp_path / "link")
    found = layout.find_workspace(tmp_path / "link")
    assert found is not None and found.root == tmp_path / "real"


@pytest.mark.parametrize("text", [b'[]', b'{"workspaces": "/a"}', b'{"workspaces": [1]}',
                                  b'{"other": []}'])
def test_a_registry_of_another_shape_is_refused_not_read_as_empty(config_home, text):
    (config_home / "workspaces.json").write_bytes(text)
    with pytest.raises(config.RegistryError, match="cannot be read"):
        config.load_registry()
    with pytest.raises(ValueError, match="workspaces"):
        paths.registry_roots(json.loads(text))


def test_a_registry_names_its_roots_in_order(config_home):
    (config_home / "workspaces.json").write_bytes(b'\xef\xbb\xbf{"workspaces": ["/b", "/a"]}')
    assert config.load_registry() == [Path("/b"), Path("/a")]
