"""End-to-end tests: the real host CLIs, offline against loopback stubs (`stubs/`).

Each host has a folder with its e2e test and its recorded fixtures; this file puts `tests/e2e`
on the import path so they can import the stubs, and each host's folder, so a test of several
hosts (`test_host_exit_e2e.py`) can import a host's set-up however the run was chosen.
"""

import sys
from pathlib import Path

for folder in sorted(Path(__file__).parent.iterdir()):
    if (folder / "fixtures").is_dir() and str(folder) not in sys.path:
        sys.path.append(str(folder))
