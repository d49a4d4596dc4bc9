"""A scripted mock model server for testing real agent CLIs offline.

Tests point a real CLI at this server through the CLI's own custom-provider settings. The server
replays a per-test script of model replies (messages, tool calls, mid-stream errors, hangs) in
request order and records every request it receives, so a test can assert both what the agent did
and what reached the model.

The script is protocol-neutral; a ``ModelProtocol`` turns each ``Reply`` into the wire format of one
API. The OpenAI Responses API (``OpenAIResponses``), the Anthropic Messages API
(``AnthropicMessages``) and the OpenAI Chat Completions API (``OpenAIChatCompletions``), all
streaming SSE, are implemented here; another protocol is one more ``ModelProtocol`` class with its
own path and renderer.
"""

from __future__ import annotations

import http.server
import itertools
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar, Protocol

from attrs import field, frozen

MAX_MOCK_REQUEST_BYTES = 64 * 1024 * 1024
"""Requests larger than this are refused (a test server, but still bounded)."""


@frozen
class Message:
    """An assistant text message."""

    text: str


@frozen
class ToolCall:
    """A function call the model asks the agent to make; ``arguments`` are JSON."""

    name: str
    arguments: Mapping[str, Any]
    call_id: str | None = None


@frozen
class Reasoning:
    """A reasoning summary item."""

    text: str


Item = Message | ToolCall | Reasoning


@frozen
class Reply:
    """One model response: ``items`` streamed in order, then a completion with ``usage``.

    ``error`` streams a failure event after the items instead of completing; ``cut`` closes the
    connection after the items with no completion; ``hang`` keeps the connection open and silent
    until the server stops; ``status`` other than 200 answers with that HTTP error; ``delay_s``
    waits that long before answering (a slow model that still makes progress).
    """

    items: tuple[Item, ...] = ()
    usage: Mapping[str, int] | None = field(
        factory=lambda: {"input": 100, "cached": 20, "output": 10, "reasoning": 3}
    )
    error: str | None = None
    cut: bool = False
    hang: bool = False
    status: int = 200
    delay_s: float = 0.0


def reply(*items: Item, **kwargs: Any) -> Reply:
    return Reply(items=tuple(items), **kwargs)


@frozen
class RecordedRequest:
    """One request the server received, byte for byte."""

    protocol: str
    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def tools(self) -> tuple[str, ...] | None:
        """The names of the tools the request offered the model (a function's ``name``, Chat
        Completions' ``function.name``, or the ``type`` of a hosted tool such as ``web_search``),
        in order; None when the body is no JSON object or its ``tools`` is missing or no list, so
        "no tools" is never assumed."""
        try:
            body = self.json()
        except ValueError:
            return None
        offered = body.get("tools") if isinstance(body, dict) else None
        if not isinstance(offered, list):
            return None
        return tuple(_tool_name(tool) if isinstance(tool, dict) else repr(tool) for tool in offered)


def _tool_name(tool: Mapping[str, Any]) -> str:
    function = tool.get("function")
    nested = function.get("name") if isinstance(function, dict) else None
    return str(tool.get("name") or nested or tool.get("type"))


class ModelProtocol(Protocol):
    """One model API: which requests it answers and how a ``Reply`` looks on its wire."""

    name: str

    def handles(self, method: str, path: str) -> bool: ...

    def render(self, reply: Reply, request: RecordedRequest, serial: int) -> Iterator[bytes]:
        """Yield the response body in chunks (each one is flushed)."""


