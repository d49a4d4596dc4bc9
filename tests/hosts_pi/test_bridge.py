"""The pi model bridge: sevro's credential only, strict bounded requests, streamed responses,
prompt close; and, under a real bubblewrap with no network, node reaching the model through
bridge.mjs and nothing else."""

from __future__ import annotations

import http.client
import json
import os
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import require_sandbox, require_tool
from sevro_core.testing.mockmodel import (
    AnthropicMessages,
    MockModelServer,
    OpenAIChatCompletions,
    OpenAIResponses,
    RecordedRequest,
    ToolCall,
    reply,
)
from sevro_core.testing.mockmodel import Message as Say
from sevro_hosts_pi import limits
from sevro_hosts_pi.bridge import (
    BRIDGE_PORT,
    PORT_VARIABLE,
    SOCKET_VARIABLE,
    STREAM_ENDS,
    BridgeError,
    ModelBridge,
    api_paths,
    bridge_base_url,
    free_port,
    preload_path,
)
from sevro_hosts_pi.testing import require_pi

SECRET = "sk-sevro-held-secret"
SANDBOX_KEY = "sk-what-the-sandbox-sent"


class UnixConnection(http.client.HTTPConnection):
    """An HTTP client connection over the bridge's unix socket."""

    def __init__(self, path: Path) -> None:
        super().__init__("localhost", timeout=10)
        self._path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(str(self._path))


