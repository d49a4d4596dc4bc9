"""sevro's pi observer: ``read_observations`` on good, partial and malformed record files, the
observer's own bounds and context rendering run in node, and one real pi run against the mock
model proving the records are right and that loading the observer changes nothing pi sends."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sevro_core.api import StreamError
from sevro_core.testing import require_tool
from sevro_core.testing.mockmodel import (
    Message,
    MockModelServer,
    OpenAIResponses,
    RecordedRequest,
    ToolCall,
    reply,
)
from sevro_hosts_pi import limits, observer
from sevro_hosts_pi.events import parse_turn
from sevro_hosts_pi.observer import TurnObservation, observer_source, read_observations
from sevro_hosts_pi.testing import require_pi

Record = dict[str, Any]


def write(path: Path, *records: Record | bytes) -> Path:
    with path.open("wb") as out:
        for record in records:
            out.write(record if isinstance(record, bytes) else json.dumps(record).encode() + b"\n")
    return path


def tools(request: int, *names: str) -> Record:
    return {"kind": "tools", "request": request, "names": list(names)}


def context(request: int, text: str, truncated: bool = False) -> Record:
    return {"kind": "provider-context", "request": request, "text": text, "truncated": truncated}


def prompt(text: str, truncated: bool = False) -> Record:
    return {"kind": "system-prompt", "text": text, "truncated": truncated}


# --- read_observations ----------------------------------------------------------------------


def test_a_complete_turn(tmp_path: Path) -> None:
    path = write(
        tmp_path / "o.jsonl",
        prompt("You are pi."),
        context(1, "hi"),
        tools(1, "read", "bash"),
        context(2, "hi\n\nbash({})"),
        tools(2, "read", "bash"),
    )
    assert read_observations(path) == TurnObservation(
        system_prompt="You are pi.",
        contexts=("hi", "hi\n\nbash({})"),
        offered_tools=(("read", "bash"), ("read", "bash")),
        truncated=False,
    )


def test_tools_only_and_an_empty_file(tmp_path: Path) -> None:
    only = read_observations(write(tmp_path / "a", tools(1)))
    assert only == TurnObservation(None, (), ((),), False)
    assert read_observations(write(tmp_path / "b")) == TurnObservation(None, (), (), False)


@pytest.mark.parametrize(
    "record",
    [
        prompt("cut", truncated=True),
        context(1, "cut", truncated=True),
        {"kind": "tools", "request": 1, "names": None},
        {"kind": "unobserved", "reason": "more than 1024 provider requests"},
    ],
)
def test_anything_missing_makes_the_observation_partial(tmp_path: Path, record: Record) -> None:
    assert read_observations(write(tmp_path / "o", record)).truncated
    assert not read_observations(write(tmp_path / "p", prompt("x"), context(1, "y"))).truncated


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"{not json\n", "record 1 is not JSON"),
        (b'{"kind":"tools","request":1,"names":[],"n":NaN}\n', "record 1 is not JSON"),
        (b'["tools"]\n', "not a record of a known kind"),
        (b'{"kind":"payload"}\n', "not a record of a known kind"),
        (b'{"kind":"tools","request":1}\n', "has other keys"),
        (b'{"kind":"tools","request":1,"names":[],"extra":1}\n', "has other keys"),
        (b'{"kind":"tools","request":"1","names":[]}\n', "request is not a number"),
        (b'{"kind":"tools","request":true,"names":[]}\n', "request is not a number"),
        (b'{"kind":"tools","request":0,"names":[]}\n', "request 0 out of range"),
        (b'{"kind":"tools","request":2,"names":[]}\n', "request 2 where 1 was next"),
        (b'{"kind":"tools","request":1,"names":[""]}\n', "not a bounded string"),
        (b'{"kind":"tools","request":1,"names":"bash"}\n', "not a bounded list"),
        (b'{"kind":"system-prompt","text":5,"truncated":false}\n', "of the wrong type"),
        (b'{"kind":"system-prompt","text":"\\ud800","truncated":false}\n', "lone surrogate"),
        (b'{"kind":"unobserved","reason":null}\n', "without a reason"),
        (b'{"kind":"tools","request":1,"names":[]}', "no newline"),
        (b'{"kind":"tools","request":1,"names":[]}\xff\n', "not JSON"),
    ],
)
def test_a_malformed_record_is_a_stream_error(tmp_path: Path, content: bytes, match: str) -> None:
    with pytest.raises(StreamError, match=match):
        read_observations(write(tmp_path / "o", content))


def test_order_and_uniqueness(tmp_path: Path) -> None:
    with pytest.raises(StreamError, match="record 2: a second system prompt"):
        read_observations(write(tmp_path / "a", prompt("a"), prompt("b")))
    with pytest.raises(StreamError, match="request 1 where 2 was next"):
        read_observations(write(tmp_path / "b", context(1, "a"), context(1, "a")))
    stopped = write(tmp_path / "c", {"kind": "unobserved", "reason": "x"}, tools(1))
    with pytest.raises(StreamError, match="record 2 follows the observer's last record"):
        read_observations(stopped)
    assert read_observations(write(tmp_path / "d", tools(1), tools(2))).offered_tools == ((), ())


def test_the_file_must_be_a_bounded_regular_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(StreamError, match="observer file missing"):
        read_observations(tmp_path / "missing")
    (tmp_path / "link").symlink_to(write(tmp_path / "real", tools(1)))
    with pytest.raises(StreamError, match="observer file link"):
        read_observations(tmp_path / "link")
    with pytest.raises(StreamError, match="not a regular file"):
        read_observations(tmp_path)
    path = write(tmp_path / "o", tools(1, "read"), context(1, "hello"))
    size, line = path.stat().st_size, max(map(len, path.read_bytes().splitlines()))
    monkeypatch.setattr(observer, "MAX_PI_OBSERVE_FILE_BYTES", size)
    monkeypatch.setattr(observer, "MAX_PI_OBSERVE_LINE_BYTES", line)
    monkeypatch.setattr(observer, "MAX_PI_OBSERVED_TEXT_CHARS", 5)
    assert read_observations(path).contexts == ("hello",)
    monkeypatch.setattr(observer, "MAX_PI_OBSERVED_TEXT_CHARS", 4)
    with pytest.raises(StreamError, match="text longer than its bound"):
        read_observations(path)
    monkeypatch.setattr(observer, "MAX_PI_OBSERVED_TEXT_CHARS", 5)
    monkeypatch.setattr(observer, "MAX_PI_OBSERVE_LINE_BYTES", line - 1)
    with pytest.raises(StreamError, match="record 2 is longer than its bound"):
        read_observations(path)
    monkeypatch.setattr(observer, "MAX_PI_OBSERVE_FILE_BYTES", size - 1)
    with pytest.raises(StreamError, match="larger than"):
        read_observations(path)


# --- observer.mjs in node -------------------------------------------------------------------


def test_the_observer_bounds_mirror_limits_py() -> None:
    source = observer_source().read_text(encoding="utf-8")
    found = dict(re.findall(r"^const (MAX_PI_\w+) = (\d+);$", source, flags=re.MULTILINE))
    assert found, "observer.mjs declares its bounds as `const MAX_PI_... = <int>;`"
    assert {name: int(value) for name, value in found.items()} == {
        name: getattr(limits, name) for name in found
    }
    assert len(found) == 6


HARNESS = """
import observe, { renderContext } from %(module)s;
const handlers = {};
observe({ on: (name, handler) => { handlers[name] = handler; } });
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const calls = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const results = [];
for (const [name, event, ctx] of calls) {
  if (name === "render") { results.push(renderContext(event)); continue; }
  results.push(handlers[name] === undefined ? "unregistered" : handlers[name](event, ctx));
}
console.log(JSON.stringify(results));
"""
"""Loads observer.mjs the way pi does (its default export called with an object whose ``on``
registers handlers) and calls the handlers with events shaped like pi 0.73.1's, so the
observer's rendering and bounds are checked without a model run per case."""