def _sse(event: Mapping[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


class OpenAIResponses:
    """The OpenAI Responses API, streaming (``POST /v1/responses`` with ``stream: true``)."""

    name = "openai-responses"
    paths: ClassVar[tuple[str, ...]] = ("/v1/responses", "/responses")

    def handles(self, method: str, path: str) -> bool:
        return method == "POST" and path.split("?", 1)[0] in self.paths

    def render(self, reply: Reply, request: RecordedRequest, serial: int) -> Iterator[bytes]:
        response_id = f"resp_mock_{serial}"
        yield _sse(
            {
                "type": "response.created",
                "response": {"id": response_id, "object": "response", "status": "in_progress"},
            }
        )
        for index, item in enumerate(reply.items):
            wire = self._item(item, serial, index)
            added = {**wire, "status": "in_progress"}
            if isinstance(item, Message):
                added["content"] = []
            yield _sse({"type": "response.output_item.added", "output_index": index, "item": added})
            if isinstance(item, Message):
                yield _sse(
                    {
                        "type": "response.output_text.delta",
                        "item_id": wire["id"],
                        "output_index": index,
                        "content_index": 0,
                        "delta": item.text,
                    }
                )
            yield _sse({"type": "response.output_item.done", "output_index": index, "item": wire})
        if reply.hang:
            return  # the server keeps the connection open and silent
        if reply.error is not None:
            yield _sse(
                {
                    "type": "response.failed",
                    "response": {
                        "id": response_id,
                        "status": "failed",
                        "error": {"code": "server_error", "message": reply.error},
                    },
                }
            )
            return
        if reply.cut:
            return
        completed: dict[str, Any] = {"id": response_id, "object": "response", "status": "completed"}
        if reply.usage is not None:
            u = reply.usage
            completed["usage"] = {
                "input_tokens": u["input"],
                "input_tokens_details": {"cached_tokens": u["cached"]},
                "output_tokens": u["output"],
                "output_tokens_details": {"reasoning_tokens": u["reasoning"]},
                "total_tokens": u["input"] + u["output"],
            }
        yield _sse({"type": "response.completed", "response": completed})

    @staticmethod
    def _item(item: Item, serial: int, index: int) -> dict[str, Any]:
        item_id = f"item_{serial}_{index}"
        if isinstance(item, Message):
            return {
                "type": "message",
                "id": item_id,
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": item.text, "annotations": []}],
            }
        if isinstance(item, ToolCall):
            return {
                "type": "function_call",
                "id": item_id,
                "call_id": item.call_id or f"call_{serial}_{index}",
                "name": item.name,
                "arguments": json.dumps(dict(item.arguments)),
                "status": "completed",
            }
        return {
            "type": "reasoning",
            "id": item_id,
            "summary": [{"type": "summary_text", "text": item.text}],
        }


class AnthropicMessages:
    """The Anthropic Messages API, streaming (``POST /v1/messages`` with ``stream: true``).

    Text becomes a ``text`` block, a ``ToolCall`` a ``tool_use`` block whose input arrives as
    ``input_json_delta`` chunks, ``Reasoning`` a ``thinking`` block. A reply with tool calls stops
    with ``tool_use``, otherwise ``end_turn``. ``error`` streams an ``error`` event mid-message.
    A non-streaming request (a side query some CLIs make) gets HTTP 500 like any unscripted one.
    """

    name = "anthropic-messages"
    paths: ClassVar[tuple[str, ...]] = ("/v1/messages",)

    def handles(self, method: str, path: str) -> bool:
        return method == "POST" and path.split("?", 1)[0] in self.paths

    def render(self, reply: Reply, request: RecordedRequest, serial: int) -> Iterator[bytes]:
        try:
            model = str(request.json().get("model", "mock-model"))
        except (ValueError, AttributeError):
            model = "mock-model"
        u = reply.usage
        usage = {
            "input_tokens": (u["input"] - u["cached"]) if u is not None else 0,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": u["cached"] if u is not None else 0,
            "output_tokens": 1,
        }
        yield _sse(
            {
                "type": "message_start",
                "message": {
                    "id": f"msg_mock_{serial}",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                },
            }
        )
        for index, item in enumerate(reply.items):
            yield from self._block(item, serial, index)
        if reply.hang or reply.cut:
            return
        if reply.error is not None:
            yield _sse({"type": "error", "error": {"type": "api_error", "message": reply.error}})
            return
        tools = any(isinstance(i, ToolCall) for i in reply.items)
        yield _sse(
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": "tool_use" if tools else "end_turn",
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": u["output"] if u is not None else 0},
            }
        )
        yield _sse({"type": "message_stop"})

    @staticmethod
    def _block(item: Item, serial: int, index: int) -> Iterator[bytes]:
        if isinstance(item, Message):
            start: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": item.text}]
        elif isinstance(item, ToolCall):
            start = {
                "type": "tool_use",
                "id": item.call_id or f"toolu_mock_{serial}_{index}",
                "name": item.name,
                "input": {},
            }
            text = json.dumps(dict(item.arguments))
            half = len(text) // 2
            deltas = [
                {"type": "input_json_delta", "partial_json": part}
                for part in (text[:half], text[half:])
            ]
        else:
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": item.text},
                {"type": "signature_delta", "signature": f"mock-signature-{serial}-{index}"},
            ]
        yield _sse({"type": "content_block_start", "index": index, "content_block": start})
        for delta in deltas:
            yield _sse({"type": "content_block_delta", "index": index, "delta": delta})
        yield _sse({"type": "content_block_stop", "index": index})


