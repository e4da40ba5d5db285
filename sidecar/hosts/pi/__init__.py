"""Pi: the host (`host.py`) and the extension it installs (`extension.ts`, shipped with the
package)."""
