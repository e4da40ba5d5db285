"""opencode: the host (`host.py`) and the plugin it installs (`plugin.js`, shipped with the
package)."""
