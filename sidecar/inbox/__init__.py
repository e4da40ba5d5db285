"""Files in, events out: list the inbox, read each file safely, parse and validate it, set bad ones aside."""
