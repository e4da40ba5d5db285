"""The exit codes users see, in a module of their own: the fast commands (quickcli.py) use
them without loading the command line framework that common.py brings."""

OK = 0
FAILURE = 1  # the command could not do what it was asked; doctor found something missing
USAGE = 2  # a bad command line, config.toml or registry (typer's own usage errors too)
UNSERVED = 3  # no live daemon serves the workspace (status, reload); the service is not running
NOT_WORKSPACE = 4  # the folder is not a workspace (no .context/)
NO_SERVICE_MANAGER = 5  # `service install`: no user service manager can be reached here
NO_ROOM = 6  # status: a served workspace's runtime is on a full disk or a read-only mount
BUSY = 75  # EX_TEMPFAIL: hooks.json is locked by someone else; trying again will do
