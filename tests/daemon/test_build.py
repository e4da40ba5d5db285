"""Which build an instance is: the version and the commit, from a checkout (git) and from an
installed wheel (recorded when it was built), so two builds of one version are told apart."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import orjson
import pytest

from helpers import REPO, run_cli
from sidecar.base.version import __version__

CHECKOUT = REPO


def _head() -> str:
    if shutil.which("git") is None or not (CHECKOUT / ".git").exists():
        pytest.skip("not run from a git checkout of sidecar")
    return subprocess.run(["git", "-C", str(CHECKOUT), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()


def _build_id(package_parent: Path, cwd: Path) -> str:
    """What `sidecar` imported from `package_parent` says its build is."""
    code = "from sidecar.base.version import shown; print(shown())"
    env = {**os.environ, "PYTHONPATH": str(package_parent)}
    return subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                          cwd=cwd, env=env, check=True).stdout.strip()


def test_status_shows_each_instance_build_with_its_commit(workspace, start_daemon):
    expected = f"{__version__}+{_head()[:12]}"
    start_daemon(workspace.root)
    report = orjson.loads(run_cli("status", "--root", str(workspace.root), "--json").stdout)
    assert [i["build"] for i in report["workspaces"][0]["instances"]] == [expected]
    text = run_cli("status", "--root", str(workspace.root)).stdout.decode()
    assert f"v{expected}  leader" in text
    assert run_cli("--version").stdout.decode().strip() == expected


@pytest.mark.slow
def test_a_wheel_records_the_commit_it_was_built_from(tmp_path):
    head = _head()
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet",
                            "--disable-pip-version-check", "-w", str(tmp_path / "dist"),
                            str(CHECKOUT)], capture_output=True, text=True, timeout=300)
    if built.returncode != 0:
        pytest.skip(f"a wheel cannot be built here (its build tools need a package index): "
                    f"{built.stderr.strip().splitlines()[-1:]}")
    wheel = next((tmp_path / "dist").glob("agent_sidecar-*.whl"))
    installed = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        assert archive.read("sidecar/BUILD_COMMIT").decode().strip() == head
        archive.extractall(installed)  # what pip installs, without git anywhere near it
    (tmp_path / "elsewhere").mkdir()
    assert _build_id(installed, tmp_path / "elsewhere") == f"{__version__}+{head[:12]}"
    assert _plugin_files(installed, tmp_path / "elsewhere") == "assembled"


PLUGIN_FILES = """
import sys
import sidecar
from sidecar.hosts.files.plugin_file import WRITER
from sidecar.hosts.opencode.host import plugin_source
from sidecar.hosts.pi.host import extension_source
assert sidecar.__file__.startswith(sys.argv[1]), sidecar.__file__
writer = WRITER.read_bytes()
assert writer in plugin_source() and writer in extension_source()
print("assembled")
"""


def _plugin_files(package_parent: Path, cwd: Path) -> str:
    """Whether the plugin files the hosts install (their own part and the shared inbox writer,
    package data) came with the package at `package_parent` and assemble."""
    env = {**os.environ, "PYTHONPATH": str(package_parent)}
    return subprocess.run([sys.executable, "-c", PLUGIN_FILES, str(package_parent)],
                          capture_output=True, text=True, cwd=cwd, env=env,
                          check=True).stdout.strip()


def test_a_copy_with_neither_git_nor_a_record_says_its_commit_is_unknown(tmp_path):
    shutil.copytree(CHECKOUT / "sidecar", tmp_path / "copy" / "sidecar",
                    ignore=shutil.ignore_patterns("BUILD_COMMIT", "__pycache__"))
    assert _build_id(tmp_path / "copy", tmp_path) == f"{__version__} (commit unknown)"
