"""Whether git tracks a clone's runtime, read from the index as bytes for every form of it
git writes: versions 2, 3 and 4 (4 compresses each path against the one before, so the
folder's name need not appear whole), and a worktree's `.git` file. Real git repositories."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import git, needs_git
from sidecar.install import gitindex

pytestmark = needs_git


def repository(root: Path, version: int) -> Path:
    root.mkdir()
    git("init", "-q", cwd=root)
    git("config", "index.version", str(version), cwd=root)
    for name in (".context/hooks/post-task.md", ".context/runtime/hooks.json", "src/a.py"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x\n")
    git("add", "-f", ".", cwd=root)
    git("commit", "-qm", "x", cwd=root)
    return root


@pytest.mark.parametrize("version", [2, 3, 4])
def test_a_tracked_runtime_is_found_in_every_index_version(tmp_path, version):
    root = repository(tmp_path / "r", version)
    assert gitindex.tracks_under(root, ".context/runtime/")
    assert not gitindex.tracks_under(root, ".context/elsewhere/")
    git("rm", "-rq", "--cached", ".context/runtime", cwd=root)
    assert not gitindex.tracks_under(root, ".context/runtime/")


def test_a_worktree_is_read_through_its_git_file(tmp_path):
    root = repository(tmp_path / "r", 4)
    git("worktree", "add", "-q", str(tmp_path / "wt"), cwd=root)
    assert (tmp_path / "wt" / ".git").is_file()
    assert gitindex.tracks_under(tmp_path / "wt", ".context/runtime/")
