"""Other programs' files, as `sidecar integrate` and `uninstall` edit them: JSON in its own layout
(`jsonedit`), a user's linked files (`userfile`), the hosts' shared hook settings (`settings`),
the plugin files of hosts that run code (`plugin_file`, with `inbox_writer.js`), and what sidecar
owns in all of them (`owned`). The daemon loads only `plugin_file`, which tells a plugin file
sidecar wrote from one it did not."""
