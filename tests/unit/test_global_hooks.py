"""Global hooks in process: the user's notify hooks for every workspace, kept in their config
folder, trusted by content as they wrote them; each workspace's copy (`global.NAME`) is kept as
the global hook is, and is trusted only as that. `sidecar notify setup` writes the usual set
once however often it runs."""

from __future__ import annotations

import os
import stat

import orjson

from helpers import invoke, read_json
from sidecar.followups import globalhooks, trust
from sidecar.followups.globalhooks import GlobalStore
from sidecar.followups.model import FiringRecord, new_hook
from sidecar.followups.store import HookStore
from sidecar.views.trusted import Trusted

T0 = 1_800_000_000.0


def ok(*args: str) -> str:
    done = invoke(*args)
    assert done.returncode == 0, (done.stdout, done.stderr)
    return done.stdout.decode()


def refused(*args: str) -> str:
    done = invoke(*args)
    assert done.returncode != 0, done.stdout
    return done.stderr.decode()


def take_up(ws) -> None:
    """What the workspace's leader does at its next step."""
    globalhooks.Copies(HookStore(ws, durable=False), _Log()).step(T0)


class _Log:
    def info(self, *args: object) -> None:
        pass

    def warning(self, *args: object) -> None:
        raise AssertionError(args)


def test_a_global_hook_is_a_notice_of_the_users_kept_private_and_trusted_as_written(workspace, config_home):
    assert "only a notify hook" in refused("hooks", "add", "tidy", "--global")
    assert "give no --root" in refused("hooks", "add", "p", "--global", "--notify", "desktop",
                                       "--root", str(workspace.root))
    assert "global.phone" in ok("hooks", "add", "phone", "--global", "--event", "needs-input",
                                "--notify", "ntfys://ntfy.sh/mine-7f3a")
    path = config_home / "hooks.json"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600  # its target holds a secret
    [hook] = GlobalStore().read_file().hooks.values()
    assert trust.is_trusted_global(hook)
    listed = ok("hooks", "list", "--global")
    assert "phone" in listed and "ntfys://ntfy.sh/***" in listed and "NOT TRUSTED" not in listed
    # Changed by hand: not what the user trusted; `hooks trust --global` shows it whole first.
    doc = read_json(path)
    doc["hooks"]["phone"]["action"] = {"notify": "ntfys://ntfy.sh/someone-else"}
    path.write_bytes(orjson.dumps(doc))
    assert "sidecar hooks trust --global phone" in ok("hooks", "list", "--global")
    shown = ok("hooks", "trust", "--global", "phone", "--yes")
    assert "a global hook: in every workspace" in shown and "ntfys://ntfy.sh/someone-else" in shown
    assert "NOT TRUSTED" not in ok("hooks", "list", "--global")


def test_each_workspace_keeps_a_copy_as_the_global_hook_is_with_its_own_history(workspace):
    ok("hooks", "add", "phone", "--global", "--event", "needs-input", "--notify", "desktop")
    take_up(workspace)
    store = HookStore(workspace, durable=False)
    copy = store.snapshot(T0).hooks["global.phone"]
    assert copy.event.value == "needs-input" and not trust.untrusted(workspace, [copy])
    store.change(T0, lambda doc: doc.hooks["global.phone"].history.append(
        FiringRecord("2027-01-15T08:00:00.000Z", "ok", "claude-code", "s1", None)))
    ok("hooks", "update", "phone", "--global", "--delay", "30s")
    take_up(workspace)
    copy = store.snapshot(T0).hooks["global.phone"]
    assert copy.delay_seconds == 30 and [f.status for f in copy.history] == ["ok"]
    assert not trust.untrusted(workspace, [copy])  # `hooks update --global` trusts what it wrote
    # Told, in a workspace, to change its copy: said where it is changed instead.
    said = refused("hooks", "disable", "global.phone", "--root", str(workspace.root))
    assert "sidecar hooks disable --global phone" in said
    ok("hooks", "disable", "phone", "--global")
    take_up(workspace)
    assert not store.snapshot(T0).hooks["global.phone"].enabled
    ok("hooks", "remove", "phone", "--global")
    take_up(workspace)
    assert "global.phone" not in store.snapshot(T0).hooks


