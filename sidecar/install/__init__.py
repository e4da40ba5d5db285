"""Installing sidecar on a machine: the service, the agent's environment, init's checks."""
