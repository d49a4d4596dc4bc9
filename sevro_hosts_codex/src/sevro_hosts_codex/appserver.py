"""The ``app-server`` entrypoint: ``codex app-server`` over stdio JSON-RPC, one root thread.

Why a second entrypoint: ``codex exec`` ends with its first turn, so a native goal never gets
its continuation turns; the app-server keeps the thread loaded and runs them itself. One
process serves the whole trial: ``initialize``, one ``thread/start`` in the workspace, then one
``turn/start`` per prompt on that thread. A prompt is done when the ORIGINAL root thread's turn
chain (the prompt's turn and every continuation turn whose ``rootTurnId`` is that turn) has
completed and no goal is still active. Every line is bounded and parsed strictly; a message of
another thread, an unexpected turn, a server request, a failed turn or a silent, slow or dead
process ends the trial as an execution failure with the reason, never a pass. Token usage is
left unknown (Sevro's contract: never estimated).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from sevro_core.api import CancelToken, Usage
from sevro_hosts_codex.events import Item, Turn
from sevro_hosts_codex.limits import (
    MAX_CODEX_APP_SERVER_LINE_BYTES,
    MAX_CODEX_APP_SERVER_STDERR_BYTES,
    MAX_CODEX_APP_SERVER_STREAM_BYTES,
    MAX_CODEX_NATIVE_TURNS,
)

ENTRYPOINTS = ("exec", "app-server")
ENTRYPOINT_SETTING = "codex.entrypoint"
GOAL_STATUSES = frozenset(
    {"active", "paused", "blocked", "usageLimited", "budgetLimited", "complete"}
)
"""``ThreadGoalStatus`` of Codex 0.171.0's app-server protocol."""
_KILL_GRACE_SECONDS = 2.0
_ITEM_TYPES = {
    "agentMessage": "agent_message",
    "reasoning": "reasoning",
    "commandExecution": "command_execution",
    "fileChange": "file_change",
    "mcpToolCall": "mcp_tool_call",
    "webSearch": "web_search",
    "collabAgentToolCall": "collab_tool_call",
}
"""App-server item types as the ``exec --json`` item types the rest of the host reads."""


