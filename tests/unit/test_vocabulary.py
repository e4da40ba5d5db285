"""One vocabulary: event kinds shared by events, hooks and plugins; one root for errors."""

from __future__ import annotations

import pytest

from sidecar import config, jsonfile, layout, locks
from sidecar.base.errors import SidecarError
from sidecar.daemon import plugins
from sidecar.followups import model, prompts
from sidecar.followups.run import actions
from sidecar.hosts import base, registry
from sidecar.inbox import events
from sidecar.install import service
from sidecar.sessions import store as session_store
from sidecar.vocabulary import EventKind, FollowUpEvent


@pytest.mark.parametrize("error", [
    actions.ActionError, config.ConfigError, events.BadEvent, model.HooksError,
    base.IntegrateError, locks.LockTimeout, service.ServiceError, session_store.StoreError,
    service.NoServiceManager, prompts.PromptError, layout.TamperedRuntime, layout.UnconfinedName,
    jsonfile.NotARegularFile,
])
def test_every_error_sidecar_raises_on_purpose_shares_one_root(error):
    assert issubclass(error, SidecarError)


def test_every_event_kind_can_queue_a_hook_and_reach_a_plugin():
    # and the follow-up runner's own events, which only a notify hook hears (test_notify_hooks)
    assert set(model.HOOK_EVENTS) == {kind.value for kind in EventKind} | {e.value for e in FollowUpEvent}
    assert all(kind in plugins.CALLBACKS for kind in EventKind)
    for kind in EventKind:
        for host in (*registry.names(), "unknown"):
            assert events.canonical(host, kind.value) is kind
