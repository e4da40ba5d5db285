"""A notify target's secrets: a password, an access token, a webhook's token in its path or
query, an apprise URL's token. They are sent where they belong (an Authorization header) and
shown nowhere: not in `hooks list` (text or JSON), `status`, `doctor`, trust messages, a
firing's log lines, nor its outcome in the hook's history."""

from __future__ import annotations

import base64
import json
import stat
from dataclasses import replace

import pytest

from helpers import invoke
from sidecar.doctor import hooks as doctor_hooks
from sidecar.followups import trust
from sidecar.followups.notify import send, targets
from sidecar.followups.notify.targets import Notify
from support import receiver as receiver_mod

T0 = 1_700_000_000.0
SECRETS = ("hunter2", "tk_s3cr3t", "B0T0K3N", "XXXX", "zz-token")


@pytest.mark.parametrize(("target", "shown"), [
    ("ntfys://me:hunter2@ntfy.sh/t", "ntfys://***@ntfy.sh/***"),
    ("ntfy://tk_s3cr3t@ntfy.example:8080/alerts", "ntfy://***@ntfy.example:8080/***"),
    ("ntfys://ntfy.sh/my-agents-7f3a", "ntfys://ntfy.sh/***"),  # a public topic is a password
    ("https://bob:hunter2@127.0.0.1:9/hook", "https://***@127.0.0.1:9/***"),
    ("https://bob:hun#ter2@127.0.0.1:9/hook", "https://***@127.0.0.1:9/***"),  # unencoded #
    ("https://hooks.slack.com/services/T000/B000/XXXX", "https://hooks.slack.com/services/***"),
    ("https://discord.com/api/webhooks/123/XXXX", "https://discord.com/api/***"),
    ("https://webhook.site/0f3c9a52-XXXX", "https://webhook.site/***"),  # one segment: a token
    ("https://example.com/hook?token=zz-token", "https://example.com/***?***"),
    ("https://example.com/", "https://example.com/"),
    ("http://[::1]:8080/a/XXXX#zz-token", "http://[::1]:8080/a/***#***"),
    # A password holding an unencoded / : where the user part ends cannot be told.
    ("https://alice:s3cr/etpw@hooks.example.com/x", "https://***"),
    ("https://alice:12/etpw@hooks.example.com/x", "https://alice:12/***"),  # @ in the path
    ("tgram://123:B0T0K3N/chat", "tgram://***"),
    ("slack://T000/B000/XXXX", "slack://***"),
    ("mailto://me:hunter2@gmail.com", "mailto://***"),
    ("pover://USERKEY@XXXX", "pover://***"),  # Pushover's app token is after the @
    ("desktop", "desktop"),
    ("me:hunter2@ntfy.sh/t", "***"),  # no scheme: not a target, and nothing of it is shown
])
def test_shown_hides_every_secret_and_keeps_what_names_the_target(target, shown):
    assert targets.shown(target) == shown
    assert targets.shown(shown) == shown  # shown twice (a masked action shown again): the same
    assert trust.shown(Notify(target)) == f"notify {shown}"


def job(target: str) -> dict[str, object]:
    return {"target": target, "host": "claude-code", "sessionId": "s1", "workspace": "/w/p",
            "notice": {"event": "session-end", "reason": "exit"}}


def test_a_webhook_with_a_user_and_password_is_sent_with_basic_auth(receiver):
    host, port = receiver.hostport.split(":")
    said: list[str] = []
    assert send.deliver(job(f"http://bob:hunter2@{host}:{port}/hook"), tries=1,
                        say=said.append)
    [got] = receiver.at("/hook")
    assert got.headers["Authorization"] == "Basic " + base64.b64encode(b"bob:hunter2").decode()
    assert got.json()["event"] == "session-end"
    assert not any("hunter2" in line for line in said)


def test_an_ntfy_access_token_is_sent_as_a_bearer_token(receiver):
    for user, path in (("tk_s3cr3t", "alerts"), (":tk_s3cr3t", "empty-user"), ("me:hunter2", "pw")):
        assert send.deliver(job(f"ntfy://{user}@{receiver.hostport}/{path}"), tries=1,
                            say=lambda line: None)
    assert [r.headers["Authorization"] for path in ("/alerts", "/empty-user", "/pw")
            for r in receiver.at(path)] == ["Bearer tk_s3cr3t", "Bearer tk_s3cr3t",
                                            "Basic " + base64.b64encode(b"me:hunter2").decode()]


def test_a_target_that_cannot_be_reached_names_its_host_only():
    said: list[str] = []
    target = "http://bob:hunter2@127.0.0.1:1/services/T000/XXXX?token=zz-token"
    assert not send.deliver(job(target), tries=1, say=said.append, timeout=2)
    assert said[-1].startswith("notice not delivered: cannot reach 127.0.0.1:1: ")
    assert not any(secret in line for line in said for secret in SECRETS), said


