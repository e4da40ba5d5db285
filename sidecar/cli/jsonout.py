"""A command's `--json` document on standard output (without typer: `sessions` answers on
the fast path too): what a host, a model or a file said stays whole, and any character a
terminal would act on is written as its `\\u` escape (escapes.json_escaped)."""

from __future__ import annotations

import sys
from typing import Any

from sidecar import jsonfile
from sidecar.base.escapes import json_bytes_escaped


def print_json(data: Any) -> None:
    sys.stdout.buffer.write(json_bytes_escaped(jsonfile.dumps(data)))
