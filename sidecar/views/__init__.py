"""Read models: what the commands show, built from the files the daemon writes."""
