"""Live views' rows: what `top`, the web view and the fleet's publisher read, kept up to date
by the files' change events (the daemon's folder watch), with the typed stores; never loaded
by a hook's path or a plain `status`."""
