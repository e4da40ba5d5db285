"""`sidecar web` as a user starts it: a real process on a free loopback port, asked over HTTP.
Nothing is answered without the token; the token signs a browser in once and leaves the address
bar; a POST from another site or without the page's CSRF token is refused; the token file is
the user's alone and never written through a planted link; and a network address is refused
without TLS."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess

import httpx
import pytest

from helpers import run_cli

pytestmark = pytest.mark.daemon


def csrf_of(web, client: httpx.Client) -> str:
    page = client.get(web.base, headers={"Authorization": f"Bearer {web.token}"})
    assert page.status_code == 200
    found = re.search(r'<meta name="csrf-token" content="([0-9a-f]{64})">', page.text)
    assert found, page.text
    return found.group(1)


def test_nothing_is_answered_without_the_token(workspace, serve_web):
    web = serve_web(workspace.root)
    for path in ("", "api/sessions", "api/events", "static/index.html", f"?token={'x' * 43}"):
        answer = httpx.get(web.base + path)
        assert answer.status_code == 401, path
        assert "sidecar web" in answer.text and web.token not in answer.text
    wrong = httpx.get(web.base + "api/sessions", headers={"Authorization": "Bearer " + "y" * 43})
    assert wrong.status_code == 401
    assert httpx.post(web.base + "api/act", json={"key": "k", "what": "cancel"}).status_code == 401


def test_the_token_signs_a_browser_in_and_leaves_the_address_bar(workspace, serve_web):
    web = serve_web(workspace.root)
    with httpx.Client() as browser:
        signed = browser.get(f"{web.base}?token={web.token}")
        assert signed.status_code == 303 and signed.headers["location"] == "/"
        cookie = signed.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
        page = browser.get(web.base)  # the cookie alone now
        assert page.status_code == 200 and "{{csrf}}" not in page.text
        assert page.headers["content-security-policy"].startswith("default-src 'self'")
        assert page.headers["x-frame-options"] == "DENY"
        listed = browser.get(web.base + "api/sessions")
        assert listed.status_code == 200 and listed.headers["cache-control"] == "no-store"
        assert listed.json()["total"] == 0


def test_bearer_signs_in_a_script(workspace, serve_web):
    web = serve_web(workspace.root)
    listed = httpx.get(web.base + "api/sessions", headers={"Authorization": f"Bearer {web.token}"})
    assert listed.status_code == 200
    assert listed.json()["version"] == 1 and listed.json()["sessions"] == []


def test_a_cross_site_post_or_one_without_csrf_is_refused(workspace, serve_web):
    web = serve_web(workspace.root)
    bearer = {"Authorization": f"Bearer {web.token}"}
    with httpx.Client() as client:
        csrf = csrf_of(web, client)
        body = {"key": "bm9uZQ", "what": "cancel"}
        refused = [
            {**bearer},  # no CSRF token
            {**bearer, "X-CSRF-Token": "0" * 64},
            {**bearer, "X-CSRF-Token": csrf, "Origin": "http://evil.example"},
            {**bearer, "X-CSRF-Token": csrf, "Sec-Fetch-Site": "cross-site"},
        ]
        for headers in refused:
            assert client.post(web.base + "api/act", json=body, headers=headers).status_code == 403, headers
        same_site = {**bearer, "X-CSRF-Token": csrf, "Origin": web.base.rstrip("/"),
                     "Sec-Fetch-Site": "same-origin"}
        gone = client.post(web.base + "api/act", json=body, headers=same_site)
        assert gone.status_code == 404 and "error" in gone.json()  # past the guard: no such session


def test_the_token_is_shown_once_and_kept_for_the_user_alone(workspace, serve_web, config_home):
    first = serve_web(workspace.root)
    token_file = config_home / "web-token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert any(first.token.encode() in line for line in first.lines)
    first.stop()
    again = serve_web(workspace.root)
    assert again.token == first.token
    assert not any(first.token.encode() in line for line in again.lines)
    assert any(b"--show-token" in line for line in again.lines)
    shown = run_cli("web", "--show-token")
    assert shown.returncode == 0 and first.token in shown.stdout.decode()


def test_a_link_planted_as_the_token_file_is_not_followed(workspace, config_home, tmp_path):
    target = tmp_path / "somebody-elses"
    target.write_text("keep me\n")
    (config_home / "web-token").symlink_to(target)
    started = run_cli("web", "--port", "0", "--root", str(workspace.root), timeout=20)
    assert started.returncode == 1
    assert "web-token" in started.stderr.decode()
    assert target.read_text() == "keep me\n"
    assert os.path.islink(config_home / "web-token")


@pytest.mark.parametrize("address", ["0.0.0.0", "192.0.2.10"])
def test_a_network_address_is_refused_without_tls(workspace, address):
    refused = run_cli("web", "--address", address, "--port", "0", "--root", str(workspace.root))
    assert refused.returncode == 2
    assert "not a loopback address" in refused.stderr.decode()
    assert "--allow-plain-http-on-network" in refused.stderr.decode()


def test_a_network_address_with_the_explicit_flag_is_served(workspace, serve_web):
    web = serve_web(workspace.root, extra=["--address", "0.0.0.0", "--allow-plain-http-on-network"])
    port = web.base.rsplit(":", 1)[1].rstrip("/")
    answer = httpx.get(f"http://127.0.0.1:{port}/api/sessions",
                       headers={"Authorization": f"Bearer {web.token}"})
    assert answer.status_code == 200


def test_only_the_static_folder_is_served(workspace, serve_web):
    web = serve_web(workspace.root)
    bearer = {"Authorization": f"Bearer {web.token}"}
    for path in ("static/../app.py", "static/..%2fapp.py", "static/%2e%2e/__init__.py",
                 "static/.hidden", "static/nothing.js"):
        assert httpx.get(web.base + path, headers=bearer).status_code == 404, path


def test_a_network_address_is_served_over_tls_with_a_secure_cookie(workspace, serve_web, tmp_path):
    if shutil.which("openssl") is None:
        pytest.fail("openssl is needed to make the test's certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    web = serve_web(workspace.root, extra=["--address", "0.0.0.0", "--certfile", str(cert),
                                           "--keyfile", str(key)])
    assert web.base.startswith("https://")
    port = web.base.rsplit(":", 1)[1].rstrip("/")
    signed = httpx.get(f"https://127.0.0.1:{port}/?token={web.token}", verify=False)
    assert signed.status_code == 303
    assert "secure" in signed.headers["set-cookie"].lower()
    with pytest.raises(httpx.HTTPError):  # plain HTTP is not answered there
        httpx.get(f"http://127.0.0.1:{port}/api/sessions", headers={"Authorization": f"Bearer {web.token}"})
