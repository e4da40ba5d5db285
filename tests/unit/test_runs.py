"""How a view tells a follow-up's run has ended (base/runs.py): from the `.status` file its
runner writes, read without following a link, and never more of it than a runner writes."""

from __future__ import annotations

import os

from sidecar.base import runs


def test_the_runners_status_says_how_it_ended_and_nothing_else_is_read(workspace):
    folder = workspace.logs / "hooks" / "post-task"
    folder.mkdir(parents=True)
    (folder / "a.log.status").write_text('{"exit": 3}')
    root = str(workspace.root)
    assert runs.ended_in(root, "post-task", f"{folder}/a.log") == "error: exit status 3"
    assert runs.ended_in(root, "post-task", "b.log") is None  # none yet: it runs
    os.mkfifo(folder / "fifo.log.status")  # never a read that could wait
    (folder / "link.log.status").symlink_to(folder / "a.log.status")
    # More than a runner ever writes (here a valid one, padded): planted to stall the reader,
    # whom a sparse file of gigabytes would keep reading for a minute.
    (folder / "huge.log.status").write_text('{"exit": 0}' + " " * runs.MAX_STATUS)
    for log in ("fifo.log", "link.log", "huge.log", "../../x.log"):
        assert runs.ended_in(root, "post-task", log) is None, log
    assert runs.ended_in(root, "../post-task", "a.log") is None
