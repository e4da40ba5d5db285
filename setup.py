"""The build step that records which commit a wheel is built from (sidecar/BUILD_COMMIT), so an
installed sidecar reports its build without git; everything else is in pyproject.toml."""

import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _commit() -> str | None:
    if not (HERE / ".git").exists():
        return None  # an sdist, or a copy: the installed build reports its version alone
    try:
        found = subprocess.run(["git", "-C", str(HERE), "rev-parse", "HEAD"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return found.stdout.strip() if found.returncode == 0 else None


class BuildWithCommit(build_py):
    def run(self) -> None:
        super().run()
        commit = _commit()
        if commit and not getattr(self, "editable_mode", False):
            (Path(self.build_lib) / "sidecar" / "BUILD_COMMIT").write_text(commit + "\n")


setup(cmdclass={"build_py": BuildWithCommit})
