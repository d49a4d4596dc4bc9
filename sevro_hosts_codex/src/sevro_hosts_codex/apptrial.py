"""A candidate trial through ``codex app-server`` (``--codex-entrypoint app-server``).

Everything before the first prompt is the ``exec`` trial's: the private ``CODEX_HOME``, the
generated permission profile, the passive hook, the per-request sandbox preflight and the
plugin install. Then one app-server process serves every prompt of the trial on one root thread
(see ``appserver``); its items are read as ``exec`` items, so commands, tool calls, file reads
and skill reads are observed the same way, and the native session (rollout) it keeps gives the
native-call and continuation observations. Token usage stays unknown.
"""

from __future__ import annotations

from collections.abc import Sequence

from sevro_core.api import (
    NATIVE_GOAL_OBSERVATION,
    Completeness,
    HostFailure,
    HostResult,
    JsonValue,
    MountedSkill,
    Observation,
    Snapshot,
    TurnRecord,
    Usage,
)
from sevro_hosts_codex.appserver import (
    AppServerError,
    Connection,
    Conversation,
    deadline_budget,
)
from sevro_hosts_codex.events import Turn
from sevro_hosts_codex.host import CodexTrial
from sevro_hosts_codex.limits import CODEX_APP_SERVER_START_TIMEOUT_SECONDS, MAX_CODEX_GOAL_UPDATES


class AppServerTrial(CodexTrial):
    """One app-server for the whole trial; each prompt a turn (chain) on its root thread."""

    connection: Connection | None = None
    conversation: Conversation | None = None

    def app_server_argv(self) -> list[str]:
        native = str(self.host.binary.native)
        listen = ["--strict-config", "--listen", "stdio://"]
        return [*self.host.pid_namespace, native, "app-server", *listen]

    def turn(self, number: int) -> TurnRecord[Turn]:
        """The prompt on the root thread; with several prompts the workspace is fingerprinted
        before each and as each ends (``continuation``), as on ``exec``."""
        if len(self.request.prompts) == 1:
            return self._prompt(number)
        if number == 1:
            self.continuation.first_prompt()
        else:
            self.continuation.resumed_prompt(number, self.session)
        try:
            return self._prompt(number)
        finally:
            self.continuation.turn_ended()

    def _prompt(self, number: int) -> TurnRecord[Turn]:
        config, request = self.host.config, self.request
        stall, cancel = config.stall_timeout_s, request.cancel
        try:
            conversation = self.conversation or self._start(stall)
            budget = deadline_budget(config.turn_timeout_s, stall, cancel, f"turn {number}")
            stream, turn = conversation.prompt(number, request.prompts[number - 1], budget)
        except AppServerError as exc:
            streamed = self.conversation.streamed() if self.conversation is not None else b""
            record: TurnRecord[Turn] = TurnRecord(number, None, streamed)
            stderr = self.close()
            if exc.cancelled:
                raise HostFailure("run cancelled", cancelled=True, records=(record,)) from None
            reason = f"turn {number}: {exc.message}; stderr: {self.tail(stderr)}"
            raise HostFailure(reason, records=(record,)) from None
        record = TurnRecord(number, turn, stream)
        problem = self.continuity_error(number, turn)
        if problem is None and not turn.completed:
            problem = f"turn {number} failed: {turn.failure}"
        if problem is not None:
            raise HostFailure(f"{problem}; stderr: {self.tail(self.close())}", records=(record,))
        return record

    def _start(self, stall: float) -> Conversation:
        """The app-server, initialized, with its one root thread."""
        self.connection = Connection(self.app_server_argv(), self.request.workspace, self.env)
        self.conversation = Conversation(self.connection)
        budget = deadline_budget(
            CODEX_APP_SERVER_START_TIMEOUT_SECONDS, stall, self.request.cancel, "app-server start"
        )
        # sevro wrote the only hook this home holds, so no trust review is wanted.
        trust = self.hook_log is not None
        self.conversation.start(self.request.workspace, budget, trust_hooks=trust)
        return self.conversation

    def close(self) -> bytes:
        """End the app-server (its process group); what it wrote on stderr."""
        if self.connection is None:
            return b""
        self.connection.close()
        return bytes(self.connection.stderr)

    def run(self) -> HostResult:
        try:
            return super().run()
        finally:
            self.close()

    def result(
        self,
        records: Sequence[TurnRecord[Turn]],
        failure: HostFailure | None,
        skills: tuple[Sequence[MountedSkill], bool],
        snapshots: tuple[Snapshot, Snapshot],
    ) -> HostResult:
        """Closed first: the native session is read whole once the process has ended."""
        self.close()
        return super().result(records, failure, skills, snapshots)

    def usage(self, turns: Sequence[Turn], all_turns: bool) -> Usage:
        """Unknown: the app-server entrypoint's usage is never estimated (Sevro's contract)."""
        return Usage()

    def turn_summary(self, turn: Turn) -> dict[str, JsonValue]:
        return {**super().turn_summary(turn), "nativeTurns": turn.native_turns}

    def observations(
        self,
        parsed: Sequence[TurnRecord[Turn]],
        skills: tuple[Sequence[MountedSkill], bool],
        snapshots: tuple[Snapshot, Snapshot],
    ) -> tuple[Observation, ...]:
        return (*super().observations(parsed, skills, snapshots), self._native_goal(parsed))

    def _native_goal(self, parsed: Sequence[TurnRecord[Turn]]) -> Observation:
        """What the host reported about goals on the root thread; enabling the policy proves
        nothing, and a trial whose prompts did not all finish cannot show there was none."""
        updates = self.conversation.goals if self.conversation is not None else []
        statuses = [u.status for u in updates]
        finished = len(parsed) == len(self.request.prompts) and all(
            r.turn is not None and r.turn.completed for r in parsed
        )
        if "complete" in statuses:
            status = "completed"
        elif any(s != "cleared" for s in statuses):
            status = "created"
        else:
            status = "none" if finished else "unavailable"
        truncated = len(updates) > MAX_CODEX_GOAL_UPDATES
        if finished and not truncated:
            completeness = Completeness.COMPLETE
        else:
            completeness = Completeness.PARTIAL if statuses else Completeness.UNAVAILABLE
        runtime = self.host.runtime
        data: dict[str, JsonValue] = {
            "method": "app_server_notifications",
            "status": status,
            "policy": bool(runtime is not None and runtime.native_goal),
            "threadId": self.conversation.thread_id if self.conversation is not None else None,
            "updates": [
                {"turn": u.prompt, "nativeTurn": u.native_turn, "status": u.status}
                for u in updates[:MAX_CODEX_GOAL_UPDATES]
            ],
            "truncated": truncated,
            "nativeTurns": [r.turn.native_turns for r in parsed if r.turn is not None],
        }
        return Observation(NATIVE_GOAL_OBSERVATION, self.host.route.host, completeness, data)
