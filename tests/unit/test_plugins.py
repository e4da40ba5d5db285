"""Loading plugins from the `sidecar.plugins` entry-point group."""

from __future__ import annotations

import logging

from sidecar.daemon import plugins
from sidecar.vocabulary import EventKind


def test_a_plugin_that_fails_to_load_is_logged_and_the_others_load(tmp_path, monkeypatch, caplog):
    (tmp_path / "good_plugin.py").write_text("def on_session_start(**kw):\n    pass\n")
    info = tmp_path / "test_plugins-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: test-plugins\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[sidecar.plugins]\ngood = good_plugin\nbroken = no_such_module_here:plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with caplog.at_level(logging.ERROR, logger="sidecar"):
        loaded = plugins.load()
    assert [p.name for p in loaded] == ["good"]
    assert loaded[0].callback(EventKind.SESSION_START) is not None
    assert loaded[0].callback(EventKind.SESSION_END) is None
    assert "plugin broken failed to load" in caplog.text
