"""The liveness lease of a running follow-up, kept in Redis by the follow-up's runner itself.

When several machines share a workspace, the instance that leads may run on another machine
than the one where an action runs, and there the runner's pid means nothing. So in Redis mode
the runner keeps a key that expires `TTL_MS` after its last refresh: while the key exists the
action runs; once `LOG.status` exists it has ended; a `LOG.started` with neither means the
machine (or the runner) died, known within `TTL_MS`.

`take(url, key, value)` sets the key (`SET key value PX TTL_MS`) and starts a daemon thread
that refreshes it every third of its lifetime (`PEXPIRE`; the key is set again if it has vanished,
after a restart of Redis, say), reconnecting quietly after a failure until it is stopped.
`Lease.end()` stops the thread, deletes the key and publishes the key's name on the wake-up
channel given to `take`, each best effort: an expiry says the same, only later.

This is a minimal client (RESP2 over a socket) written on the standard library alone, because
the runner runs without `site` (redis-py is not importable there) and every millisecond it
takes to start delays the action. It reads the URL forms redis-py's `from_url` reads, so one
URL serves both:

- `redis://[[user]:password@]host[:port][/db]`, host `localhost`, port 6379 and db 0 by
  default; user and password are percent-decoded;
- `rediss://...`: the same over TLS, the server's certificate checked against the system's
  authorities and its host name, unless `?ssl_cert_reqs=none` (or `optional`);
  `?ssl_ca_certs=FILE` names other authorities, `?ssl_check_hostname=false` skips the name;
- `unix:///path/to/redis.sock` and `unix://[[user]:password@]/path/to/redis.sock`;
- query arguments `db=N` (which wins over the path's), `username=` and `password=` (which the
  URL's own user and password win over). Any other argument (socket_timeout...) is ignored:
  the runner keeps its own short timeouts (`TIMEOUT_S`).

No message of this module holds a password: errors name the server by host:port or socket
path, and a password the server would echo back is masked.
"""

import socket
import threading
import time

TTL_MS = 3000  # a dead machine's follow-up is known dead within 3 s
REFRESH_S = TTL_MS / 3 / 1000  # three refreshes a lifetime: one lost never lets the key lapse
TIMEOUT_S = 1.0  # to connect, and for each reply
SCHEMES = ("redis://", "rediss://", "unix://")
_CERT_REQS = ("none", "optional", "required")
_FALSE = ("0", "F", "FALSE", "N", "NO")  # redis-py's to_bool


class LeaseError(Exception):
    """Redis cannot be reached, refused a command, or the URL is not one; never holds a
    password."""


class Refused(LeaseError):
    """The server answered with an error (a wrong password, say): trying again will not help."""


class Address:
    """Where the Redis server is and how to log in, read from a coordination URL."""

    def __init__(self, host: str = "localhost", port: int = 6379, path: str | None = None,
                 username: str | None = None, password: str | None = None, db: int = 0,
                 tls: bool = False, cert_reqs: str = "required", check_hostname: bool = True,
                 ca_certs: str | None = None) -> None:
        self.host, self.port, self.path = host, port, path
        self.username, self.password, self.db = username, password, db
        self.tls, self.cert_reqs = tls, cert_reqs
        self.check_hostname, self.ca_certs = check_hostname, ca_certs

    def where(self) -> str:
        """The server, for messages: host:port or the socket's path (never the password)."""
        if self.path is not None:
            return self.path
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def parse_url(url: str) -> Address:
    """The server a coordination URL names, read as redis-py's `from_url` reads it (through
    urllib.parse, whose rules this follows: importing it would cost the runner more time than
    the rest of the lease)."""
    if not url.startswith(SCHEMES):
        raise LeaseError(f"the coordination URL must start with {', '.join(SCHEMES)}")
    for unsafe in "\t\r\n":  # urllib drops them wherever they are
        url = url.replace(unsafe, "")
    scheme, _, rest = url.partition("://")
    cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    netloc, rest = rest[:cut], rest[cut:]
    if ("[" in netloc) != ("]" in netloc):
        raise LeaseError("the coordination URL's IPv6 address lacks a bracket")
    rest = rest.partition("#")[0]
    path, _, query_text = rest.partition("?")  # no ";parameters": not for these schemes
    query = _query(query_text)
    address = Address(username=query.get("username"), password=query.get("password"))
    userinfo, at, hostinfo = netloc.rpartition("@")
    if at:
        username, _, password = userinfo.partition(":")
        address.username = _unquote(username) if username else address.username
        address.password = _unquote(password) if password else address.password
    if scheme == "unix":
        if not path:
            raise LeaseError("the unix:// coordination URL names no socket path")
        address.path = _unquote(path)
    else:
        _read_host(address, hostinfo)
        if path and "db" not in query:
            digits = _unquote(path).replace("/", "")
            address.db = int(digits) if digits.isdigit() else 0
        address.tls = scheme == "rediss"
    _read_options(address, query)
    return address


