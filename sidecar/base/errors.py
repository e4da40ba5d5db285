"""The root of every error sidecar raises on purpose."""


class SidecarError(Exception):
    """An error whose message is meant for people: the command line prints it as one line."""
