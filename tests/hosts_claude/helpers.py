"""Drive the real Claude Code CLI through `sevro run --host claude` against the mock model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sevro_core.testing import CliResult, SevroProject
from sevro_core.testing.mockmodel import AnthropicMessages, ToolCall

API_KEY_ENV = "SEVRO_TEST_ANTHROPIC_KEY"
API_KEY = "sk-ant-sevro-test-0123456789abcdef"  # a planted credential: must reach only headers
PROTOCOLS = (AnthropicMessages(),)


def bash(command: str) -> ToolCall:
    return ToolCall("Bash", {"command": command})


def host_config(project: SevroProject, server: Any, *, timeout: float = 60, **extra: Any) -> Path:
    return project.write_json(
        "claude-host.json",
        {
            "format": "sevro.claude-host.v1",
            "baseUrl": server.origin,
            "turnTimeoutSeconds": timeout,
            "maxRetries": 0,
            **extra,
        },
    )


def claude_args(
    project: SevroProject,
    claude: str,
    server: Any,
    timeout: float = 60,
    config: dict[str, Any] | None = None,
) -> list[str]:
    return [
        "--host",
        "claude",
        "--host-config",
        str(host_config(project, server, timeout=timeout, **(config or {}))),
        "--model",
        "mock-model",
        "--claude-bin",
        claude,
        "--claude-api-key-env",
        API_KEY_ENV,
    ]


def run_claude(
    project: SevroProject,
    claude: str,
    server: Any,
    case: Path,
    *args: str,
    timeout: float = 60,
    env: dict[str, str] | None = None,
    config: dict[str, Any] | None = None,
) -> CliResult:
    return project.run(
        case,
        *claude_args(project, claude, server, timeout, config),
        *args,
        env={API_KEY_ENV: API_KEY, **(env or {})},
        timeout=180,
    )
