"""What each host needs from the environment a follow-up runs it in: the variables it reads
its credentials or endpoint from. Read by the daemon (which reports which are set) and by
doctor; only the standard library.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from sidecar.envfile import read_settings_file

# Variables a host reads its credentials or endpoint from: flagged when the user's shell has
# one and the service's environment lacks it (a login keeps Claude Code's key elsewhere).
KEY_VARIABLES: dict[str, tuple[str, ...]] = {
    "claude-code": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL",
                    "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX"),
    "codex": ("OPENAI_API_KEY", "CODEX_HOME"),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL",
               "GOOGLE_CLOUD_PROJECT"),
    "opencode": ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENCODE_CONFIG"),
}


def codex_needed(codex_home: Path) -> tuple[str, ...]:
    """The variable Codex's model provider reads its key from (`env_key`), if it names one."""
    try:
        return codex_env_key(read_settings_file(codex_home / "config.toml"))
    except (OSError, ValueError):
        return ()


def codex_env_key(config_toml: bytes) -> tuple[str, ...]:
    """`env_key` of the model provider a Codex config.toml's bytes choose, if it names one."""
    try:
        data = tomllib.loads(config_toml.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return ()
    provider = data.get("model_provider")
    providers = data.get("model_providers")
    if not isinstance(provider, str) or not isinstance(providers, dict):
        return ()
    entry = providers.get(provider)
    key = entry.get("env_key") if isinstance(entry, dict) else None
    return (key,) if isinstance(key, str) and key else ()


def host_variables() -> set[str]:
    """Every variable some host reads its credentials or endpoint from."""
    return {name for names in KEY_VARIABLES.values() for name in names}
