"""What a session cost in US dollars: the host's own figure where it gives one, else its
tokens priced by pydantic's genai-prices table (the optional `cost` extra) at the date of
each use. Only the daemon prices, never a hook: genai-prices is imported at the first price
asked (`table.py`), and a session's figures become its record's `cost` in `session.py`."""
