"""sidecar's own completion reasons, as records keep them (every module imports them from here):
a module of plain strings, so what only words them (base/words.py) imports no enum."""

STALE = "stale"  # the completion reason of the stale sweep
HOST_EXITED = "host-exited"  # the completion reason when the host's process is gone
DEFAULT_END_REASON = "session-end"  # the completion reason of an end event that gives none
