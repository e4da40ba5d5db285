"""The live web view: `sidecar web`, or the daemon with `[web] serve = true` (docs/web.md)."""