class AppServerError(Exception):
    """The app-server conversation cannot be trusted or did not finish; says why."""

    def __init__(self, message: str, *, cancelled: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.cancelled = cancelled


@frozen
class Budget:
    """How long a step may take: a deadline, the silence allowed, the run's cancel token."""

    deadline: float
    stall_s: float
    cancel: CancelToken
    what: str


class Connection:
    """One ``codex app-server`` process in its own process group, spoken to line by line."""

    def __init__(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> None:
        self.process = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )
        assert self.process.stdout is not None and self.process.stderr is not None
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.process.stdout, selectors.EVENT_READ, "out")
        self._selector.register(self.process.stderr, selectors.EVENT_READ, "err")
        self._partial = bytearray()
        self._lines: list[bytes] = []
        self._out_open = True
        self.stderr = bytearray()
        self.received = 0
        """Bytes received since :meth:`mark` (one prompt's stream)."""
        self._ids = 0
        self._closed = False

    def mark(self) -> None:
        self.received = 0

    def send(self, method: str, params: Mapping[str, Any] | None, *, request: bool) -> int:
        """Write one message (from a thread: a stalled peer cannot block the trial)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        self._ids += 1
        if request:
            message["id"] = self._ids
        if params is not None:
            message["params"] = params
        data = (json.dumps(message, ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass")
        threading.Thread(target=self._write, args=(data,), daemon=True).start()
        return self._ids

    def _write(self, data: bytes) -> None:
        stdin = self.process.stdin
        with contextlib.suppress(OSError, ValueError):
            if stdin is not None:
                stdin.write(data)
                stdin.flush()

    def read(self, budget: Budget) -> tuple[bytes, dict[str, Any]]:
        """The next message line and its object (``AppServerError`` when there is none)."""
        last = time.monotonic()
        while not self._lines:
            now = time.monotonic()
            if budget.cancel.cancelled:
                raise AppServerError("run cancelled", cancelled=True)
            if now >= budget.deadline:
                raise AppServerError(f"{budget.what} did not finish in time (process killed)")
            if now - last >= budget.stall_s:
                raise AppServerError(
                    f"{budget.what}: codex app-server stalled: no message for "
                    f"{budget.stall_s:g} s (stallTimeoutSeconds; process group killed)"
                )
            if not self._out_open:
                raise AppServerError(f"{budget.what}: codex app-server closed its output")
            if self._pump(min(budget.deadline - now, 0.1)):
                last = time.monotonic()
        line = self._lines.pop(0)
        return line, decode(line)

    def _pump(self, timeout: float) -> bool:
        """Read what is there; True when stdout made progress."""
        progress = False
        for key, _ in self._selector.select(timeout=max(timeout, 0)):
            chunk = os.read(key.fd, 65536)
            if not chunk:
                self._selector.unregister(key.fileobj)
                self._out_open = self._out_open and key.data != "out"
                continue
            if key.data == "err":
                room = MAX_CODEX_APP_SERVER_STDERR_BYTES - len(self.stderr)
                self.stderr += chunk[: max(room, 0)]
                continue
            progress = True
            self.received += len(chunk)
            if self.received > MAX_CODEX_APP_SERVER_STREAM_BYTES:
                raise AppServerError(
                    f"app-server stream exceeded {MAX_CODEX_APP_SERVER_STREAM_BYTES} bytes "
                    "for one prompt (process group killed)"
                )
            self._split(chunk)
        return progress

    def _split(self, chunk: bytes) -> None:
        self._partial += chunk
        *lines, rest = bytes(self._partial).split(b"\n")
        self._partial = bytearray(rest)
        if len(rest) > MAX_CODEX_APP_SERVER_LINE_BYTES:
            raise AppServerError(
                f"an app-server line is longer than {MAX_CODEX_APP_SERVER_LINE_BYTES} bytes"
            )
        for line in lines:
            if len(line) > MAX_CODEX_APP_SERVER_LINE_BYTES:
                raise AppServerError(
                    f"an app-server line is longer than {MAX_CODEX_APP_SERVER_LINE_BYTES} bytes"
                )
            if line.strip():
                self._lines.append(line)

    def close(self) -> None:
        """End the process group: SIGTERM, a grace period, SIGKILL; the pipes closed. Once
        only: a reaped group's id may belong to someone else's processes later."""
        if self._closed:
            return
        self._closed = True
        pid = self.process.pid
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=_KILL_GRACE_SECONDS)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        self.process.wait()
        self._selector.close()
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


def decode(line: bytes) -> dict[str, Any]:
    """One message line as a JSON-RPC object (``AppServerError`` for anything else)."""
    try:
        message = json.loads(line.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise AppServerError(f"an app-server line is not JSON: {exc}") from None
    if not isinstance(message, dict):
        raise AppServerError("an app-server line is not a JSON-RPC object")
    has_id, has_method = "id" in message, isinstance(message.get("method"), str)
    if not has_method and not has_id:
        raise AppServerError("an app-server message has neither a method nor an id")
    if has_method and "params" in message and not isinstance(message["params"], dict):
        raise AppServerError(f"app-server {message['method']} params are not an object")
    return message


def _no_constant(name: str) -> None:
    raise ValueError(f"non-standard JSON constant {name}")


@frozen
class GoalUpdate:
    """One goal status the host reported for the root thread (no objective text kept)."""

    prompt: int
    native_turn: int
    status: str


class Conversation:
    """The trial's one root thread on one app-server: start it, then run prompts on it."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.thread_id: str | None = None
        self.children: set[str] = set()
        self.goals: list[GoalUpdate] = []
        self.stream: list[bytes] = []
        self.spawning: set[str] = set()
        """The root's ``spawnAgent`` calls in progress (a child thread may appear then)."""
        self.unbound: set[str] = set()
        """Threads that appeared during a spawn and are not yet named by one."""
        self._before_start: set[str] = set()
        """Threads named before ``thread/start`` answered: only the new one may be."""

    def start(self, workspace: Path, budget: Budget, *, trust_hooks: bool) -> str:
        """``initialize``, ``initialized``, and one non-ephemeral ``thread/start``;
        ``trust_hooks`` is exec's ``--dangerously-bypass-hook-trust`` as the thread's override
        (the app-server refuses it as a ``-c`` key under ``--strict-config``)."""
        info = {"name": "sevro", "title": None, "version": "1"}
        self._request("initialize", {"clientInfo": info}, budget)
        self.connection.send("initialized", None, request=False)
        params: dict[str, Any] = {"cwd": str(workspace)}
        if trust_hooks:
            params["config"] = {"bypass_hook_trust": True}
        result = self._request("thread/start", params, budget)
        thread = result.get("thread")
        if not isinstance(thread, dict):
            raise AppServerError("thread/start answered without a thread")
        thread_id = thread.get("id")
        if not isinstance(thread_id, str) or not thread_id or len(thread_id) > 128:
            raise AppServerError("thread/start answered without a valid thread id")
        if thread.get("ephemeral") is not False:
            raise AppServerError("thread/start answered with a thread that is not persisted")
        foreign = sorted(self._before_start - {thread_id})
        if foreign:
            raise AppServerError(f"app-server named a foreign thread {foreign[0]} at start")
        self.thread_id = thread_id
        return thread_id

    def prompt(self, number: int, text: str, budget: Budget) -> tuple[bytes, Turn]:
        """Run one prompt to the end of its native turn chain; its stream and parsed turn."""
        assert self.thread_id is not None
        self.connection.mark()
        self.stream = []
        params = {"threadId": self.thread_id, "input": [{"type": "text", "text": text}]}
        held: list[dict[str, Any]] = []
        result = self._request("turn/start", params, budget, held)
        turn = result.get("turn")
        root = turn.get("id") if isinstance(turn, dict) else None
        if not isinstance(root, str) or not root:
            raise AppServerError("turn/start answered without a turn id")
        chain = Chain(number, root, self.thread_id)
        for message in held:  # what arrived before the answer (the turn may start first)
            self.receive(message, chain)
        while not chain.done:
            line, message = self.connection.read(budget)
            self.stream.append(line)
            self.receive(message, chain)
        return self.streamed(), chain.turn()

    def streamed(self) -> bytes:
        return b"".join(line + b"\n" for line in self.stream)

    def _request(
        self,
        method: str,
        params: Mapping[str, Any],
        budget: Budget,
        held: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Send a request and wait for its answer; messages meanwhile go to ``held`` (read
        once the answer says which turn started) or, without it, must be thread-level news."""
        wanted = self.connection.send(method, params, request=True)
        while True:
            line, message = self.connection.read(budget)
            self.stream.append(line)
            if "method" in message and held is not None and "id" not in message:
                held.append(message)
                continue
            if "method" in message:
                self._early(message)
                continue
            if message.get("id") != wanted:
                raise AppServerError(f"an app-server response to an unknown request while {method}")
            if "error" in message:
                error = message["error"]
                text = error.get("message") if isinstance(error, dict) else None
                raise AppServerError(f"app-server refused {method}: {str(text)[:500]}")
            result = message.get("result")
            if not isinstance(result, dict):
                raise AppServerError(f"app-server answered {method} without a result object")
            return result

    def _early(self, message: dict[str, Any]) -> None:
        """A message before the prompt's turn exists: only thread-level news is expected."""
        if "id" in message:
            raise _server_request(message)
        params = message.get("params") or {}
        kind = message["method"]
        if kind.startswith(("item/", "turn/")) and params.get("threadId") == self.thread_id:
            raise AppServerError(f"app-server sent {kind} before the prompt's turn started")
        self._thread_of(kind, params)

    def _thread_of(self, kind: str, params: Mapping[str, Any]) -> str | None:
        """The root thread, an announced child, or a failure for any other thread."""
        if self.thread_id is None:
            named = params.get("threadId")
            thread = params.get("thread")
            if isinstance(thread, dict):
                named = thread.get("id")
            if named is not None:
                self._before_start.add(str(named)[:128])
            return None
        if kind == "thread/started":
            thread = params.get("thread")
            if not isinstance(thread, dict) or not isinstance(thread.get("id"), str):
                raise AppServerError("thread/started without a thread id")
            if thread["id"] == self.thread_id:
                return self.thread_id
            if thread.get("parentThreadId") == self.thread_id:
                self.children.add(thread["id"])
                return str(thread["id"])
            raise AppServerError(f"app-server started a foreign thread {thread['id']}")
        thread_id = params.get("threadId")
        if thread_id is None:
            return None
        if thread_id != self.thread_id and thread_id not in self.children:
            if not self.spawning:
                raise AppServerError(f"app-server sent {kind} for a foreign thread {thread_id}")
            # A child appears while the root's spawn call is open; that call must name it.
            self.children.add(str(thread_id)[:128])
            self.unbound.add(str(thread_id)[:128])
        return str(thread_id)

    def receive(self, message: dict[str, Any], chain: Chain) -> None:
        """One message while a prompt runs (``AppServerError`` when it cannot be trusted)."""
        if "id" in message:
            if "method" in message:
                raise _server_request(message)
            raise AppServerError("an app-server response nobody asked for")
        kind, params = message["method"], message.get("params") or {}
        if self._thread_of(kind, params) != self.thread_id:
            return  # an announced child thread's own work: its rollout is checked later
        self._spawn(kind, params)
        if kind == "thread/goal/updated":
            status = _goal_status(params)
            self.goals.append(GoalUpdate(chain.number, len(chain.turns), status))
            chain.goal = status
        elif kind == "thread/goal/cleared":
            self.goals.append(GoalUpdate(chain.number, len(chain.turns), "cleared"))
            chain.goal = "cleared"
        else:
            chain.event(kind, params)

    def _spawn(self, kind: str, params: Mapping[str, Any]) -> None:
        """Track the root's open ``spawnAgent`` calls and bind the children they name."""
        raw = params.get("item")
        if not isinstance(raw, dict) or raw.get("type") != "collabAgentToolCall":
            return
        if raw.get("tool") != "spawnAgent" or not isinstance(raw.get("id"), str):
            return
        if kind == "item/started":
            self.spawning.add(raw["id"])
        elif kind == "item/completed":
            self.spawning.discard(raw["id"])
            receivers = raw.get("receiverThreadIds")
            named = {str(r) for r in receivers} if isinstance(receivers, list) else set()
            self.children |= named
            self.unbound -= named
            if self.unbound and not self.spawning:
                raise AppServerError(
                    f"thread {sorted(self.unbound)[0]} appeared during a spawn that did not "
                    "name it (a foreign thread)"
                )


def _server_request(message: Mapping[str, Any]) -> AppServerError:
    method = str(message.get("method"))[:128]
    return AppServerError(f"app-server asked the client {method!r}: sevro grants no requests")


def _goal_status(params: Mapping[str, Any]) -> str:
    goal = params.get("goal")
    status = goal.get("status") if isinstance(goal, dict) else None
    if status not in GOAL_STATUSES:
        raise AppServerError(f"thread/goal/updated with an unknown status {status!r}")
    return str(status)


class Chain:
    """One prompt's native turns on the root thread: the prompt's turn, then continuations."""

    def __init__(self, number: int, root: str, thread_id: str) -> None:
        self.number = number
        self.root = root
        self.thread_id = thread_id
        self.turns: list[str] = []
        self.open: str | None = None
        self.items: list[Item] = []
        self.last_items: list[Item] = []
        self.failure: str | None = None
        self.goal: str | None = None
        self.done = False
        self.warnings: list[str] = []

    def event(self, kind: str, params: Mapping[str, Any]) -> None:
        if kind == "turn/started":
            self._started(params)
        elif kind == "turn/completed":
            self._completed(params)
        elif kind == "item/completed":
            self._item(params)
        elif kind == "item/started" and params.get("turnId") != self.open:
            raise AppServerError(f"item/started for turn {params.get('turnId')}, not the open one")
        elif kind == "error" and params.get("willRetry") is not True:
            error = params.get("error")
            text = error.get("message") if isinstance(error, dict) else None
            self.warnings.append(str(text)[:500])

    def _started(self, params: Mapping[str, Any]) -> None:
        turn = params.get("turn")
        if not isinstance(turn, dict) or not isinstance(turn.get("id"), str):
            raise AppServerError("turn/started without a turn id")
        first = not self.turns
        expected_root = turn["id"] if first else self.root
        if self.open is not None or (first and turn["id"] != self.root):
            raise AppServerError(f"turn/started {turn['id']} while another turn was expected")
        if turn.get("rootTurnId", expected_root) != self.root:
            raise AppServerError(f"turn/started {turn['id']} is not a turn of this prompt")
        if len(self.turns) >= MAX_CODEX_NATIVE_TURNS:
            raise AppServerError(f"more than {MAX_CODEX_NATIVE_TURNS} native turns for one prompt")
        self.turns.append(turn["id"])
        self.open = turn["id"]
        self.last_items = []

    def _completed(self, params: Mapping[str, Any]) -> None:
        turn = params.get("turn")
        if not isinstance(turn, dict) or turn.get("id") != self.open or self.open is None:
            raise AppServerError("turn/completed for a turn that is not the open one")
        self.open = None
        status = turn.get("status")
        if status != "completed":
            error = turn.get("error")
            text = error.get("message") if isinstance(error, dict) else None
            self.failure = f"native turn {len(self.turns)} {status}: {str(text)[:500]}"
            self.done = True
            return
        # An active goal makes Codex start a continuation turn on the same thread.
        self.done = self.goal != "active"

    def _item(self, params: Mapping[str, Any]) -> None:
        if params.get("turnId") != self.open or self.open is None:
            raise AppServerError(
                f"item/completed for turn {params.get('turnId')}, not the open one"
            )
        raw = params.get("item")
        if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
            raise AppServerError("item/completed without an item id")
        kind = _ITEM_TYPES.get(str(raw.get("type")))
        if kind is None:
            return
        item = Item(len(self.items) + 1, raw["id"], kind, _exec_shape(kind, raw))
        self.items.append(item)
        self.last_items.append(item)

    def turn(self) -> Turn:
        completed = self.failure is None
        messages = [i for i in self.last_items if i.type == "agent_message"]
        final = str(messages[-1].data["text"]) if messages and completed else None
        return Turn(
            thread_id=self.thread_id,
            completed=completed,
            items=tuple(self.items),
            final_message=final,
            usage=Usage(),
            failure=self.failure,
            warnings=tuple(self.warnings),
            native_turns=len(self.turns),
        )


def _exec_shape(kind: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    """The item as ``codex exec --json`` shapes it (what ``collect`` and the reads read)."""
    shaped: dict[str, Any] = {"id": raw["id"], "type": kind}
    if "status" in raw:
        shaped["status"] = str(raw["status"])
    if kind == "agent_message":
        text = raw.get("text")
        if not isinstance(text, str):
            raise AppServerError("an agentMessage item without text")
        shaped["text"] = text
    elif kind == "reasoning":
        summary = raw.get("summary")
        shaped["text"] = "\n".join(str(s) for s in summary) if isinstance(summary, list) else ""
    elif kind == "command_execution":
        command, code, output = raw.get("command"), raw.get("exitCode"), raw.get("aggregatedOutput")
        if not isinstance(command, str) or not (code is None or isinstance(code, int)):
            raise AppServerError("a commandExecution item without command and exitCode")
        if not (output is None or isinstance(output, str)):
            raise AppServerError("a commandExecution item whose output is not a string")
        shaped.update(command=command, exit_code=code, aggregated_output=output or "")
    elif kind == "file_change":
        changes = raw.get("changes")
        if not isinstance(changes, list):
            raise AppServerError("a fileChange item without a list of changes")
        shaped["changes"] = [_change(c) for c in changes]
    else:
        for key in ("server", "tool", "arguments", "query"):
            if key in raw:
                shaped[key] = raw[key]
    return shaped


def _change(change: Any) -> dict[str, Any]:
    if not isinstance(change, dict) or not isinstance(change.get("path"), str):
        raise AppServerError("a fileChange change without a path")
    kind = change.get("kind")
    name = kind.get("type") if isinstance(kind, dict) else kind
    return {"path": change["path"], "kind": str(name)}


def deadline_budget(seconds: float, stall_s: float, cancel: CancelToken, what: str) -> Budget:
    return Budget(time.monotonic() + seconds, stall_s, cancel, what)
