"""`sidecar run`: the process, one steppable server per workspace, ingestion, watches, instances."""
