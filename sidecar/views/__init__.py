"""Read models: what the commands show, built from the workspace's files with the standard
library and sidecar.base alone (tests/daemon/test_imports.py holds them to it). A rare branch
(a coordination service, a trust to weigh, a broken hooks.json) imports the module that knows
it, where it is met."""
