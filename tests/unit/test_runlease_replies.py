"""The runner's Redis client reads every RESP2 reply a command can get, and turns what is not
one (or a server that hangs up) into a clear LeaseError, against a loopback stub server: the
real server cannot be made to send a broken reply."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator

import pytest

from sidecar.followups.runlease import Connection, LeaseError, Refused, parse_url


class Stub:
    """Accepts one connection and answers each command with the next canned reply; closes
    after the last."""

    def __init__(self, replies: list[bytes]) -> None:
        self.replies = replies
        self.received: list[bytes] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        with conn:
            for reply in self.replies:
                self.received.append(conn.recv(65536))
                conn.sendall(reply)

    def close(self) -> None:
        self.listener.close()
        self.thread.join(timeout=5)


@pytest.fixture
def stub() -> Iterator[Callable[[list[bytes]], Stub]]:
    made: list[Stub] = []

    def make(replies: list[bytes]) -> Stub:
        made.append(Stub(replies))
        return made[-1]

    yield make
    for one in made:
        one.close()


def test_each_kind_of_reply_is_read(stub):
    server = stub([b"+OK\r\n", b":1\r\n", b"$5\r\nva\r\nl\r\n", b"$-1\r\n",
                   b"*2\r\n$1\r\na\r\n*1\r\n:7\r\n", b"*-1\r\n"])
    conn = Connection(parse_url(f"redis://127.0.0.1:{server.port}"))
    assert conn.command("SET", "k", "v") == "OK"
    assert conn.command("PEXPIRE", "k", "3000") == 1
    assert conn.command("GET", "k") == b"va\r\nl"  # a bulk string holds any bytes
    assert conn.command("GET", "gone") is None
    assert conn.command("X") == [b"a", [7]]
    assert conn.command("Y") is None
    conn.close()
    assert server.received[0] == b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"


def test_login_sends_the_user_and_password_then_selects_the_database(stub):
    server = stub([b"+OK\r\n", b"+OK\r\n"])
    conn = Connection(parse_url(f"redis://al%40ice:p%3Ass@127.0.0.1:{server.port}/5"))
    conn.close()
    assert server.received == [b"*3\r\n$4\r\nAUTH\r\n$6\r\nal@ice\r\n$4\r\np:ss\r\n",
                               b"*2\r\n$6\r\nSELECT\r\n$1\r\n5\r\n"]


def test_a_server_without_users_gets_the_password_alone(stub):
    server = stub([b"-ERR wrong number of arguments for 'auth' command\r\n", b"+OK\r\n"])
    Connection(parse_url(f"redis://alice:pw@127.0.0.1:{server.port}")).close()
    assert server.received[1] == b"*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n"


def test_an_error_reply_is_raised_with_the_server_s_words_and_the_password_masked(stub):
    server = stub([b"-ERR unknown command 'AUTH', with args beginning with: 'hunter2'\r\n"])
    with pytest.raises(Refused) as caught:
        Connection(parse_url(f"redis://:hunter2@127.0.0.1:{server.port}"))
    assert str(caught.value) == (f"Redis at 127.0.0.1:{server.port}: ERR unknown command 'AUTH', "
                                 "with args beginning with: '***'")


@pytest.mark.parametrize("reply", [b"?what\r\n", b":x\r\n", b"$ten\r\n"])
def test_a_reply_that_is_not_resp_is_a_clear_error(stub, reply):
    server = stub([reply])
    conn = Connection(parse_url(f"redis://127.0.0.1:{server.port}"))
    with pytest.raises(LeaseError, match="sent a reply that is not RESP"):
        conn.command("PEXPIRE", "k", "3000")
    conn.close()


def test_a_server_that_hangs_up_is_a_clear_error(stub):
    server = stub([b"+OK"])  # half a reply, then the connection closes
    conn = Connection(parse_url(f"redis://127.0.0.1:{server.port}"))
    with pytest.raises(LeaseError, match=f"Redis at 127.0.0.1:{server.port} closed the connection"):
        conn.command("SET", "k", "v")
    conn.close()


def test_a_server_that_never_answers_times_out(stub):
    server = stub([])  # accepts (the listener's backlog), reads nothing, answers nothing
    conn = Connection(parse_url(f"redis://127.0.0.1:{server.port}"), timeout=0.2)
    with pytest.raises(LeaseError, match=f"lost Redis at 127.0.0.1:{server.port}"):
        conn.command("SET", "k", "v")
    conn.close()