def post(path: Path, target: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    connection = UnixConnection(path)
    try:
        connection.request("POST", target, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def exchange(path: Path, raw: bytes) -> bytes:
    """Send raw bytes, read the whole answer (the bridge closes every connection)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(path))
        sock.sendall(raw)
        sock.shutdown(socket.SHUT_WR)  # nothing more: the bridge must answer what it has
        chunks = []
        while data := sock.recv(65536):
            chunks.append(data)
    return b"".join(chunks)


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


@pytest.fixture
def sock(tmp_path: Path) -> Path:
    return tmp_path / "m.sock"


@pytest.fixture
def model() -> Iterator[MockModelServer]:
    with MockModelServer([reply(Say("hello")) for _ in range(4)]) as server:
        yield server


def sse(server_reply_text: str, request: RecordedRequest) -> bytes:
    return b"".join(OpenAIResponses().render(reply(Say(server_reply_text)), request, 1))


def test_the_credential_is_sevros_and_the_sandbox_keys_are_dropped(
    sock: Path, model: MockModelServer
) -> None:
    body = json.dumps({"model": "m", "stream": True}).encode()
    sent = {
        "Authorization": f"Bearer {SANDBOX_KEY}",
        "x-api-key": SANDBOX_KEY,
        "Api-Key": SANDBOX_KEY,
        "Content-Type": "application/json",
        "X-Kept": "yes",
        "Connection": "keep-alive, X-Listed",
        "X-Listed": "hop-by-hop by the Connection header",
    }
    with ModelBridge(sock, model.base_url, ("authorization", f"Bearer {SECRET}")) as bridge:
        status, answer = post(sock, "/v1/responses", body, sent)
        assert bridge.requests == 1
    (seen,) = model.requests
    assert status == 200
    assert answer == sse("hello", seen)  # the SSE stream arrives byte for byte
    assert seen.path == "/v1/responses" and seen.body == body
    assert seen.headers["authorization"] == f"Bearer {SECRET}"
    assert SANDBOX_KEY not in json.dumps(dict(seen.headers))
    assert "x-api-key" not in seen.headers and "api-key" not in seen.headers
    assert "x-listed" not in seen.headers and seen.headers["x-kept"] == "yes"
    assert seen.headers["host"] == f"127.0.0.1:{model.port}"
    assert not sock.exists()  # close removed the socket


def test_another_credential_header_replaces_the_sandboxs_and_none_sends_none(
    tmp_path: Path, model: MockModelServer
) -> None:
    headers = {"Authorization": f"Bearer {SANDBOX_KEY}", "X-Api-Key": SANDBOX_KEY}
    with ModelBridge(tmp_path / "a.sock", model.origin, ("x-api-key", SECRET)):
        assert post(tmp_path / "a.sock", "/v1/responses", b"{}", headers)[0] == 200
    with ModelBridge(tmp_path / "b.sock", model.origin, None):
        assert post(tmp_path / "b.sock", "/v1/responses", b"{}", headers)[0] == 200
    keyed, bare = model.requests
    assert keyed.headers["x-api-key"] == SECRET and "authorization" not in keyed.headers
    assert "x-api-key" not in bare.headers and "authorization" not in bare.headers


@pytest.mark.parametrize("cut", [True, False])
@pytest.mark.parametrize(
    ("api", "protocol", "target"),
    [
        ("openai-responses", OpenAIResponses, "/v1/responses"),
        ("openai-completions", OpenAIChatCompletions, "/v1/chat/completions"),
        ("anthropic-messages", AnthropicMessages, "/v1/messages"),
    ],
)
def test_an_event_stream_without_its_closing_event_is_counted_as_cut(
    sock: Path, api: str, protocol: Any, target: str, cut: bool
) -> None:
    # pi takes a cut OpenAI stream for a whole reply; the bridge must not. The uncut stream of
    # each wire API is the control (its closing event is seen, nothing counted).
    body = json.dumps({"model": "m", "stream": True}).encode()
    upstream_path = "" if api == "anthropic-messages" else "/v1"
    with MockModelServer([reply(Say("hello " * 2000), cut=cut)], protocols=(protocol(),)) as model:
        upstream = model.origin if api == "anthropic-messages" else model.base_url
        assert upstream.endswith(upstream_path)
        with ModelBridge(sock, upstream, None, stream_end=STREAM_ENDS[api]) as bridge:
            status, _ = post(sock, target, body, {"Content-Type": "application/json"})
            assert status == 200
            assert bridge.incomplete == (1 if cut else 0)
        assert any("closing event" in e for e in bridge.errors) == cut  # closed: threads joined


def test_without_a_closing_event_nothing_is_counted(sock: Path, model: MockModelServer) -> None:
    body = json.dumps({"model": "m", "stream": True}).encode()
    with ModelBridge(sock, model.base_url, None) as bridge:  # no stream_end: nothing to check
        status, _ = post(sock, "/v1/responses", body, {"Content-Type": "application/json"})
        assert status == 200 and bridge.incomplete == 0


def test_a_chunked_request_is_forwarded_with_its_length(sock: Path, model: MockModelServer) -> None:
    raw = (
        b"POST /v1/responses HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        b'3\r\n{"a\r\n4;ext=1\r\n":1}\r\n0\r\nX-Trailer: dropped\r\n\r\n'
    )
    with ModelBridge(sock, model.base_url, ("authorization", f"Bearer {SECRET}")):
        answer = exchange(sock, raw)
    assert status_of(answer) == 200
    assert b"Transfer-Encoding: chunked" in answer and answer.endswith(b"0\r\n\r\n")
    (seen,) = model.requests
    assert seen.body == b'{"a":1}' and seen.headers["content-length"] == "7"
    assert "transfer-encoding" not in seen.headers and "x-trailer" not in seen.headers


BAD_REQUESTS = [
    (
        400,
        b"POST /v1/responses HTTP/1.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}",
    ),
    (400, b"POST /v1/responses HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}"),
    (400, b"POST /v1/responses HTTP/1.1\r\nContent-Length: +2\r\n\r\n{}"),
    (501, b"POST /v1/responses HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"),
    (411, b"POST /v1/responses HTTP/1.1\r\nHost: x\r\n\r\n{}"),
    (400, b"POST /v1/responses HTTP/1.1\nContent-Length: 2\n\n{}"),
    (400, b"POST /v1/responses HTTP/1.1\r\nX-A: 1\r\n folded\r\nContent-Length: 2\r\n\r\n{}"),
    (400, b"POST /v1/responses HTTP/1.1\r\nX-A : 1\r\nContent-Length: 2\r\n\r\n{}"),
    (400, b"POST http://elsewhere/v1/responses HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"),
    (400, b"POST /v1/%2e%2e/admin HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"),
    (403, b"POST /admin HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"),
    (403, b"POST /v10/responses HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"),
    (405, b"CONNECT /v1 HTTP/1.1\r\n\r\n"),
    (400, b"POST /v1/responses HTTP/2.0\r\nContent-Length: 2\r\n\r\n{}"),
    (400, b"POST /v1/responses HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
    (417, b"POST /v1/responses HTTP/1.1\r\nExpect: magic\r\nContent-Length: 2\r\n\r\n{}"),
]


def test_ambiguous_or_malformed_requests_are_refused_before_the_model(
    sock: Path, model: MockModelServer
) -> None:
    with ModelBridge(sock, model.base_url, ("authorization", f"Bearer {SECRET}")) as bridge:
        statuses = [status_of(exchange(sock, raw)) for _, raw in BAD_REQUESTS]
        assert exchange(sock, b"") == b""  # a bare connect and close: no answer, no error
        assert status_of(exchange(sock, b"\r\n")) == 400  # but an empty request line is one
        # The positive control: the same bridge forwards a well-formed request.
        good = b"POST /v1/responses HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"
        assert status_of(exchange(sock, good)) == 200
        assert bridge.requests == 1
        assert len(bridge.errors) == limits.MAX_BRIDGE_ERRORS  # bounded
    assert statuses == [status for status, _ in BAD_REQUESTS]
    assert len(model.requests) == 1


def test_oversize_requests_are_refused_and_the_bound_itself_passes(
    sock: Path, model: MockModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_BRIDGE_REQUEST_BYTES", 1000)
    monkeypatch.setattr(limits, "MAX_BRIDGE_HEADER_BYTES", 2000)
    with ModelBridge(sock, model.base_url, None):
        at_bound = post(sock, "/v1/responses", b"x" * 1000, {})[0]
        over = post(sock, "/v1/responses", b"x" * 1001, {})[0]
        chunks = b"".join(b"%x\r\n%s\r\n" % (400, b"y" * 400) for _ in range(3))
        chunked = b"POST /v1/r HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks
        over_chunked = status_of(exchange(sock, chunked + b"0\r\n\r\n"))
        headers = post(sock, "/v1/responses", b"{}", {"X-Big": "h" * 2100})[0]
    assert (at_bound, over, over_chunked, headers) == (200, 413, 413, 431)
    assert [len(r.body) for r in model.requests] == [1000]


def test_an_unreachable_model_is_a_short_502(sock: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    with ModelBridge(sock, f"http://127.0.0.1:{port}/v1", ("authorization", SECRET)) as bridge:
        status, body = post(sock, "/v1/responses", b"{}", {})
    assert status == 502 and len(body) < 512
    message = json.loads(body)["error"]["message"]
    assert message.startswith("sevro model bridge: model endpoint failed: ConnectionRefused")
    assert SECRET not in message and bridge.errors[-1].startswith("502: ")
    # Any message kept or sent loses the credential, whole or as its bare token.
    bearer = ModelBridge(sock, "http://h", ("authorization", f"Bearer {SECRET}"))
    assert bearer._scrub(f"a Bearer {SECRET} b {SECRET}") == "a *** b ***"


def test_the_response_streams_and_close_cuts_an_open_stream_promptly(sock: Path) -> None:
    with MockModelServer([reply(Say("streamed-hello"), hang=True)]) as model:
        bridge = ModelBridge(sock, model.base_url, None)
        bridge.start()
        connection = UnixConnection(sock)
        connection.request("POST", "/v1/responses", body=b"{}")
        response = connection.getresponse()
        seen = b""
        while b"response.output_item.done" not in seen:  # before the model's stream ends
            seen += response.read1(65536)
        assert b"streamed-hello" in seen
        started = time.monotonic()
        bridge.close()
        assert time.monotonic() - started < 2
        with pytest.raises(http.client.IncompleteRead):  # cut, never a clean end
            response.read()
        connection.close()
    assert not sock.exists()


LATE = b"POST /v1/responses HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"


def test_close_returns_promptly_while_the_model_has_not_answered(sock: Path) -> None:
    with MockModelServer([reply(Say("late"), delay_s=30)]) as model:
        bridge = ModelBridge(sock, model.base_url, None).__enter__()
        answers: list[bytes] = []
        client = threading.Thread(target=lambda: answers.append(exchange(sock, LATE)))
        client.start()
        while not model.requests:
            time.sleep(0.02)
        started = time.monotonic()
        bridge.close()
        assert time.monotonic() - started < 2
        client.join(5)
        assert answers == [b""]  # the connection was cut (pi: a model error), not left hanging


def test_connections_beyond_the_bound_get_503(sock: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_BRIDGE_CONNECTIONS", 1)
    with MockModelServer([reply(Say("a"), hang=True), reply(Say("b"))]) as model:
        with ModelBridge(sock, model.base_url, None):
            held = UnixConnection(sock)
            held.request("POST", "/v1/responses", body=b"{}")
            first = held.getresponse()
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as extra:
                extra.settimeout(10)
                extra.connect(str(sock))  # refused at once, before it sends anything
                assert extra.recv(65536).startswith(b"HTTP/1.1 503 ")
            assert first.status == 200
            held.close()
        assert len(model.requests) == 1


def test_a_response_beyond_the_bound_is_cut(
    sock: Path, model: MockModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_BRIDGE_RESPONSE_BYTES", 100)
    with ModelBridge(sock, model.base_url, None) as bridge:
        connection = UnixConnection(sock)
        connection.request("POST", "/v1/responses", body=b"{}")
        with pytest.raises(http.client.IncompleteRead):
            connection.getresponse().read()
        connection.close()
        assert "cut" in bridge.errors[-1]


def test_https_verifies_the_models_certificate(tmp_path: Path) -> None:
    openssl = require_tool("openssl")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    request = "req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1"
    san = "subjectAltName=IP:127.0.0.1"
    argv = [openssl, *request.split(), "-addext", san, "-keyout", str(key), "-out", str(cert)]
    subprocess.run(argv, check=True, capture_output=True)
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert, key)
    with MockModelServer([reply(Say("tls"))]) as model:
        httpd = model._httpd  # the mock speaks TLS for this test
        httpd.socket = server_context.wrap_socket(httpd.socket, server_side=True)
        url = f"https://127.0.0.1:{model.port}/v1"
        with ModelBridge(tmp_path / "u.sock", url, ("authorization", SECRET)):
            untrusted, body = post(tmp_path / "u.sock", "/v1/responses", b"{}", {})
        trusting = ssl.create_default_context(cafile=str(cert))
        with ModelBridge(tmp_path / "t.sock", url, ("authorization", SECRET), context=trusting):
            trusted = post(tmp_path / "t.sock", "/v1/responses", b"{}", {})[0]
    assert untrusted == 502 and b"CERTIFICATE_VERIFY_FAILED" in body
    assert trusted == 200 and model.requests[-1].headers["authorization"] == SECRET


def test_bad_settings_are_one_clear_line(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * (110 - len(str(tmp_path)))) / "m.sock"
    with pytest.raises(BridgeError, match=r"more than the 107 a Unix socket path holds"):
        ModelBridge(deep, "http://127.0.0.1:1/v1", None)
    for url in (
        "ftp://h/v1",
        "http:///v1",
        "http://u:p@h/v1",
        "http://h/v1?x=1",
        "http://h/a/../b",
    ):
        with pytest.raises(BridgeError, match="model endpoint"):
            ModelBridge(tmp_path / "m.sock", url, None)
    with pytest.raises(BridgeError) as caught:
        ModelBridge(tmp_path / "m.sock", "http://h", ("authorization", "Bearer a\r\nX: y"))
    assert "Bearer a" not in str(caught.value)
    with pytest.raises(BridgeError, match="empty"):
        ModelBridge(tmp_path / "m.sock", "http://h", ("authorization", "  "))
    assert len(os.fsencode(tmp_path / ("d" * (107 - len(str(tmp_path)) - 1)))) == 107
    ModelBridge(tmp_path / ("d" * (107 - len(str(tmp_path)) - 1)), "http://h", None)  # fits


def test_only_the_wire_apis_model_call_is_forwarded_when_asked(
    sock: Path, model: MockModelServer
) -> None:
    paths = api_paths("openai-responses", model.base_url)
    assert paths == {"/v1/responses"}
    assert api_paths("anthropic-messages", "https://api.anthropic.com") == {"/v1/messages"}
    assert api_paths("openai-completions", "http://h/v1/") == {"/v1/chat/completions"}
    with pytest.raises(BridgeError, match="no request path for the wire API 'gemini'"):
        api_paths("gemini", "http://h")
    with pytest.raises(BridgeError, match="paths must lie under"):
        ModelBridge(sock, model.base_url, None, paths={"/v2/responses"})
    with ModelBridge(sock, model.base_url, ("authorization", SECRET), paths=paths):
        statuses = [
            post(sock, "/v1/responses?x=1", b"{}", {})[0],
            post(sock, "/v1/files", b"{}", {})[0],
            status_of(exchange(sock, b"GET /v1/responses HTTP/1.1\r\n\r\n")),
        ]
    assert statuses == [200, 403, 403] and len(model.requests) == 1


def test_the_preload_mirrors_the_connection_bound() -> None:
    text = preload_path().read_text()
    assert f"const MAX_CONNECTIONS = {limits.MAX_BRIDGE_CONNECTIONS};" in text
    assert f"process.env.{SOCKET_VARIABLE}" in text and f"process.env.{PORT_VARIABLE}" in text


def test_the_base_url_keeps_the_upstream_path() -> None:
    assert bridge_base_url("http://127.0.0.1:5555/v1") == f"http://127.0.0.1:{BRIDGE_PORT}/v1"
    assert bridge_base_url("https://api.example.com/") == f"http://127.0.0.1:{BRIDGE_PORT}"
    assert bridge_base_url("https://h/a/b/", 9) == "http://127.0.0.1:9/a/b"
    assert free_port() == BRIDGE_PORT


# --- bridge.mjs under a real bubblewrap -------------------------------------------------------

PROBE = r"""
import net from "node:net";
const [mode, mockPort] = process.argv.slice(2);
const out = {};
if (mode === "bridge") {
  const r = await fetch(`http://127.0.0.1:${process.env.PROBE_BRIDGE_PORT}/v1/responses`, {
    method: "POST", body: "{}",
    headers: { "content-type": "application/json", authorization: "Bearer SANDBOX" } });
  out.status = r.status; out.body = await r.text();
  out.env = Object.keys(process.env).filter((k) => k.startsWith("SEVRO_PI_BRIDGE"));
}
out.direct = await new Promise((done) => {
  const s = net.connect(Number(mockPort), "127.0.0.1");
  s.setTimeout(3000, () => { s.destroy(); done("timeout"); });
  s.on("connect", () => { s.destroy(); done("open"); });
  s.on("error", (e) => done(e.code));
});
process.stdout.write(JSON.stringify(out) + "\n");
"""


def _sandboxed(root: Path, argv: list[str], env: dict[str, str], *, isolated: bool) -> list[str]:
    out = ["bwrap", "--die-with-parent", "--new-session", "--unshare-user", "--unshare-pid"]
    out += ["--unshare-ipc", "--unshare-uts", *(["--unshare-net"] if isolated else [])]
    out += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    out += ["--bind", str(root), str(root), "--chdir", str(root), "--clearenv"]
    for name, value in {"PATH": "/usr/bin:/bin", "HOME": str(root), **env}.items():
        out += ["--setenv", name, value]
    return [*out, "--", *argv]


def _node() -> str:
    require_sandbox()
    return require_tool("node")


def test_node_reaches_the_model_only_through_the_bridge(tmp_path: Path) -> None:
    node = _node()
    probe = tmp_path / "probe.mjs"
    probe.write_text(PROBE)
    sock = tmp_path / "m.sock"
    env = {SOCKET_VARIABLE: str(sock), PORT_VARIABLE: str(BRIDGE_PORT)}
    env["PROBE_BRIDGE_PORT"] = str(BRIDGE_PORT)
    with MockModelServer([reply(Say("through the bridge"))]) as model:
        argv = [node, "--import", str(preload_path()), str(probe), "bridge", str(model.port)]
        with ModelBridge(sock, model.base_url, ("authorization", f"Bearer {SECRET}")):
            isolated = subprocess.run(
                _sandboxed(tmp_path, argv, env, isolated=True),
                check=False,
                capture_output=True,
                text=True,
                timeout=60,
            )
        # The control: the same probe, the network shared, sees the model's port open.
        control = subprocess.run(
            _sandboxed(tmp_path, [node, str(probe), "direct", str(model.port)], {}, isolated=False),
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert isolated.returncode == 0, isolated.stderr
    (line,) = isolated.stdout.splitlines()  # bridge.mjs itself prints nothing
    seen = json.loads(line)
    assert seen["status"] == 200 and "through the bridge" in seen["body"]
    assert seen["direct"] == "ECONNREFUSED" and seen["env"] == []
    assert json.loads(control.stdout)["direct"] == "open", control.stderr
    (request,) = model.requests
    assert request.headers["authorization"] == f"Bearer {SECRET}"


def test_the_preload_fails_closed_on_half_a_setting(tmp_path: Path) -> None:
    node = _node()
    script = ["-e", "process.stdout.write('ran')"]
    half = {PORT_VARIABLE: str(BRIDGE_PORT)}
    both = {**half, SOCKET_VARIABLE: str(tmp_path / "m.sock")}
    runs = [
        subprocess.run(
            _sandboxed(
                tmp_path, [node, "--import", str(preload_path()), *script], env, isolated=True
            ),
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        )
        for env in (half, both)
    ]
    assert runs[0].returncode != 0 and runs[0].stdout == ""
    assert "SEVRO_PI_BRIDGE_SOCKET" in runs[0].stderr
    assert (runs[1].returncode, runs[1].stdout) == (0, "ran")  # the positive control


def _run_pi(
    tmp_path: Path, upstream: str, api: str, bridge: ModelBridge, prompt: str
) -> subprocess.CompletedProcess[str]:
    """The real pi in a sandbox without a network, its provider behind ``bridge``."""
    node, cli = _node(), Path(require_pi()).resolve()
    agent = tmp_path / "agent"
    agent.mkdir()
    retry = {"retry": {"enabled": False, "provider": {"maxRetries": 0}}}
    (agent / "settings.json").write_text(json.dumps(retry))
    provider = {
        "baseUrl": bridge_base_url(upstream),
        "api": api,
        "apiKey": "sevro-bridge",  # a placeholder: the bridge sets the real credential
        "models": [{"id": "mock-model"}],
    }
    (agent / "models.json").write_text(json.dumps({"providers": {"sevro": provider}}))
    env = {SOCKET_VARIABLE: str(bridge.socket_path), PORT_VARIABLE: str(BRIDGE_PORT)}
    env |= {"PI_CODING_AGENT_DIR": str(agent), "PI_OFFLINE": "1", "PI_TELEMETRY": "0"}
    argv = [node, "--import", str(preload_path()), str(cli), "--mode", "json"]
    argv += ["--provider", "sevro", "--model", "mock-model", "--no-session"]
    argv += ["--no-extensions", "--no-skills", "--no-context-files", prompt]
    sandboxed = _sandboxed(tmp_path, argv, env, isolated=True)
    return subprocess.run(sandboxed, check=False, capture_output=True, text=True, timeout=120)


def test_pi_itself_talks_to_the_model_through_the_bridge(tmp_path: Path) -> None:
    probe = "curl -sS -m 3 http://example.com >/dev/null 2>&1 && echo NET-OPEN || echo NET-CLOSED"
    replies = [reply(ToolCall("bash", {"command": probe}, call_id="c1")), reply(Say("done"))]
    with MockModelServer(replies) as model:
        paths = api_paths("openai-responses", model.base_url)
        auth = ("authorization", f"Bearer {SECRET}")
        with ModelBridge(tmp_path / "m.sock", model.base_url, auth, paths=paths) as bridge:
            run = _run_pi(tmp_path, model.base_url, "openai-responses", bridge, "say done")
            assert bridge.requests == 2 and bridge.errors == ()
    assert run.returncode == 0, run.stderr[-2000:]
    events = [json.loads(line) for line in run.stdout.splitlines()]
    assert events[-1]["type"] == "agent_end"
    results = [e for e in events if e["type"] == "tool_execution_end"]
    assert "NET-CLOSED" in json.dumps(results[0]["result"])
    assert [r.headers["authorization"] for r in model.requests] == [f"Bearer {SECRET}"] * 2
    assert "sevro-bridge" not in json.dumps([dict(r.headers) for r in model.requests])


@pytest.mark.parametrize("api", ["anthropic-messages", "openai-completions"])
def test_pis_other_wire_apis_post_to_their_known_path(tmp_path: Path, api: str) -> None:
    anthropic = api == "anthropic-messages"
    protocol = AnthropicMessages() if anthropic else OpenAIChatCompletions()
    with MockModelServer([reply(Say("done"))], (protocol,)) as model:
        upstream = model.origin if api == "anthropic-messages" else model.base_url
        name = "x-api-key" if api == "anthropic-messages" else "authorization"
        paths = api_paths(api, upstream)
        with ModelBridge(tmp_path / "m.sock", upstream, (name, SECRET), paths=paths) as bridge:
            run = _run_pi(tmp_path, upstream, api, bridge, "say done")
            assert bridge.requests == 1 and bridge.errors == (), run.stderr[-2000:]
    (seen,) = model.requests
    assert seen.path.split("?")[0] in paths and seen.headers[name] == SECRET
    assert seen.protocol == protocol.name and not model.unexpected
    events = [json.loads(line) for line in run.stdout.splitlines()]
    assert run.returncode == 0 and events[-1]["type"] == "agent_end"
    (answer,) = [
        e["message"]
        for e in events
        if e["type"] == "message_end" and e["message"]["role"] == "assistant"
    ]
    assert answer["stopReason"] == "stop" and answer["content"][0]["text"] == "done"