def test_a_copy_is_trusted_only_as_the_global_hook_the_user_trusted(workspace, config_home):
    ok("hooks", "add", "phone", "--global", "--event", "needs-input", "--notify", "desktop")
    take_up(workspace)
    store = HookStore(workspace, durable=False)
    raw = read_json(workspace.hooks_file)["hooks"]["global.phone"]
    assert _plainly_trusted(workspace, config_home, raw)  # as `status` sees it, without the model
    # A pull that changes the copy, or brings one of its own: neither is trusted, wherever trust
    # for a hook of that name was given in the workspace itself.
    synced = store.snapshot(T0).hooks["global.phone"]
    planted = new_hook("global.phone", "global.phone", T0, event="needs-input", delaySeconds=0,
                       action={"notify": "https://attacker.example/x"})
    trust.trust(workspace, trust.Content(planted, None), T0)
    assert trust.untrusted(workspace, [planted]) == [planted]
    assert not _plainly_trusted(workspace, config_home, planted.to_json())
    assert trust.untrusted(workspace, [synced]) == []
    # `hooks trust global.phone` in a workspace trusts the user's global hook, as it is.
    doc = read_json(config_home / "hooks.json")
    doc["hooks"]["phone"]["delaySeconds"] = 5
    (config_home / "hooks.json").write_bytes(orjson.dumps(doc))
    take_up(workspace)
    copy = store.snapshot(T0).hooks["global.phone"]
    assert trust.untrusted(workspace, [copy]) == [copy]
    assert "a global hook" in ok("hooks", "trust", "global.phone", "--yes",
                                 "--root", str(workspace.root))
    assert trust.untrusted(workspace, [copy]) == []
    ok("hooks", "remove", "phone", "--global")  # what was trusted for it is forgotten
    assert trust.untrusted(workspace, [copy]) == [copy]


def _plainly_trusted(ws, config_home, raw) -> bool:
    base = os.open(ws.root, os.O_RDONLY | os.O_DIRECTORY)
    runtime = os.open(ws.runtime, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return Trusted(str(ws.root), base, runtime, str(config_home)).check(raw)
    finally:
        os.close(base)
        os.close(runtime)


def test_a_global_file_that_is_not_the_users_alone_is_not_used(workspace, config_home):
    ok("hooks", "add", "phone", "--global", "--event", "needs-input", "--notify", "desktop")
    take_up(workspace)
    os.chmod(config_home / "hooks.json", 0o666)  # anyone may write it now
    said: list[object] = []
    log = _Log()
    log.warning = lambda *args: said.append(args)  # type: ignore[method-assign]
    globalhooks.Copies(HookStore(workspace, durable=False), log).step(T0)
    assert "not used" in str(said)
    assert "global.phone" in HookStore(workspace).snapshot(T0).hooks  # left as they were
    assert globalhooks.read_for(os.geteuid())[0] is None


def test_notify_setup_writes_the_set_once_and_again_where_it_changed(workspace, config_home):
    first = ok("notify", "setup", "desktop")
    for name in ("global.finished", "global.waiting", "global.exited", "global.limit",
                 "global.follow-up-failed"):
        assert name in first
    assert ok("notify", "setup", "desktop").count("unchanged") == 5
    hooks = GlobalStore().read_file().hooks
    assert hooks["exited"].reasons == ["host-exited"] and hooks["finished"].event.value == "turn-end"
    assert all(trust.is_trusted_global(h) for h in hooks.values())
    moved = ok("notify", "setup", "ntfys://ntfy.sh/mine-7f3a")  # another target: the set follows
    assert moved.count("written") == 5
    ok("notify", "setup", "desktop", "--prefix", "desk")  # a second set beside it
    assert len(GlobalStore().read_file().hooks) == 10
    ok("notify", "setup", "desktop", "--root", str(workspace.root))  # one workspace's only
    mine = HookStore(workspace).snapshot(T0).hooks
    assert {"finished", "waiting", "exited", "limit", "follow-up-failed"} <= mine.keys()
    assert not trust.untrusted(workspace, mine.values())


def test_a_copy_of_a_global_hook_as_it_was_before_a_change_is_no_longer_trusted(workspace):
    """A stale copy (its global file unreadable since, or planted as it once was) is not
    trusted once the user changed the global hook: only their latest approval counts."""
    ok("hooks", "add", "phone", "--global", "--event", "needs-input", "--notify", "https://a.example/x")
    take_up(workspace)
    before = HookStore(workspace, durable=False).snapshot(T0).hooks["global.phone"]
    ok("hooks", "update", "phone", "--global", "--notify", "https://b.example/x")
    assert trust.untrusted(workspace, [before]) == [before]
    take_up(workspace)
    after = HookStore(workspace, durable=False).snapshot(T0).hooks["global.phone"]
    assert trust.untrusted(workspace, [after]) == []