def run_observer(tmp_path: Path, calls: list[Any], observe_context: bool = True) -> list[Any]:
    node = require_tool("node")
    path = tmp_path / "observe.jsonl"
    env = {"PATH": os.environ.get("PATH", ""), "SEVRO_PI_OBSERVE": str(path)}
    if observe_context:
        env["SEVRO_PI_OBSERVE_CONTEXT"] = "1"
    script = HARNESS % {"module": json.dumps(observer_source().as_uri())}
    done = subprocess.run(
        [node, "--input-type=module", "-e", script],
        input=json.dumps(calls),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    results: list[Any] = json.loads(done.stdout)
    return results


def test_the_observer_renders_context_and_returns_nothing(tmp_path: Path) -> None:
    messages = [
        {"role": "user", "content": "plain"},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hidden"},
                {"type": "text", "text": "b"},
                {"type": "toolCall", "name": "bash", "arguments": {"command": "ls"}},
            ],
        },
        {"role": "toolResult", "content": [{"type": "text", "text": "out"}]},
        {"role": "assistant", "content": []},
        {"role": "compactionSummary", "summary": "earlier"},
    ]
    payload = {"tools": [{"type": "function", "name": "bash"}, {"function": {"name": "f"}}]}
    results = run_observer(
        tmp_path,
        [
            ["render", messages, None],
            ["before_agent_start", {"systemPrompt": "SP", "prompt": "p"}, None],
            ["context", {"messages": messages}, None],
            ["before_provider_request", {"payload": payload}, {"model": {"api": "x"}}],
            ["before_provider_request", {"payload": {}}, {"model": {"api": "anthropic-messages"}}],
            ["before_provider_request", {"payload": {}}, {"model": {"api": "google"}}],
        ],
    )
    text = 'plain\n\na\n\nb\nbash({"command":"ls"})\n\nout\n\nearlier'
    assert results == [text, None, None, None, None, None]
    observed = read_observations(tmp_path / "observe.jsonl")
    assert observed == TurnObservation(
        system_prompt="SP", contexts=(text,), offered_tools=(("bash", "f"), (), ()), truncated=True
    )  # the third request's tools (an api without a known tool shape) are unreadable


