"""The settings a running daemon acts on: config.toml and the environment file, as they are.

They are read at start, again on SIGHUP, and whenever either file changed: the daemon looks
every couple of seconds (as it looks at the registry), and a follow-up about to fire looks
first (`fresh`). So `integrate` recording an executable, or a key added to the environment
file, reaches the very next follow-up, with no `reload` and no window in which one runs with
the settings of before. A read that fails (a bad value) is logged once and the settings of
before stay, as on SIGHUP; the file is read again once it changes.

Every read, good or bad, is a new `SettingsRead` that the workspaces report in their instance
files (followups/run/environment.py): `doctor` compares it with the files, and `reload` waits
for it.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable

from sidecar import config as config_mod
from sidecar.config import Config, SettingsRead, settings_files_now
from sidecar.telemetry.settings import OtelSettings, resolve

log = logging.getLogger("sidecar")


class Settings:
    """The daemon's `Config` (swapped whole, never changed in place) and its last read."""

    def __init__(self, config: Config, read: SettingsRead | None = None,
                 on_change: Callable[[], None] = lambda: None, coordination: str = "") -> None:
        self.config = config
        self.coordination_url = config.coordination_url  # the backend's, chosen at start
        self.coordination = coordination  # how it is named in the log
        self.otel = _otel(config)  # where spans go, chosen at start (telemetry/feed.py)
        # The files as they were before `config` was read from them (cli/run.py takes them
        # first): a change in between is then read again, never taken for read.
        self.read = read or SettingsRead(time.time(), settings_files_now())
        self.on_change = on_change  # after every read, good or bad
        self.lock = threading.Lock()  # one read at a time: the loop's workers call `fresh`

    def current(self) -> Config:
        return self.config

    def last_read(self) -> SettingsRead:
        return self.read

    def fresh(self) -> Config:
        """The settings as the files are now: read again first if either changed since."""
        if settings_files_now() != self.read.files:
            self.reload(forced=False)
        return self.config

    def for_firing(self) -> Config:
        """`fresh`, for a follow-up about to fire: ConfigError while the files hold settings
        that cannot be read, rather than run it with those of before."""
        config = self.fresh()
        if self.read.error is not None:
            raise config_mod.ConfigError(f"{self.read.error} (a follow-up is not run with the "
                                         "settings of before; correct the file)")
        return config

    def reload(self, forced: bool = True) -> None:
        """Read the files again (`forced`: whether or not they changed, as on SIGHUP)."""
        with self.lock:
            files = settings_files_now()
            if not forced and files == self.read.files:
                return  # another thread has just read them
            at = time.time()
            try:
                config = config_mod.load_config()
            except config_mod.ConfigError as exc:
                log.error("configuration not reloaded: %s", exc)
                self.read = SettingsRead(at, files, str(exc))
            else:
                log.info("configuration reloaded" if forced else
                         "configuration reloaded (config.toml or the environment file changed)")
                self._say(config)
                self.config = config
                self.read = SettingsRead(at, files)
        self.on_change()

    def _say(self, config: Config) -> None:
        if config.coordination_url != self.coordination_url:
            log.warning("the coordination URL changed; it is used from the next start "
                        "(sidecar service restart): until then, %s", self.coordination)
        if _otel(config) != self.otel:
            log.warning("the OpenTelemetry settings changed; they are used from the next start "
                        "(sidecar service restart): until then, spans go to %s",
                        self.otel.endpoint if self.otel is not None else "nowhere")
        say_env_problems(config)


def _otel(config: Config) -> OtelSettings | None:
    return resolve(config.otel, config.agent_env, os.environ)


def say_env_problems(config: Config) -> None:
    """Each line of the environment file that follow-ups do not get, logged: a key dropped
    without a word is a follow-up failing for no visible reason."""
    for problem in config.env_problems:
        log.warning("%s", problem)
