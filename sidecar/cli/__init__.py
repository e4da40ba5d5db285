"""The `sidecar` command line: thin commands over the parts that do the work."""
