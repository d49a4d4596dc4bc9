"""The JSON envelope around every call: a request with a fresh id, a response that echoes it.

``describe`` speaks ``sevro.discovery.v1`` (it runs before a protocol is agreed); the other
methods speak ``sevro.extension.v1``. Requests are checked against their published schema
before they are sent (a bug in sevro must not reach an extension), responses after they
arrive; a response must echo ``protocol``, ``id`` and ``method`` and hold exactly one of
``result`` and ``error``. Schemas: ``sevro_extensions/schemas`` (linked from docs/schemas).
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any, Final

from attrs import frozen

from sevro_core.api import InvocationError, JsonValue, describe_first_error, parse_json_text
from sevro_core.api import validator as schema_validator
from sevro_extensions.errors import ExtensionProtocolError, ExtensionReportedError, shown

DISCOVERY_PROTOCOL: Final = "sevro.discovery.v1"
EXTENSION_PROTOCOL: Final = "sevro.extension.v1"
METHOD_PROTOCOLS: Final = {
    "describe": DISCOVERY_PROTOCOL,
    "resolve": EXTENSION_PROTOCOL,
    "prepare": EXTENSION_PROTOCOL,
    "evaluate": EXTENSION_PROTOCOL,
}
"""Every method of protocol v1 and the protocol its envelope names."""
NAMESPACED_ID: Final = re.compile(r"^[a-z][a-z0-9]*(?:[.-][a-z0-9]+)+$")
MAX_NAMESPACED_ID_CHARS: Final = 128
PACKAGE: Final = "sevro_extensions"


def is_namespaced(value: object) -> bool:
    """Whether ``value`` is a namespaced id (``sevro.grader-x``, ``acme.policy``)."""
    return (
        isinstance(value, str)
        and len(value) <= MAX_NAMESPACED_ID_CHARS
        and NAMESPACED_ID.match(value) is not None
    )


def schema_name(method: str, direction: str) -> str:
    """The packaged schema of one method's ``request`` or ``response``."""
    return f"extension-{method}-{direction}.v1"


@frozen
class Request:
    """One request, ready to encode; ``id`` is a random UUID."""

    method: str
    id: str
    params: JsonValue

    @property
    def protocol(self) -> str:
        return METHOD_PROTOCOLS[self.method]

    def document(self) -> dict[str, JsonValue]:
        return {
            "protocol": self.protocol,
            "id": self.id,
            "method": self.method,
            "params": self.params,
        }

    def encode(self) -> bytes:
        """Strict UTF-8 JSON (no NaN), what the extension reads on stdin."""
        text = json.dumps(self.document(), ensure_ascii=False, allow_nan=False)
        return text.encode("utf-8")


def new_request(method: str, params: JsonValue) -> Request:
    """A request for ``method`` with a fresh id, checked against its schema."""
    if method not in METHOD_PROTOCOLS:
        raise ValueError(f"unknown extension method {method!r}")
    request = Request(method=method, id=str(uuid.uuid4()), params=params)
    problem = _schema_problem(schema_name(method, "request"), request.document())
    if problem is not None:
        raise ExtensionProtocolError(f"sevro built an invalid {method} request: {problem}")
    return request


def decode_response(request: Request, stdout: bytes, *, stderr: bytes = b"") -> JsonValue:
    """The ``result`` of the response to ``request``; raise a typed error for anything else."""
    document = _parsed(stdout, stderr)
    _check_echo(request, document, stderr)
    has_result, has_error = "result" in document, "error" in document
    if has_result == has_error:
        which = "both result and error" if has_result else "neither result nor error"
        raise ExtensionProtocolError(f"extension answered {which}", stderr=stderr)
    problem = _schema_problem(schema_name(request.method, "response"), document)
    if problem is not None:
        raise ExtensionProtocolError(
            f"extension {request.method} response is invalid: {problem}", stderr=stderr
        )
    if has_error:
        error = document["error"]
        raise ExtensionReportedError(error["code"], error["message"], stderr=stderr)
    return document["result"]


def _parsed(stdout: bytes, stderr: bytes) -> dict[str, Any]:
    try:
        document = parse_json_text(stdout, source="extension stdout")
    except InvocationError as exc:
        raise ExtensionProtocolError(
            f"extension stdout is not UTF-8 JSON ({exc.message})", stderr=stderr
        ) from None
    if not isinstance(document, dict):
        raise ExtensionProtocolError("extension stdout is not a JSON object", stderr=stderr)
    return document


def _check_echo(request: Request, document: dict[str, Any], stderr: bytes) -> None:
    """The response must answer this very request: same id, protocol and method."""
    if document.get("id") != request.id:
        raise ExtensionProtocolError(
            f"extension answered id {shown(document.get('id'))} for request {request.id}",
            stderr=stderr,
        )
    for key, expected in (("protocol", request.protocol), ("method", request.method)):
        if document.get(key) != expected:
            raise ExtensionProtocolError(
                f"extension answered {key} {shown(document.get(key))} to a {expected} request",
                stderr=stderr,
            )


def _schema_problem(name: str, document: JsonValue) -> str | None:
    """``<pointer>: <message>`` of the most relevant schema error, or None when valid."""
    checker = schema_validator(name, PACKAGE)
    found = describe_first_error(checker.iter_errors(document))
    if found is None:
        return None
    pointer, message = found
    return f"{pointer or '/'}: {message}"
