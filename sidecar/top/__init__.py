"""`sidecar top`: a live, full-screen view of every session and its follow-ups."""
