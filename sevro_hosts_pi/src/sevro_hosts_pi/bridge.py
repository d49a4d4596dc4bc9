"""The model bridge: pi's only way out of a sandbox without a network.

pi runs under bubblewrap with ``--unshare-net``. Inside, the packaged preload ``bridge.mjs``
(``node --import``) listens on ``127.0.0.1:BRIDGE_PORT`` in the sandbox's own network namespace
and pipes every connection to a Unix socket in the trial's private root. Outside, ``ModelBridge``
reads one HTTP request per connection from that socket, strictly (one framing, bounded headers
and body, no smuggling), and sends it to the configured upstream model endpoint with the
credential header sevro holds, dropping any credential the sandbox sent; so pi, its tools and its
extensions never see the key. The response is streamed back chunk by chunk (SSE) with
``Connection: close``; a failure before the response starts is a short 502, which pi reports as
a model error and the host as an execution failure. The mapping keeps the path: pi's
``baseUrl`` is ``http://127.0.0.1:<BRIDGE_PORT>`` plus the upstream's path (``bridge_base_url``),
and the bridge replaces scheme, host and port only, refusing paths outside the upstream's.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import socket
import ssl
import stat
import threading
import time
import urllib.parse
from collections.abc import Collection
from pathlib import Path
from typing import BinaryIO

from attrs import frozen

from sevro_core.api import HostFailure
from sevro_hosts_pi import limits

BRIDGE_PORT = 47000
"""The in-sandbox listener's port: the sandbox has a fresh network namespace, so it is free."""

SOCKET_VARIABLE = "SEVRO_PI_BRIDGE_SOCKET"
PORT_VARIABLE = "SEVRO_PI_BRIDGE_PORT"
"""The environment ``bridge.mjs`` reads (set both, or neither for no bridge)."""

CREDENTIAL_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key"}
)
"""Incoming headers that may carry a credential: always dropped (sevro sets its own)."""

API_PATHS = {
    "openai-responses": "/responses",
    "openai-completions": "/chat/completions",
    "anthropic-messages": "/v1/messages",
}
"""The path pi 0.73.1's client for each wire API posts to, after the upstream's own path."""
STREAM_ENDS = {
    "openai-responses": b"event: response.completed",
    "openai-completions": b"data: [DONE]",
    "anthropic-messages": b"event: message_stop",
}
"""The event that closes each wire API's streamed reply. pi takes an OpenAI stream cut before
it for a complete reply (``stopReason: "stop"``), so the bridge, which sees every byte, counts
event streams that ended without it (``ModelBridge.incomplete``)."""

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "expect",
        "host",
        "content-length",
    }
)
_METHODS = frozenset({"GET", "POST"})
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_REQUEST_LINE = re.compile(r"([A-Z]+) (/[\x21-\x7e]*) (HTTP/1\.[01])")
_DIGITS = re.compile(r"[0-9]{1,20}")
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")
_BAD_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_CHUNK_BYTES = 64 * 1024
_MAX_CHUNK_LINE = 4096
_ACCEPT_POLL_SECONDS = 0.25


def preload_path() -> Path:
    """The packaged ``bridge.mjs`` (mount it read-only and pass it to ``node --import``)."""
    return Path(__file__).with_name("bridge.mjs")


class BridgeError(HostFailure):
    """The bridge cannot be set up as asked (one line; never names the credential)."""


@frozen
class Upstream:
    """The model endpoint the bridge forwards to."""

    scheme: str
    host: str
    port: int
    path: str  # "" or "/v1": no trailing slash

    @property
    def host_header(self) -> str:
        name = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return name if self.port == default else f"{name}:{self.port}"

    def covers(self, target: str) -> bool:
        """Whether a request target lies under the upstream's path."""
        path = target.split("?", 1)[0]
        return not self.path or path == self.path or path.startswith(self.path + "/")


