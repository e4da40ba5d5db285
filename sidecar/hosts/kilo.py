"""`sidecar integrate kilo`: Kilo Code's CLI, an opencode fork, served by opencode's plugin.

Kilo Code 7.7.7 loads opencode-v1 plugins from `<project>/.kilo/plugins/` and the user's
`~/.config/kilo/plugins/` (never from `.opencode/`), sends opencode's session events (and a
`session.drained` after `session.idle`, which says nothing more), and keeps opencode's SQLite
database as `~/.local/share/kilo/kilo.db`. So this host is opencode's under Kilo's names: the
same plugin (naming its events `kilo`), the same reader of tokens and costs.

`kilo run` sends no session end either: the plugin writes it from the process's exit listener,
and a killed run is ended by sidecar's watch of the process the plugin names. Sessions are
found by id in the database of the run's own data folder, whatever folder it runs in: `kilo
run --session ses_… ` resumes the very session ("Session not found" means a run that reads
another data folder: another HOME, XDG_DATA_HOME or KILO_DB).
"""

from __future__ import annotations

from sidecar.hosts.base import Scope
from sidecar.hosts.opencode.host import Opencode


class Kilo(Opencode):
    name = "kilo"
    title = "Kilo Code"
    executable = "kilo"
    folder = "kilo"
    # Like opencode it re-quotes an argument holding a space: the prompt goes on standard input.
    resume = ("kilo", "run", "--session", "{session_id}", "<{prompt}")
    key_variables = ("KILO_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "KILO_CONFIG")
    scopes = (Scope(None),
              Scope("--user", "The user's Kilo Code plugin folder (every project).",
                    in_project=False))
    integrate_help = "A plugin that drops Kilo Code's session events into the inbox."


HOST = Kilo()
