"""Running a follow-up: its argv and process group (actions), the detached runner that runs
it and its lease in Redis (runner, lease), an action another machine may run (remote), the
environment it runs with (environment), and its log's last line (logtail)."""
