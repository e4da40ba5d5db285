"""A workspace's log lines begin with its root, whatever the root's characters."""

from __future__ import annotations

import logging

from sidecar.base.wslog import WorkspaceLog


def test_each_line_begins_with_the_root_even_one_with_a_percent(caplog):
    caplog.set_level(logging.INFO, logger="sidecar")
    WorkspaceLog("/home/a%sb/ws").info("leading (instance %s%s)", "abcd", "")
    WorkspaceLog("/srv/ws").warning("the lead was lost")
    assert [r.getMessage() for r in caplog.records] == [
        "/home/a%sb/ws: leading (instance abcd)", "/srv/ws: the lead was lost"]
