"""`[web]` in config.toml: whether the daemon serves the web view, and where.

Standard library only: config.py checks the table with it, and a daemon that serves nothing
never imports the web stack.
"""

from __future__ import annotations

import ipaddress
from typing import Any

KEYS = frozenset(("serve", "address", "port", "certfile", "keyfile", "allowPlainHttpOnNetwork"))
DEFAULT_ADDRESS = "127.0.0.1"
DEFAULT_PORT = 8765


class WebTableError(ValueError):
    """`[web]` holds a key or a value it cannot take; the message says which."""


def parse_table(value: Any) -> dict[str, Any]:
    """`[web]` as config.toml gives it, checked: WebTableError names what is wrong."""
    if not isinstance(value, dict) or set(value) - KEYS:
        raise WebTableError(f"[web] takes {', '.join(sorted(KEYS))}")
    for flag in ("serve", "allowPlainHttpOnNetwork"):
        if not isinstance(value.get(flag, False), bool):
            raise WebTableError(f"web.{flag} must be true or false")
    address = value.get("address", DEFAULT_ADDRESS)
    if not isinstance(address, str) or not address:
        raise WebTableError('web.address must be an address to listen on ("127.0.0.1")')
    port = value.get("port", DEFAULT_PORT)
    if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
        raise WebTableError("web.port must be a port number from 0 (any free one) to 65535")
    files = {k: value.get(k) for k in ("certfile", "keyfile")}
    if any(v is not None and (not isinstance(v, str) or not v) for v in files.values()):
        raise WebTableError("web.certfile and web.keyfile must be paths to PEM files")
    if (files["certfile"] is None) != (files["keyfile"] is None):
        raise WebTableError("web.certfile and web.keyfile go together")
    table = {"serve": value.get("serve", False), "address": address, "port": port, **files,
             "allowPlainHttpOnNetwork": value.get("allowPlainHttpOnNetwork", False)}
    refused = refusal(address, files["certfile"] is not None, table["allowPlainHttpOnNetwork"])
    if refused:
        raise WebTableError(refused)
    return table


def is_loopback(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to any interface


def refusal(address: str, tls: bool, plain_allowed: bool) -> str | None:
    """Why the view may not listen there as asked, or None: beyond this machine, the token
    and the cookie would cross the network in the clear."""
    if is_loopback(address) or tls or plain_allowed:
        return None
    return (f"{address} is not a loopback address: the web view's token would cross the network "
            "unencrypted. Give a certificate (--certfile F --keyfile K; in config.toml web.certfile "
            "and web.keyfile), or --allow-plain-http-on-network (allowPlainHttpOnNetwork = true) "
            "if the network is yours alone")
