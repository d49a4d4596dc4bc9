"""One method call end to end: sources checked, request sent, response checked, sources again.

This is what the engine calls for ``describe``, ``resolve``, ``prepare`` and ``evaluate``. The
source closure is re-hashed right before the process starts and right after it ends, so a
change made by anyone (the extension itself included) between or during calls is an error,
never a pass.
"""

from __future__ import annotations

from collections.abc import Sequence

from attrs import frozen

from sevro_core.api import JsonValue
from sevro_extensions.envelope import decode_response, new_request
from sevro_extensions.errors import ExtensionProtocolError
from sevro_extensions.negotiation import Negotiated, describe_params, description, negotiate
from sevro_extensions.sources import SourceClosure
from sevro_extensions.transport import CallOptions, call


@frozen
class Answer:
    """A method's ``result`` with the closure as re-checked after the call and the bounded
    stderr (diagnostics only)."""

    result: JsonValue
    closure: SourceClosure
    stderr: bytes
    duration_ms: float


def call_method(
    argv: Sequence[str],
    closure: SourceClosure,
    method: str,
    params: JsonValue,
    options: CallOptions,
) -> Answer:
    """Call ``method`` once; raise an ``ExtensionError`` subclass for any failure."""
    request = new_request(method, params)
    closure = closure.verify(f"before {method}")
    output = call(argv, request.encode(), options)
    closure = closure.verify(f"after {method}")
    result = decode_response(request, output.stdout, stderr=output.stderr)
    return Answer(
        result=result, closure=closure, stderr=output.stderr, duration_ms=output.duration_ms
    )


@frozen
class Capabilities:
    """What the engine and the host offer, and the task-verdict policy the run selected."""

    engine: tuple[str, ...]
    host: tuple[str, ...]
    task_verdict_policy: str | None = None


@frozen
class Discovered:
    """A negotiated extension and its source closure as checked after ``describe``."""

    negotiated: Negotiated
    closure: SourceClosure


def discover(
    argv: Sequence[str],
    closure: SourceClosure,
    offered: Capabilities,
    options: CallOptions,
) -> Discovered:
    """``describe`` and negotiate: the first exchange of every run."""
    answer = call_method(
        argv, closure, "describe", describe_params(offered.engine, offered.host), options
    )
    if not isinstance(answer.result, dict):  # the schema makes it one; keep mypy honest
        raise ExtensionProtocolError("extension describe result is not an object")
    negotiated = negotiate(
        description(answer.result),
        engine_capabilities=offered.engine,
        host_capabilities=offered.host,
        task_verdict_policy=offered.task_verdict_policy,
    )
    return Discovered(negotiated=negotiated, closure=answer.closure)