def _read_host(address: Address, hostinfo: str) -> None:
    _, bracket, inside = hostinfo.partition("[")
    if bracket:
        host, _, port = inside.partition("]")
        port = port.partition(":")[2]
    else:
        host, _, port = hostinfo.partition(":")
    if host:
        name, percent, zone = host.partition("%")  # an IPv6 zone keeps its case
        address.host = _unquote(name.lower() + percent + zone)
    if port:
        if not (port.isdigit() and port.isascii() and int(port) <= 65535):
            raise LeaseError("the coordination URL's port is not a number up to 65535")
        address.port = int(port) or address.port


_HEX = "0123456789abcdefABCDEF"


def _unquote(text: str) -> str:
    """Percent-decoding as urllib's unquote: UTF-8, a malformed escape kept as it is."""
    if "%" not in text:
        return text
    first, *pieces = text.split("%")
    data = bytearray(first.encode())
    for piece in pieces:
        if len(piece) >= 2 and piece[0] in _HEX and piece[1] in _HEX:
            data += bytes.fromhex(piece[:2]) + piece[2:].encode()
        else:
            data += b"%" + piece.encode()
    return data.decode(errors="replace")


def _query(text: str) -> dict[str, str]:
    """The first value of each named argument, as parse_qs reads them (blank ones dropped)."""
    found: dict[str, str] = {}
    for pair in text.split("&"):
        name, equals, value = pair.partition("=")
        if equals and value:
            found.setdefault(_unquote(name.replace("+", " ")), _unquote(value.replace("+", " ")))
    return found


def _read_options(address: Address, query: dict[str, str]) -> None:
    if "db" in query:
        if not query["db"].strip().isdigit():
            raise LeaseError("Invalid value for 'db' in the coordination URL")
        address.db = int(query["db"])
    if "ssl_cert_reqs" in query:
        if query["ssl_cert_reqs"] not in _CERT_REQS:
            raise LeaseError(f"ssl_cert_reqs in the coordination URL must be one of "
                             f"{', '.join(_CERT_REQS)}")
        address.cert_reqs = query["ssl_cert_reqs"]
    if query.get("ssl_check_hostname"):
        address.check_hostname = query["ssl_check_hostname"].upper() not in _FALSE
    address.ca_certs = query.get("ssl_ca_certs")