def test_no_command_shows_a_targets_secret(workspace):
    ws = workspace.root
    secret_targets = {"pw": "https://bob:hunter2@127.0.0.1:1/hook",
                      "slack": "https://hooks.slack.com/services/T000/B000/XXXX?token=zz-token",
                      "token": "ntfy://tk_s3cr3t@127.0.0.1:1/alerts"}
    for name, target in secret_targets.items():
        added = invoke("hooks", "add", name, "--event", "needs-input", "--notify", target,
                       "--root", str(ws))
        assert added.returncode == 0, added.stderr
        assert not any(s.encode() in added.stdout + added.stderr for s in SECRETS)
    said = b""
    for args in (("hooks", "list"), ("hooks", "list", "--json"), ("status",),
                 ("status", "--json")):
        done = invoke(*args, "--root", str(ws))
        said += done.stdout + done.stderr
    # `doctor`'s findings of the workspace's hooks (the whole command looks at services too).
    said += "".join(f.what + f.fix for f in doctor_hooks.check(workspace)).encode()
    for secret in SECRETS:
        assert secret.encode() not in said, secret
    assert b"https://***@127.0.0.1:1/***" in said and b"https://hooks.slack.com/services/***" in said
    listed = json.loads(invoke("hooks", "list", "--json", "--root", str(ws)).stdout)
    assert listed["hooks"]["pw"]["action"] == {"notify": "https://***@127.0.0.1:1/***"}
    # hooks.json itself holds the real target, private to its owner; trust is over the real one.
    assert stat.S_IMODE(workspace.hooks_file.stat().st_mode) == 0o600
    assert json.loads(workspace.hooks_file.read_bytes())["hooks"]["pw"]["action"] == {
        "notify": secret_targets["pw"]}
    from sidecar.followups import store

    pw = store.read_view(workspace).hooks["pw"]
    assert trust.is_trusted(workspace, trust.content(workspace, pw))
    shown = replace(pw, action=Notify(targets.shown(secret_targets["pw"])))
    assert not trust.is_trusted(workspace, trust.content(workspace, shown))


def test_the_trust_prompt_shows_the_whole_target_it_asks_about(workspace):
    """`hooks trust` is the one place a target is shown whole: asked to allow a notice that
    came with a clone, the user must tell their own topic from someone else's on the same
    server (`ntfys://ntfy.sh/***` would not)."""
    ws = workspace.root
    target = "ntfys://ntfy.sh/someone-elses-topic"
    assert invoke("hooks", "add", "n", "--event", "needs-input", "--notify", target,
                  "--root", str(ws)).returncode == 0
    shown = invoke("hooks", "trust", "n", "--yes", "--root", str(ws))
    assert shown.returncode == 0 and f"notify {target}".encode() in shown.stdout, shown.stdout
    assert b"someone-elses-topic" not in invoke("hooks", "list", "--root", str(ws)).stdout


BAD = "https://alice:s3cr/etpw@hooks.example.com/x"  # a password with an unencoded /


def test_a_bad_target_set_by_hand_is_named_without_its_secret(workspace, tmp_path):
    """A hand edit (or a pull) that leaves a target urllib cannot read: every command that
    says hooks.json is broken says why without the target's password."""
    ws = workspace.root
    typed = invoke("hooks", "add", "typed", "--notify", BAD, "--root", str(ws))
    assert typed.returncode != 0 and b"https://***" in typed.stderr
    said = typed.stdout + typed.stderr
    assert invoke("hooks", "add", "phone", "--notify", "https://hooks.example.com/x",
                  "--root", str(ws)).returncode == 0
    doc = json.loads(workspace.hooks_file.read_bytes())
    doc["hooks"]["phone"]["action"] = {"notify": BAD}
    workspace.hooks_file.write_text(json.dumps(doc))
    for args in (("hooks", "list"), ("hooks", "list", "--json"), ("status",),
                 ("status", "--json"), ("hooks", "add", "more", "--notify", "desktop")):
        done = invoke(*args, "--root", str(ws))
        said += done.stdout + done.stderr
    said += "".join(f.what + f.fix for f in doctor_hooks.check(workspace)).encode()
    # A clone that ships it: `init` moves it aside and says what it found.
    clone = tmp_path / "clone" / ".context" / "runtime"
    clone.mkdir(parents=True)
    (clone / "hooks.json").write_text(json.dumps(doc))
    init = invoke("init", str(tmp_path / "clone"))
    assert init.returncode == 0, init.stderr
    assert b"hooks.json that cannot be used" in init.stdout
    said += init.stdout + init.stderr
    assert b"phone.action.notify" in said  # the error is still said, and where it is
    assert b"s3cr" not in said and b"etpw" not in said, said.decode()


@pytest.mark.parametrize("target", [
    "https://alice:s3cr@hooks.example.com:s3cr/x",  # a port that is no number
    "https://alice:s3cr@hooks.example.com:99999/x",  # a port out of range
    "https://[alice:s3cr@hooks.example.com/x",  # an unclosed [
    "ntfys://alice:s3cr@ntfy.sh/s3cr.topic",  # a topic ntfy does not take
    "s3cr",  # not a URL at all
])
def test_no_target_error_holds_the_target_or_urllibs_words(target):
    with pytest.raises(targets.TargetError) as raised:
        targets.check(target)
    assert "s3cr" not in str(raised.value)


def test_a_redirect_is_refused_and_carries_no_authorization(receiver):
    """urllib would follow a 302 to wherever it points, Authorization header and all, as a
    GET that counts as delivered: a notice goes to its target or fails."""
    elsewhere = receiver_mod.start()
    try:
        receiver.redirects["/hook"] = f"{elsewhere.url}/landed"
        receiver.redirects["/alerts"] = f"{elsewhere.url}/alerts"
        host, port = receiver.hostport.split(":")
        said: list[str] = []
        assert not send.deliver(job(f"http://bob:hunter2@{host}:{port}/hook"), tries=1,
                                say=said.append)
        assert not send.deliver(job(f"ntfy://tk_s3cr3t@{receiver.hostport}/alerts"), tries=1,
                                say=said.append)
        assert elsewhere.received == []  # never asked, with or without the header
        assert [r.method for r in receiver.received] == ["POST", "POST"]
        assert said[-1] == f"notice not delivered: HTTP 302 redirects to {elsewhere.hostport}, " \
                           "which is not followed"
        assert not any(secret in line for line in said for secret in SECRETS), said
    finally:
        elsewhere.stop()