def parse_upstream(url: str) -> Upstream:
    """An ``http``/``https`` URL with a host, optional port and path, nothing else."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise BridgeError(f"model endpoint {url!r} is no URL: {error}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BridgeError(f"model endpoint {url!r} must be an http:// or https:// URL with a host")
    if parts.username is not None or parts.query or parts.fragment or "@" in parts.netloc:
        raise BridgeError(f"model endpoint {url!r} must carry no user, query or fragment")
    path = parts.path.rstrip("/")
    if not _clean_path(path or "/") or not re.fullmatch(r"[\x21-\x7e]*", path):
        raise BridgeError(f"model endpoint {url!r} has an unusable path")
    default = 443 if parts.scheme == "https" else 80
    return Upstream(parts.scheme, parts.hostname, port or default, path)


def bridge_base_url(upstream: str, port: int = BRIDGE_PORT) -> str:
    """pi's ``baseUrl`` in the sandbox: the bridge's loopback origin plus the upstream's path."""
    return f"http://127.0.0.1:{port}{parse_upstream(upstream).path}"


def api_paths(api: str, upstream: str) -> frozenset[str]:
    """The only request paths worth forwarding for ``api``: its model call (``paths=``), so a
    command in the sandbox cannot use sevro's credential for the provider's other endpoints."""
    if api not in API_PATHS:
        raise BridgeError(f"the model bridge knows no request path for the wire API {api!r}")
    return frozenset({parse_upstream(upstream).path + API_PATHS[api]})


def free_port() -> int:
    """The port for the in-sandbox listener (any port is free in a fresh network namespace)."""
    return BRIDGE_PORT


def check_socket_path(path: Path) -> None:
    """Refuse a socket path the kernel cannot hold (or that the sandbox would not see alike)."""
    size = len(os.fsencode(path))
    if not path.is_absolute():
        raise BridgeError(f"the model bridge socket path {path} must be absolute")
    if size > limits.MAX_BRIDGE_SOCKET_PATH_BYTES:
        raise BridgeError(
            f"the model bridge socket path {path} is {size} bytes, more than the "
            f"{limits.MAX_BRIDGE_SOCKET_PATH_BYTES} a Unix socket path holds: use a shorter "
            "workspace root"
        )


@frozen
class _Request:
    method: str
    target: str
    version: str
    headers: tuple[tuple[str, str], ...]
    body: bytes


class _Refusal(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class _Unused(Exception):
    """The connection closed before its first byte (a probe, or the bridge closing): no answer."""


class _Slot:
    """One connection being served: its sockets, so ``close`` can shut them down."""

    def __init__(self, client: socket.socket) -> None:
        self.client = client
        self.upstream: socket.socket | None = None
        self.thread: threading.Thread | None = None

    def abort(self) -> None:
        for sock in (self.client, self.upstream):
            if sock is not None:  # the plain socket's shutdown, also under TLS: wakes a read
                with contextlib.suppress(OSError):
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)