class Connection:
    """One connection to Redis, logged in and on its database: `command(...)` sends one
    command and returns its reply (an error reply raises LeaseError with the server's words)."""

    def __init__(self, address: Address, timeout: float = TIMEOUT_S) -> None:
        self.address = address
        self._sock = self._connect(max(timeout, 0.05))
        self._file = self._sock.makefile("rb")
        try:
            self._log_in()
        except BaseException:
            self.close()
            raise

    def _connect(self, timeout: float) -> socket.socket:
        address = self.address
        try:
            if address.path is not None:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(timeout)
                try:
                    sock.connect(address.path)
                except BaseException:
                    sock.close()
                    raise
            else:
                # An ASCII name as bytes: a str is encoded by the idna codec, slow to import.
                host = address.host.encode() if address.host.isascii() else address.host
                sock = socket.create_connection((host, address.port), timeout)  # type: ignore[arg-type]
            return self._secure(sock) if address.tls else sock
        except OSError as exc:
            raise LeaseError(f"cannot reach Redis at {address.where()}: "
                             f"{exc.strerror or exc}") from None

    def _secure(self, sock: socket.socket) -> socket.socket:
        import ssl  # only for rediss://: it is slow to import

        address = self.address
        context = ssl.create_default_context(cafile=address.ca_certs)
        context.check_hostname = address.check_hostname and address.cert_reqs != "none"
        context.verify_mode = {"none": ssl.CERT_NONE, "optional": ssl.CERT_OPTIONAL,
                               "required": ssl.CERT_REQUIRED}[address.cert_reqs]
        try:
            return context.wrap_socket(sock, server_hostname=address.host)
        except BaseException:
            sock.close()
            raise

    def _log_in(self) -> None:
        address = self.address
        if address.username or address.password:
            credentials = [address.password or ""]
            if address.username:
                credentials.insert(0, address.username)
            try:
                self.command("AUTH", *credentials)
            except Refused as exc:
                if len(credentials) == 1 or "wrong number of arguments" not in str(exc):
                    raise
                self.command("AUTH", credentials[-1])  # a server older than 6: no users
        if address.db:
            self.command("SELECT", str(address.db))

    def command(self, *args: str) -> object:
        out = [f"*{len(args)}\r\n".encode()]
        for arg in args:
            data = arg.encode()
            out.append(b"$%d\r\n%s\r\n" % (len(data), data))
        try:
            self._sock.sendall(b"".join(out))
            return self._reply()
        except OSError as exc:
            raise LeaseError(f"lost Redis at {self.address.where()}: "
                             f"{exc.strerror or exc}") from None
        except ValueError:  # a length or number that is not one
            raise LeaseError(f"Redis at {self.address.where()} sent a reply that is not RESP"
                             ) from None

    def _reply(self) -> object:
        line = self._file.readline()
        if not line.endswith(b"\r\n"):
            raise LeaseError(f"Redis at {self.address.where()} closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode(errors="replace")
        if kind == b"-":
            raise Refused(f"Redis at {self.address.where()}: {self._masked(rest)}")
        if kind == b":":
            return int(rest)
        if kind == b"$":
            size = int(rest)
            return None if size < 0 else self._file.read(size + 2)[:-2]
        if kind == b"*":
            count = int(rest)
            return None if count < 0 else [self._reply() for _ in range(count)]
        raise LeaseError(f"Redis at {self.address.where()} sent a reply that is not RESP")

    def _masked(self, words: bytes) -> str:
        text = words.decode(errors="replace")
        password = self.address.password
        return text.replace(password, "***") if password else text

    def close(self) -> None:
        for closing in (self._file, self._sock):
            try:
                closing.close()
            except OSError:
                pass


class Lease:
    """A key that lives while its holder refreshes it: see the module's docstring."""

    def __init__(self, address: Address, key: str, value: str, ttl_ms: int = TTL_MS,
                 wake: str | None = None) -> None:
        self.address, self.key, self.value = address, key, value
        self.ttl_ms, self.wake = ttl_ms, wake
        self.refresh_s = ttl_ms / 3 / 1000
        self._connection: Connection | None = None
        self._lock = threading.Lock()  # one command at a time; and none after end()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._keep, name="lease", daemon=True)

    def set(self, timeout: float = TIMEOUT_S) -> None:
        """Set the key now, connecting if need be; LeaseError if that cannot be done."""
        if self._connection is None:
            self._connection = Connection(self.address, timeout)
        self._connection.command("SET", self.key, self.value, "PX", str(self.ttl_ms))

    def start(self) -> None:
        self._thread.start()

    def _keep(self) -> None:
        while not self._stopped.wait(self.refresh_s):
            with self._lock:
                if self._stopped.is_set():
                    return
                try:
                    self._refresh()
                except LeaseError:
                    self._drop()  # quietly: the next refresh reconnects

    def _refresh(self) -> None:
        if self._connection is None:
            self.set()
        elif self._connection.command("PEXPIRE", self.key, str(self.ttl_ms)) == 0:
            self.set()  # gone (Redis restarted, say): the runner still runs, so say so again

    def _drop(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def end(self, publish: bool = True) -> None:
        """Stop refreshing, delete the key and (with `publish`) publish its name on the
        wake-up channel: best effort, an expiry says the same later."""
        self._stopped.set()
        with self._lock:
            try:
                if self._connection is None:
                    self._connection = Connection(self.address)
                self._connection.command("DEL", self.key)
                if publish and self.wake:
                    self._connection.command("PUBLISH", self.wake, self.key)
            except LeaseError:
                pass
            finally:
                self._drop()


def take(url: str, key: str, value: str, ttl_ms: int = TTL_MS, wake: str | None = None,
         within: float = 2.0) -> Lease:
    """Set `key` to `value` for `ttl_ms` and keep it refreshed until `Lease.end()`, trying
    to reach Redis for up to `within` seconds; LeaseError (naming no password) if it cannot."""
    lease = Lease(parse_url(url), key, value, ttl_ms, wake)
    deadline = time.monotonic() + within
    while True:
        try:
            lease.set(timeout=min(TIMEOUT_S, deadline - time.monotonic()))
            break
        except LeaseError as exc:
            lease._drop()
            # Connection-level failures may pass (a server starting); a refusal will not.
            if isinstance(exc, Refused) or time.monotonic() + 0.1 >= deadline:
                raise
            time.sleep(0.1)
    lease.start()
    return lease