class OpenAIChatCompletions:
    """The OpenAI Chat Completions API, streaming (``POST /v1/chat/completions``, ``stream: true``).

    Each SSE ``data:`` line is a ``chat.completion.chunk`` (no ``event:`` lines): a first chunk
    with the assistant ``role``, then per item its deltas in ``choices[0].delta``: ``content`` for
    a ``Message``; for a ``ToolCall`` one ``tool_calls`` entry (its own ``index``, ``id``,
    ``type`` and ``function.name``) followed by its ``function.arguments`` in two chunks;
    ``Reasoning`` as ``reasoning_content`` (not in OpenAI's spec: the field llama.cpp and DeepSeek
    stream, which OpenAI-compatible clients read). A last choice chunk carries ``finish_reason``
    (``tool_calls`` when the reply has tool calls, else ``stop``). When the request asked
    ``stream_options.include_usage``, every chunk has ``usage: null`` and a final chunk with empty
    ``choices`` carries the usage (``prompt_tokens`` include the cached ones; no such chunk when
    the reply's ``usage`` is None). Then ``data: [DONE]``. ``error`` streams
    ``data: {"error": ...}`` after the items, as OpenAI does mid-stream, and no ``[DONE]``;
    ``cut`` closes after the items with no ``finish_reason``, usage or ``[DONE]``.
    """

    name = "openai-chat-completions"
    paths: ClassVar[tuple[str, ...]] = ("/v1/chat/completions", "/chat/completions")

    def handles(self, method: str, path: str) -> bool:
        return method == "POST" and path.split("?", 1)[0] in self.paths

    def render(self, reply: Reply, request: RecordedRequest, serial: int) -> Iterator[bytes]:
        try:
            body = request.json()
        except ValueError:
            body = None
        body = body if isinstance(body, dict) else {}
        options = body.get("stream_options")
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        base: dict[str, Any] = {
            "id": f"chatcmpl-mock-{serial}",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": str(body.get("model", "mock-model")),
            "system_fingerprint": None,
        }
        if include_usage:
            base["usage"] = None

        def chunk(delta: Mapping[str, Any], finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": dict(delta), "logprobs": None, "finish_reason": finish}
            return _data({**base, "choices": [choice]})

        yield chunk({"role": "assistant", "content": ""})
        calls = 0
        for index, item in enumerate(reply.items):
            if isinstance(item, Message):
                yield chunk({"content": item.text})
            elif isinstance(item, ToolCall):
                call = {
                    "index": calls,
                    "id": item.call_id or f"call_mock_{serial}_{index}",
                    "type": "function",
                    "function": {"name": item.name, "arguments": ""},
                }
                yield chunk({"tool_calls": [call]})
                text = json.dumps(dict(item.arguments))
                half = len(text) // 2
                for part in (text[:half], text[half:]):
                    yield chunk({"tool_calls": [{"index": calls, "function": {"arguments": part}}]})
                calls += 1
            else:
                yield chunk({"reasoning_content": item.text})
        if reply.hang or reply.cut:
            return
        if reply.error is not None:
            error = {"message": reply.error, "type": "server_error", "param": None, "code": None}
            yield _data({"error": error})
            return
        yield chunk({}, "tool_calls" if calls else "stop")
        u = reply.usage
        if include_usage and u is not None:
            usage = {
                "prompt_tokens": u["input"],
                "completion_tokens": u["output"],
                "total_tokens": u["input"] + u["output"],
                "prompt_tokens_details": {"cached_tokens": u["cached"]},
                "completion_tokens_details": {"reasoning_tokens": u["reasoning"]},
            }
            yield _data({**base, "choices": [], "usage": usage})
        yield b"data: [DONE]\n\n"


def _data(document: Mapping[str, Any]) -> bytes:
    return f"data: {json.dumps(document)}\n\n".encode()


class MockModelServer:
    """A threaded HTTP server on 127.0.0.1 that replays ``replies`` and records requests.

    Use as a context manager. A request after the script is exhausted, or one no protocol
    handles, gets HTTP 500 and is recorded in ``unexpected``.
    """

    def __init__(
        self, replies: Sequence[Reply], protocols: Sequence[ModelProtocol] = (OpenAIResponses(),)
    ) -> None:
        self._replies = list(replies)
        self._protocols = tuple(protocols)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._serial = itertools.count(1)
        self.requests: list[RecordedRequest] = []
        self.unexpected: list[RecordedRequest] = []
        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (``.../v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def origin(self) -> str:
        """The bare origin (``http://127.0.0.1:<port>``), the Anthropic-style base URL."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._replies)

    def __enter__(self) -> MockModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def _next(self, method: str, path: str) -> tuple[ModelProtocol | None, Reply | None, int]:
        protocol = next((p for p in self._protocols if p.handles(method, path)), None)
        with self._lock:
            if protocol is None or not self._replies:
                return protocol, None, 0
            return protocol, self._replies.pop(0), next(self._serial)

    def _handler_class(self) -> type[http.server.BaseHTTPRequestHandler]:
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

            def _handle(self, method: str) -> None:
                length = int(self.headers.get("content-length") or 0)
                if length > MAX_MOCK_REQUEST_BYTES:
                    self.send_error(413)
                    return
                body = self.rfile.read(length) if length else b""
                protocol, planned, serial = server._next(method, self.path)
                recorded = RecordedRequest(
                    protocol=protocol.name if protocol is not None else "unknown",
                    method=method,
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
                with server._lock:
                    server.requests.append(recorded)
                    if planned is None:
                        server.unexpected.append(recorded)
                if planned is not None and planned.delay_s:
                    server._stop.wait(planned.delay_s)
                if protocol is None or planned is None:
                    self._plain(500, {"error": {"message": "mock model: no scripted reply"}})
                    return
                if planned.status != 200:
                    self._plain(planned.status, {"error": {"message": "mock model: scripted"}})
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                self.close_connection = True
                try:
                    for chunk in protocol.render(planned, recorded, serial):
                        self.wfile.write(chunk)
                        self.wfile.flush()
                    if planned.hang:
                        server._stop.wait()
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _plain(self, status: int, document: Mapping[str, Any]) -> None:
                data = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.send_header("connection", "close")
                self.end_headers()
                self.close_connection = True
                self.wfile.write(data)

        return Handler
