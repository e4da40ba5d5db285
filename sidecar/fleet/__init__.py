"""The fleet: each daemon publishes its sessions' rows to a Redis, with its machine's name and
a heartbeat, and any machine reads every machine's (docs/fleet.md)."""
