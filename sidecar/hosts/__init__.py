"""Everything one agent host is: its events, settings, integration, resume command and transcript."""
