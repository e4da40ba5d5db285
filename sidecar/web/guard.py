"""What stands before every request of the web view: the token, the CSRF check of a POST, and
the security headers of every answer.

`GET /?token=T` with the right token sets the cookie and sends the browser to `/` (the token
leaves the address bar and the history); any other request needs that cookie or
`Authorization: Bearer T`, else it gets 401. A POST also needs the page's CSRF token in
`X-CSRF-Token`, and is refused (403) when the browser says it comes from another site
(`Origin`, `Sec-Fetch-Site`), whatever it carries. Tokens are compared in constant time.
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sidecar.web.secret import same

COOKIE = "sidecar_web"
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
                               "form-action 'self'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cross-Origin-Opener-Policy": "same-origin",
}
REFUSED_PAGE = ("<!doctype html><meta charset=utf-8><title>sidecar web</title>"
                "<p>Not signed in. Open the address <code>sidecar web</code> printed when it started "
                "(<code>sidecar web --show-token</code> prints it again).</p>")


class Guard:
    """The ASGI app behind the token."""

    def __init__(self, app: ASGIApp, token: str, csrf: str, tls: bool) -> None:
        self.app = app
        self.token = token
        self.csrf = csrf
        self.tls = tls

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # the lifespan
            await self.app(scope, receive, send)
            return
        api = scope["path"].startswith("/api/")

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in HEADERS.items():
                    headers[name] = value
                if api:
                    headers["Cache-Control"] = "no-store"
            await send(message)

        answer = self.refusal(Request(scope))
        if answer is not None:
            await answer(scope, receive, with_headers)
        else:
            await self.app(scope, receive, with_headers)

    def signed_in(self, request: Request) -> bool:
        bearer = request.headers.get("authorization", "")
        if bearer[:7].lower() == "bearer ":
            return same(bearer[7:].strip(), self.token)
        return same(request.cookies.get(COOKIE), self.token)

    def refusal(self, request: Request) -> Response | None:
        """The answer that stops the request here, or None where it goes on."""
        if request.url.path == "/" and "token" in request.query_params:
            if not same(request.query_params["token"], self.token):
                return HTMLResponse(REFUSED_PAGE, 401)
            moved = RedirectResponse("/", 303)
            moved.set_cookie(COOKIE, self.token, httponly=True, samesite="strict", path="/",
                             secure=self.tls)
            return moved
        if not self.signed_in(request):
            return HTMLResponse(REFUSED_PAGE, 401)
        if request.method not in ("GET", "HEAD") and not self.same_site(request):
            return Response('{"error": "refused: a cross-site request or no CSRF token"}', 403,
                            media_type="application/json")
        return None

    def same_site(self, request: Request) -> bool:
        """A POST from the page itself: its CSRF token, and no word from the browser that it
        was sent by another site."""
        fetch_site = request.headers.get("sec-fetch-site")
        if fetch_site is not None and fetch_site != "same-origin":
            return False
        origin = request.headers.get("origin")
        if origin is not None:
            host = request.headers.get("host", "")
            if origin != f"{request.url.scheme}://{host}":
                return False
        return same(request.headers.get("x-csrf-token"), self.csrf)
