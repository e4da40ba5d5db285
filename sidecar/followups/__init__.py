"""Follow-up hooks: the hooks.json model and store, the queue, when to fire, what firing runs."""
