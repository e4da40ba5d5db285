"""One vocabulary: event kinds shared by events, hooks and plugins; one root for errors."""

from __future__ import annotations

import pytest

from sidecar import (
    actions,
    config,
    events,
    hookdoc,
    hooks,
    integrate,
    jsonfile,
    layout,
    locks,
    plugins,
    service,
    sessions,
)
from sidecar.kinds import EventKind, SidecarError


@pytest.mark.parametrize("error", [
    actions.ActionError, config.ConfigError, events.BadEvent, hookdoc.HooksError,
    integrate.IntegrateError, locks.LockTimeout, service.ServiceError, sessions.StoreError,
    service.NoServiceManager, hooks.PromptError, layout.TamperedRuntime, layout.UnconfinedName,
    jsonfile.NotARegularFile,
])
def test_every_error_sidecar_raises_on_purpose_shares_one_root(error):
    assert issubclass(error, SidecarError)


def test_every_event_kind_can_queue_a_hook_and_reach_a_plugin():
    assert set(hookdoc.HOOK_EVENTS) == {kind.value for kind in EventKind}
    assert all(kind in plugins.CALLBACKS for kind in EventKind)
    for kind in EventKind:
        assert events.canonical(kind.value) is kind