def test_without_context_observation_only_tools_are_recorded(tmp_path: Path) -> None:
    results = run_observer(
        tmp_path,
        [
            ["before_agent_start", {"systemPrompt": "SP"}, None],
            ["context", {"messages": []}, None],
            ["before_provider_request", {"payload": {"tools": [{"name": "read"}]}}, None],
        ],
        observe_context=False,
    )
    assert results == ["unregistered", "unregistered", None]
    assert read_observations(tmp_path / "observe.jsonl") == TurnObservation(
        None, (), (("read",),), False
    )


def test_the_observer_cuts_text_and_stops_at_its_request_bound(tmp_path: Path) -> None:
    long = "x" * (limits.MAX_PI_OBSERVED_TEXT_CHARS - 1) + "\U0001f600"  # pair across the cut
    calls: list[Any] = [["before_agent_start", {"systemPrompt": long}, None]]
    calls += [["before_provider_request", {"payload": {"tools": []}}, None]] * (
        limits.MAX_PI_OBSERVED_REQUESTS + 1
    )
    run_observer(tmp_path, calls)
    observed = read_observations(tmp_path / "observe.jsonl")
    assert observed.system_prompt == "x" * (limits.MAX_PI_OBSERVED_TEXT_CHARS - 1)
    assert len(observed.offered_tools) == limits.MAX_PI_OBSERVED_REQUESTS
    assert observed.truncated
    lone = tmp_path / "lone"
    lone.mkdir()
    run_observer(lone, [["before_agent_start", {"systemPrompt": "a\ud800b"}, None]])
    assert read_observations(lone / "observe.jsonl") == TurnObservation("a\ufffdb", (), (), True)
    exact = tmp_path / "exact"
    exact.mkdir()
    whole = "y" * limits.MAX_PI_OBSERVED_TEXT_CHARS
    assert run_observer(exact, [["before_agent_start", {"systemPrompt": whole}, None]]) == [None]
    assert read_observations(exact / "observe.jsonl") == TurnObservation(whole, (), (), False)


# --- the real pi ----------------------------------------------------------------------------

PROMPT = "Create made.txt please"
COMMAND = {"command": "echo hi > made.txt && ls"}


MUTATOR = """export default function (pi) {
  pi.on("before_agent_start", (event) => ({ systemPrompt: event.systemPrompt + "\\nMUTATED" }));
}
"""
"""A bundle that does change the system prompt: the control that the comparison can fail."""


