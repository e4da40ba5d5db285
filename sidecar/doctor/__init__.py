"""`sidecar doctor`'s checks: what is missing, and the command that fixes it."""
