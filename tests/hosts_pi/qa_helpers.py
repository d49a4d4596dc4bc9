"""Drive the real pi CLI through `sevro run --host pi` against the mock model (QA tests)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sevro_core.testing import CliResult, SevroProject
from sevro_core.testing.mockmodel import MockModelServer, ToolCall

API_KEY_ENV = "SEVRO_TEST_PI_KEY"
API_KEY = "sk-sevro-pi-test-0123456789abcdef"  # a planted credential: must reach only the header


def bash(command: str) -> ToolCall:
    """pi 0.73.1's shell tool: `bash` with a `command` string."""
    return ToolCall("bash", {"command": command})


def pi_args(pi: str, server: MockModelServer) -> list[str]:
    """`--host pi` on the mock's OpenAI Responses endpoint, the key through a named variable."""
    return [
        "--host",
        "pi",
        "--model",
        "mock-model",
        "--pi-bin",
        pi,
        "--pi-api",
        "openai-responses",
        "--pi-base-url",
        server.base_url,
        "--pi-api-key-env",
        API_KEY_ENV,
    ]


def run_pi(
    project: SevroProject,
    pi: str,
    server: MockModelServer,
    case: Path,
    *args: str,
    env: dict[str, str] | None = None,
) -> CliResult:
    return project.run(
        case,
        *pi_args(pi, server),
        *args,
        env={API_KEY_ENV: API_KEY, **(env or {})},
        timeout=240,
    )


def tool_outputs(server: MockModelServer) -> list[str]:
    """What the model was shown of each tool call: the last request's call outputs, in order."""
    items: list[dict[str, Any]] = server.requests[-1].json()["input"]
    return [_text(item["output"]) for item in items if item.get("type") == "function_call_output"]


def _text(output: Any) -> str:
    if isinstance(output, str):
        return output
    return "".join(part.get("text", "") for part in output if isinstance(part, dict))