def run_pi(
    root: Path,
    with_observer: bool,
    extensions: tuple[Path, ...] = (),
    preload: Path | None = None,
) -> tuple[list[RecordedRequest], bytes, Path]:
    """One pi turn in ``root/ws`` against a fresh mock (so call ids and paths repeat);
    ``extensions`` load before the observer, ``preload`` is given to node's ``--import``."""
    pi = require_pi()
    launcher = [pi]
    if preload is not None:
        launcher = [require_tool("node"), "--import", str(preload), os.path.realpath(pi)]
    replies = [reply(ToolCall("bash", COMMAND)), reply(Message("done"))]
    agent, home, ws = root / "agent", root / "home", root / "ws"
    for directory in (agent, home, ws):
        directory.mkdir(parents=True, exist_ok=True)
    (ws / "made.txt").unlink(missing_ok=True)
    observe = root / f"observe-{with_observer}-{len(extensions)}.jsonl"
    with MockModelServer(replies, protocols=(OpenAIResponses(),)) as server:
        provider = {"baseUrl": server.base_url, "api": "openai-responses", "apiKey": "MOCK_KEY"}
        models = [{"id": "mock-model", "reasoning": False}]
        (agent / "models.json").write_text(
            json.dumps({"providers": {"mock": {**provider, "models": models}}})
        )
        (agent / "settings.json").write_text(
            json.dumps({"retry": {"enabled": False, "provider": {"maxRetries": 0}}})
        )
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "PI_CODING_AGENT_DIR": str(agent),
            "PI_OFFLINE": "1",
            "PI_TELEMETRY": "0",
            "PI_SKIP_VERSION_CHECK": "1",
            "MOCK_KEY": "sk-mock",
            "SEVRO_PI_OBSERVE": str(observe),
            "SEVRO_PI_OBSERVE_CONTEXT": "1",
        }
        argv = [*launcher, "--mode", "json"]
        argv += ["--provider", "mock", "--model", "mock-model"]
        argv += ["--no-session", "--no-extensions", "--no-prompt-templates", "--no-themes"]
        argv += ["--no-skills", "--no-context-files"]
        for extension in extensions:
            argv += ["-e", str(extension)]
        argv += ["-e", str(observer_source())] if with_observer else []
        done = subprocess.run(
            [*argv, PROMPT], cwd=ws, env=env, capture_output=True, timeout=120, check=False
        )
        assert done.returncode == 0, done.stderr.decode(errors="replace")
        assert not done.stderr, done.stderr.decode(errors="replace")  # no extension error
        assert server.remaining == 0 and not server.unexpected
        return list(server.requests), done.stdout, observe


def sent(request: RecordedRequest) -> Any:
    """What pi sent, less the per-session cache key (each run is a new session)."""
    body = request.json()
    body.pop("prompt_cache_key")
    return body


def test_the_real_pi_observer_records_what_pi_sends_and_changes_nothing(tmp_path: Path) -> None:
    plain, plain_stream, unobserved = run_pi(tmp_path, with_observer=False)
    observed_requests, stream, path = run_pi(tmp_path, with_observer=True)
    assert not unobserved.exists()  # the control run loaded no observer
    assert [sent(r) for r in observed_requests] == [sent(r) for r in plain]
    assert parse_turn(stream).completed and parse_turn(plain_stream).completed

    observed = read_observations(path)
    first = observed_requests[0].json()["input"][0]
    assert first["role"] == "system" and observed.system_prompt == first["content"]
    assert observed.offered_tools == tuple(r.tools for r in observed_requests)
    assert observed.offered_tools[0] == ("read", "bash", "edit", "write")
    assert observed.contexts == (
        PROMPT,
        f"{PROMPT}\n\nbash({json.dumps(COMMAND, separators=(',', ':'))})\n\nmade.txt\n",
    )
    assert not observed.truncated


def test_a_mutating_extension_is_seen_by_the_comparison_and_the_last_loaded_observer(
    tmp_path: Path,
) -> None:
    plain, _, _ = run_pi(tmp_path, with_observer=False)
    mutator = tmp_path / "mutator.mjs"
    mutator.write_text(MUTATOR)
    mutated, _, path = run_pi(tmp_path, with_observer=True, extensions=(mutator,))
    assert [sent(r) for r in mutated] != [sent(r) for r in plain]
    system = mutated[0].json()["input"][0]["content"]
    assert system.endswith("\nMUTATED")
    assert read_observations(path).system_prompt == system  # the chained, final prompt


def test_the_observer_stops_before_its_file_would_pass_its_bound(tmp_path: Path) -> None:
    def last_record(room: int) -> tuple[Record, int]:
        root = tmp_path / str(room)
        root.mkdir()
        path = root / "observe.jsonl"
        with path.open("wb") as prefill:  # sparse: the bytes an earlier writer left
            prefill.truncate(limits.MAX_PI_OBSERVE_FILE_BYTES - room)
        run_observer(root, [["before_provider_request", {"payload": {}}, None]])
        size = path.stat().st_size
        with path.open("rb") as tail:
            tail.seek(limits.MAX_PI_OBSERVE_FILE_BYTES - room)
            record: Record = json.loads(tail.read())
        return record, size

    record, size = last_record(8192)
    assert record == {"kind": "tools", "request": 1, "names": None}
    stopped, size = last_record(4096)
    assert stopped["kind"] == "unobserved" and "bound" in stopped["reason"]
    assert size <= limits.MAX_PI_OBSERVE_FILE_BYTES


def test_an_event_the_observer_cannot_read_makes_the_turn_partial(tmp_path: Path) -> None:
    unreadable, later = {"messages": 5}, {"messages": []}
    run_observer(tmp_path, [["context", unreadable, None], ["context", later, None]])
    observed = read_observations(tmp_path / "observe.jsonl")
    assert observed.truncated and observed.contexts == ()
