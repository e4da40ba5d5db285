"""Session records: the typed model, the lifecycle rules, the store, token totals, end facts."""