class ModelBridge:
    """An HTTP forwarder on a unix socket: every request goes to `upstream` (http or https) with
    the credential header set by sevro; the sandbox never sees the credential.

    ``auth`` is ``(header name, value)``, e.g. ``("authorization", "Bearer sk-..")`` or
    ``("x-api-key", ..)``; None forwards no credential. ``paths`` (``api_paths``), when given,
    are the only request paths forwarded, as POSTs; else any path under the upstream's. Use as
    a context manager (or ``start`` and ``close``); ``close`` shuts every socket down and joins
    its threads, boundedly.
    """

    def __init__(
        self,
        socket_path: Path,
        upstream: str,
        auth: tuple[str, str] | None,
        *,
        context: ssl.SSLContext | None = None,
        idle_timeout: float = limits.BRIDGE_UPSTREAM_IDLE_SECONDS,
        paths: Collection[str] | None = None,
        stream_end: bytes | None = None,
    ) -> None:
        check_socket_path(socket_path)
        self._stream_end = stream_end
        self._path = socket_path
        self._upstream = parse_upstream(upstream)
        self._paths = None if paths is None else frozenset(paths)
        if self._paths is not None and not all(
            p.startswith("/") and _clean_path(p) and self._upstream.covers(p) for p in self._paths
        ):
            raise BridgeError(f"the model bridge's paths must lie under {upstream}")
        self._auth = _check_auth(auth)
        self._context = context
        if self._upstream.scheme == "https" and context is None:
            self._context = ssl.create_default_context()  # verifies certificate and host name
        self._idle = idle_timeout
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._slots: set[_Slot] = set()
        self._requests = 0
        self._incomplete = 0
        self._errors: list[str] = []
        self._listener: socket.socket | None = None
        self._inode: int | None = None
        self._acceptor: threading.Thread | None = None

    @property
    def socket_path(self) -> Path:
        return self._path

    @property
    def requests(self) -> int:
        """Requests forwarded (or attempted) upstream."""
        with self._lock:
            return self._requests

    @property
    def incomplete(self) -> int:
        """Event-stream replies that ended without ``stream_end`` (cut upstream or by a bound);
        always 0 without ``stream_end``."""
        with self._lock:
            return self._incomplete

    @property
    def errors(self) -> tuple[str, ...]:
        """Refusals and upstream failures, oldest first (bounded; for a failure reason)."""
        with self._lock:
            return tuple(self._errors)

    def __enter__(self) -> ModelBridge:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Listen on the socket (mode 0600) and serve in daemon threads."""
        if self._listener is not None or self._stopping.is_set():
            raise BridgeError("the model bridge was already started")
        try:
            if stat.S_ISSOCK(os.lstat(self._path).st_mode):
                os.unlink(self._path)  # a stale socket of an earlier, killed run
        except FileNotFoundError:
            pass
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(str(self._path))
            os.chmod(self._path, 0o600)
            listener.listen(limits.MAX_BRIDGE_CONNECTIONS)
            self._inode = os.stat(self._path).st_ino
        except OSError as error:
            listener.close()
            raise BridgeError(f"the model bridge cannot listen on {self._path}: {error}") from None
        listener.settimeout(_ACCEPT_POLL_SECONDS)
        self._listener = listener
        self._acceptor = threading.Thread(target=self._accept, name="pi-bridge", daemon=True)
        self._acceptor.start()

    def close(self) -> None:
        """Stop accepting, cut every connection, join the threads (bounded), remove the socket."""
        with self._lock:
            if self._stopping.is_set():
                return
            self._stopping.set()
            slots = list(self._slots)
        deadline = time.monotonic() + limits.BRIDGE_CLOSE_JOIN_SECONDS
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
        for slot in slots:
            slot.abort()
        threads = [self._acceptor, *(slot.thread for slot in slots)]
        for thread in threads:
            if thread is not None:
                thread.join(max(0.0, deadline - time.monotonic()))
        if self._listener is not None:
            self._listener.close()
        self._remove_socket()

    def _remove_socket(self) -> None:
        try:
            if self._inode is not None and os.lstat(self._path).st_ino == self._inode:
                os.unlink(self._path)
        except OSError:
            pass

    def _scrub(self, message: str) -> str:
        """Without the credential, whole or its token alone (``Bearer <token>``)."""
        if self._auth is not None:
            for secret in (self._auth[1], self._auth[1].split()[-1]):
                message = message.replace(secret, "***")
        return message

    def _note(self, message: str) -> None:
        message = self._scrub(message)
        with self._lock:
            if len(self._errors) < limits.MAX_BRIDGE_ERRORS:
                self._errors.append(message)

    def _accept(self) -> None:
        assert self._listener is not None
        while not self._stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                if self._stopping.is_set():
                    return
                self._stopping.wait(_ACCEPT_POLL_SECONDS)  # e.g. out of descriptors: retry
                continue
            self._admit(client)

    def _admit(self, client: socket.socket) -> None:
        slot = _Slot(client)
        with self._lock:
            full = len(self._slots) >= limits.MAX_BRIDGE_CONNECTIONS
            admitted = not full and not self._stopping.is_set()
            if admitted:  # started under the lock: close never joins an unstarted thread
                slot.thread = threading.Thread(target=self._serve, args=(slot,), daemon=True)
                self._slots.add(slot)
                slot.thread.start()
        if admitted:
            return
        client.settimeout(1.0)
        if full:
            self._refuse(client, 503, "too many connections")
        _finish(client)

    def _serve(self, slot: _Slot) -> None:
        client = slot.client
        client.settimeout(limits.BRIDGE_CLIENT_TIMEOUT_SECONDS)
        stream = client.makefile("rb")
        try:
            deadline = time.monotonic() + limits.BRIDGE_CLIENT_TIMEOUT_SECONDS
            request = _read_request(stream, client, deadline)
            self._check_target(request)
            self._forward(slot, request)
        except _Refusal as refusal:
            self._refuse(client, refusal.status, refusal.reason)
            _drain(client)
        except _Unused:
            pass
        except (OSError, ValueError) as error:  # the sandbox side went away, or timed out
            self._note(f"connection from the sandbox failed: {_describe(error)}")
        finally:
            stream.close()
            _finish(client)
            with self._lock:
                self._slots.discard(slot)

    def _check_target(self, request: _Request) -> None:
        if not self._upstream.covers(request.target):
            raise _Refusal(403, f"path outside the model endpoint {self._upstream.path!r}")
        path = request.target.split("?", 1)[0]
        if self._paths is not None and (request.method != "POST" or path not in self._paths):
            raise _Refusal(403, f"{request.method} {path} is no model request")

    def _forward(self, slot: _Slot, request: _Request) -> None:
        upstream = self._upstream
        connection: http.client.HTTPConnection
        if upstream.scheme == "https":
            connection = http.client.HTTPSConnection(
                upstream.host,
                upstream.port,
                timeout=limits.BRIDGE_CONNECT_TIMEOUT_SECONDS,
                context=self._context,
            )
        else:
            connection = http.client.HTTPConnection(
                upstream.host, upstream.port, timeout=limits.BRIDGE_CONNECT_TIMEOUT_SECONDS
            )
        with self._lock:
            self._requests += 1
        try:
            try:
                response = self._send(slot, connection, request)
            except (OSError, http.client.HTTPException, ValueError) as error:
                raise _Refusal(502, f"model endpoint failed: {_describe(error)}") from None
            self._relay(slot.client, request, response)
        finally:
            connection.close()

    def _send(
        self, slot: _Slot, connection: http.client.HTTPConnection, request: _Request
    ) -> http.client.HTTPResponse:
        connection.connect()
        assert connection.sock is not None
        connection.sock.settimeout(self._idle)
        with self._lock:
            slot.upstream = connection.sock
        if self._stopping.is_set():
            raise ConnectionAbortedError("the bridge is closing")
        connection.putrequest(
            request.method, request.target, skip_host=True, skip_accept_encoding=True
        )
        connection.putheader("Host", self._upstream.host_header)
        for name, value in _forwarded(request.headers, self._auth):
            connection.putheader(name, value)
        if self._auth is not None:
            connection.putheader(*self._auth)
        if request.body or request.method == "POST":
            connection.putheader("Content-Length", str(len(request.body)))
        connection.putheader("Connection", "close")
        connection.endheaders(request.body or None)
        return connection.getresponse()

    def _relay(
        self, client: socket.socket, request: _Request, response: http.client.HTTPResponse
    ) -> None:
        """Stream the response back; a failure after its head cuts it (never a clean end)."""
        has_body = response.status not in (204, 304)
        head = [f"HTTP/1.1 {response.status} {_reason(response.reason)}"]
        head += [f"{n}: {v}" for n, v in _response_headers(response.getheaders())]
        chunked = has_body and response.length is None and request.version == "HTTP/1.1"
        if has_body and response.length is not None:
            head.append(f"Content-Length: {response.length}")
        elif chunked:
            head.append("Transfer-Encoding: chunked")
        head.append("Connection: close")
        client.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        end = self._stream_end if _event_stream(response) else None
        ended = _EndWatch(end)
        if end is not None:  # counted cut until its closing event passes, so a client that
            with self._lock:  # has read the whole stream never sees a count still to come
                self._incomplete += 1
        try:
            self._relay_body(client, response, chunked, ended)
        finally:
            if not ended.seen:
                self._note("the model's event stream ended before its closing event")

    def _relay_body(
        self,
        client: socket.socket,
        response: http.client.HTTPResponse,
        chunked: bool,
        ended: _EndWatch,
    ) -> None:
        total = 0
        try:
            while data := response.read1(_CHUNK_BYTES):
                total += len(data)
                if total > limits.MAX_BRIDGE_RESPONSE_BYTES:
                    self._note("model response exceeded the bridge's bound: cut")
                    return
                if ended.feed(data):
                    with self._lock:
                        self._incomplete -= 1
                client.sendall(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)
        except (OSError, http.client.HTTPException) as error:
            self._note(f"model response cut: {_describe(error)}")
            return
        if chunked:
            client.sendall(b"0\r\n\r\n")

    def _refuse(self, client: socket.socket, status: int, reason: str) -> None:
        self._note(f"{status}: {reason}")
        message = self._scrub(f"sevro model bridge: {reason}")
        body = json.dumps({"error": {"message": message}}).encode()
        head = (
            f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}\r\n"
            "Content-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        with contextlib.suppress(OSError):
            client.sendall(head.encode("latin-1") + body)


class _EndWatch:
    """Whether a streamed body held its closing event, scanned as it passes (a window of the
    marker's length carries a marker split across reads)."""

    def __init__(self, marker: bytes | None) -> None:
        self.marker = marker
        self.seen = marker is None
        self._tail = b""

    def feed(self, data: bytes) -> bool:
        """True when ``data`` completed the closing event (once)."""
        if self.seen or self.marker is None:
            return False
        window = self._tail + data
        self.seen = self.marker in window
        self._tail = window[-(len(self.marker) - 1) :] if len(self.marker) > 1 else b""
        return self.seen


def _event_stream(response: http.client.HTTPResponse) -> bool:
    """A successful ``text/event-stream`` reply: the only kind with a closing event."""
    kind = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
    return response.status == 200 and kind == "text/event-stream"


def _check_auth(auth: tuple[str, str] | None) -> tuple[str, str] | None:
    if auth is None:
        return None
    name, value = auth
    if not _TOKEN.fullmatch(name):
        raise BridgeError(f"the credential header name {name!r} is no HTTP header name")
    if not value.strip() or _BAD_VALUE.search(value) or not value.isascii():
        raise BridgeError(f"the credential for header {name} is empty or holds control characters")
    return name, value


def _describe(error: BaseException) -> str:
    text = str(error).strip().replace("\r", " ").replace("\n", " ")[:200]
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _reason(reason: str) -> str:
    return re.sub(r"[^\x20-\x7e]", "", reason or "")[:128] or "-"


def _finish(client: socket.socket) -> None:
    with contextlib.suppress(OSError):
        client.shutdown(socket.SHUT_WR)
    client.close()


def _drain(client: socket.socket) -> None:
    """After a refusal, read and drop what the sandbox still sends (bounded in time and bytes),
    so it reads the refusal instead of failing to write the rest of a refused request."""
    deadline = time.monotonic() + limits.BRIDGE_REFUSAL_DRAIN_SECONDS
    dropped = 0
    with contextlib.suppress(OSError):
        client.shutdown(socket.SHUT_WR)
        while (
            dropped <= limits.MAX_BRIDGE_REQUEST_BYTES and (left := deadline - time.monotonic()) > 0
        ):
            client.settimeout(left)
            data = client.recv(_CHUNK_BYTES)
            if not data:
                return
            dropped += len(data)


def _clean_path(target: str) -> bool:
    """No ``.``/``..`` segment, raw or percent-encoded (the upstream must not step outside)."""
    path = target.split("?", 1)[0]
    return all(urllib.parse.unquote(s) not in (".", "..") for s in path.split("/"))


def _connection_tokens(headers: tuple[tuple[str, str], ...]) -> set[str]:
    listed = (v for n, v in headers if n.lower() == "connection")
    return {t.strip().lower() for value in listed for t in value.split(",")}


def _forwarded(
    headers: tuple[tuple[str, str], ...], auth: tuple[str, str] | None
) -> list[tuple[str, str]]:
    """The request headers minus hop-by-hop ones and every credential the sandbox sent."""
    dropped = _HOP_BY_HOP | CREDENTIAL_HEADERS | _connection_tokens(headers)
    if auth is not None:
        dropped |= {auth[0].lower()}
    return [(n, v) for n, v in headers if n.lower() not in dropped]


def _response_headers(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    dropped = _HOP_BY_HOP | _connection_tokens(tuple(headers))
    return [
        (n, v)
        for n, v in headers
        if n.lower() not in dropped and _TOKEN.fullmatch(n) and not _BAD_VALUE.search(v)
    ]


def _line(stream: BinaryIO, limit: int, deadline: float, *, first: bool = False) -> bytes:
    """One CRLF-terminated line of at most ``limit`` bytes, without its CRLF."""
    line = stream.readline(limit + 2)
    if first and not line:
        raise _Unused
    if time.monotonic() > deadline:
        raise _Refusal(408, "request took too long")
    if not line.endswith(b"\r\n"):
        if len(line) >= limit + 2:
            raise _Refusal(431, "request line or header too long")
        raise _Refusal(400, "request ended early or used a bare line feed")
    return line[:-2]


def _read_head(stream: BinaryIO, deadline: float) -> list[str]:
    budget = limits.MAX_BRIDGE_HEADER_BYTES
    lines: list[str] = []
    while True:
        line = _line(stream, budget, deadline, first=not lines)
        budget -= len(line) + 2
        if not line:
            return lines
        lines.append(line.decode("latin-1"))
        if budget <= 0 or len(lines) - 1 > limits.MAX_BRIDGE_HEADERS:
            raise _Refusal(431, "request headers too large")


def _parse_head(lines: list[str]) -> tuple[str, str, str, tuple[tuple[str, str], ...]]:
    if not lines:
        raise _Refusal(400, "empty request line")
    match = _REQUEST_LINE.fullmatch(lines[0])
    if match is None:
        raise _Refusal(400, "malformed request line")
    method, target, version = match.groups()
    if method not in _METHODS:
        raise _Refusal(405, f"method {method} not forwarded")
    if not _clean_path(target):
        raise _Refusal(400, "dot segments in the request path")
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not _TOKEN.fullmatch(name):  # also refuses obs-fold and "name :"
            raise _Refusal(400, "malformed header line")
        value = value.strip(" \t")
        if _BAD_VALUE.search(value):
            raise _Refusal(400, f"control character in header {name}")
        headers.append((name, value))
    return method, target, version, tuple(headers)


def _read_request(stream: BinaryIO, client: socket.socket, deadline: float) -> _Request:
    method, target, version, headers = _parse_head(_read_head(stream, deadline))
    values: dict[str, list[str]] = {}
    for name, value in headers:
        values.setdefault(name.lower(), []).append(value)
    lengths, codings = values.get("content-length", []), values.get("transfer-encoding", [])
    if lengths and codings:
        raise _Refusal(400, "both Content-Length and Transfer-Encoding")
    if len(lengths) > 1 or len(codings) > 1:
        raise _Refusal(400, "repeated Content-Length or Transfer-Encoding")
    if codings and codings[0].lower() != "chunked":
        raise _Refusal(501, "only the chunked transfer coding is accepted")
    if lengths and not _DIGITS.fullmatch(lengths[0]):
        raise _Refusal(400, "malformed Content-Length")
    if not lengths and not codings and method == "POST":
        raise _Refusal(411, "a request body needs Content-Length or chunked framing")
    expect = values.get("expect", [])
    if expect and [e.lower() for e in expect] != ["100-continue"]:
        raise _Refusal(417, "unsupported Expect")
    if lengths and int(lengths[0]) > limits.MAX_BRIDGE_REQUEST_BYTES:
        raise _Refusal(413, "request body too large")
    if expect:
        client.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
    if lengths:
        body = _exact(stream, int(lengths[0]), deadline)
    else:
        body = _chunked(stream, deadline) if codings else b""
    return _Request(method, target, version, headers, body)


def _exact(stream: BinaryIO, size: int, deadline: float) -> bytes:
    parts: list[bytes] = []
    left = size
    while left:
        data = stream.read(min(left, _CHUNK_BYTES))
        if time.monotonic() > deadline:
            raise _Refusal(408, "request took too long")
        if not data:
            raise _Refusal(400, "request body ended early")
        parts.append(data)
        left -= len(data)
    return b"".join(parts)


def _chunked(stream: BinaryIO, deadline: float) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        size_text = _line(stream, _MAX_CHUNK_LINE, deadline).split(b";", 1)[0]
        if not _HEX.fullmatch(size_text):
            raise _Refusal(400, "malformed chunk size")
        size = int(size_text, 16)
        if size == 0:
            break
        total += size
        if total > limits.MAX_BRIDGE_REQUEST_BYTES:
            raise _Refusal(413, "request body too large")
        parts.append(_exact(stream, size, deadline))
        if _exact(stream, 2, deadline) != b"\r\n":
            raise _Refusal(400, "chunk data longer than its size")
    budget = limits.MAX_BRIDGE_HEADER_BYTES
    while line := _line(stream, budget, deadline):  # trailers: read, bounded, dropped
        budget -= len(line) + 2
        if budget <= 0:
            raise _Refusal(431, "request trailers too large")
    return b"".join(parts)
