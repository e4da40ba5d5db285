"""Notify hooks: which transitions they are told of and queued for (notices), where a notice
goes (targets), and the sender a firing runs to deliver one (send)."""
