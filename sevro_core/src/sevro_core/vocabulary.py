"""The ids plugins and the engine agree on: observations, artifacts and capabilities.

A grader ``requires`` what a host, a fixture or the engine ``capabilities`` provide, and a case's
``requiredEvidence`` names observation ids; both sides must spell an id the same way, so each
shared id is defined here once and imported from here (or from :mod:`sevro_core.api`). Ids a
single plugin owns (a host's own event-stream artifact) stay with that plugin. The strings
are part of the evidence format: they never change.
"""

from __future__ import annotations

# ---- observations ----------------------------------------------------------------------------

ENGINE_OBSERVATION_PREFIX = "sevro.observation."
"""The engine's and fixtures' namespace; hosts may not report observations in it."""
FINAL_MESSAGE_OBSERVATION = "sevro.observation.final-message"
"""The agent's last reply, observed by the engine from every host's result."""
TURNS_OBSERVATION = "sevro.observation.turns"
"""Cases with several turns: each settled turn's reply (bounded) and workspace snapshot."""
GIT_HEAD_OBSERVATION = "sevro.observation.git-head"
"""Git fixtures: the base revision, the current one and whether history was kept."""
WORKSPACE_OBSERVATION = "sevro.observation.workspace"
"""Git fixtures: what changed in the working tree against the baseline."""
FILES_CHANGED_OBSERVATION = "sevro.files-changed"
"""Hosts: files the agent created, modified or deleted in the workspace."""
SKILLS_OBSERVATION = "sevro.skills"
"""Hosts: the skills mounted in the workspace and which of them the agent read."""
COMMANDS_OBSERVATION = "sevro.commands"
"""Hosts: the commands the agent ran, with their exit codes."""
FILE_READS_OBSERVATION = "sevro.file-reads"
"""The scripted host: the files its script read."""
FILES_DIFF_OBSERVATION = "sevro.observation.files-diff"
"""Beside ``sevro.files.diff``: ``{byteLength, sha256, truncated}``; ``partial`` when cut."""
SKILL_ACTIVATIONS_OBSERVATION = "sevro.host.skill-activations"
"""Agent-CLI hosts with passive tool hooks: each activation of a prepared skill (its body found
in returned tool content, whole or composed from pages), with its turn and ordinal."""
TOOL_CALLS_OBSERVATION = "sevro.tool-calls"
"""Agent-CLI hosts: the tool calls the agent made, by name."""
HOST_RUNTIME_OBSERVATION = "sevro.host.runtime"
"""The engine, for every host when a runtime file is in effect: the runtime policy the
candidate's (and judges') commands got: digest, variable names, ``set`` values, PATH, read
roots; an inherited value other than PATH only through the digest."""
NATIVE_GOAL_OBSERVATION = "sevro.host.native-goal"
"""Hosts that honour ``hooks.nativeGoal``: the native goal as the CLI itself recorded it
(created, completed, not created), never inferred from the policy; also the capability a host
advertises when it can run one."""
HOST_HOOKS_OBSERVATION = "sevro.host.hooks"
"""Hosts that run hooks for the runtime policy: each hook's source and digest and the hook
executions the CLI reported, with their exit codes (an empty list proves nothing)."""

NATIVE_TRANSCRIPTS_OBSERVATION = "sevro.host.native-transcripts"
"""Agent-CLI hosts, with the runtime key ``nativeTranscripts``: the candidate's retained native
transcript tree (status, entry count, raw and encoded bytes, the bundle's sha256, a reason when
it is not retained). Also the capability a host advertises when it retains the tree."""
CONTEXT_OBSERVATION = "sevro.host.context"
"""Hosts that honour a host profile's ``observe_context``: per turn, the system prompt and each
model request's provider context rendered as text (``{turns: [{turn, systemPrompt,
requests: [{request, text}]}]}``); ``partial`` when a bound cut any text."""
RUNTIME_PROFILE_OBSERVATION = "sevro.host.runtime-profile"
"""Hosts that honour a skill-eval runtime profile: what was applied (host, session, the tools
declared and offered per request, each extension bundle's digest before and after, the
environment's literal values and inherited names); ``partial`` unless every bundle is unchanged
and every request offered exactly the declared tools. Also the capability such a host
advertises."""

# ---- artifacts -------------------------------------------------------------------------------

DIFF_ARTIFACT = "sevro.git.diff"
"""Git fixtures: the working tree's diff against the baseline."""
NATIVE_TRANSCRIPTS_ARTIFACT = "sevro.native-transcripts.bundle"
"""Agent-CLI hosts, with ``nativeTranscripts``: the candidate's native transcript tree as one
deterministic ``sevro.native-transcripts.v1`` JSON document (``hosts/nativetranscripts``)."""
FILES_DIFF_ARTIFACT = "sevro.files.diff"
"""Fixtures without Git, in a run with an advisory or comparator judge: sevro's text diff of the
fixture's files against the workspace after the host (``judges/textdiff``)."""

# ---- capabilities ----------------------------------------------------------------------------

SANDBOX_CAPABILITY = "sevro.sandbox"
"""Provided by the planner when commands can run isolated (or the operator opted out)."""
LOCAL_HTTP_CAPABILITY = "sevro.sandbox.local-http"
"""A sandbox backend that can offer loopback-only networking."""
PID_NAMESPACE_CAPABILITY = "sevro.sandbox.pid-namespace"
"""A sandbox backend where nothing the command starts outlives it."""
FILES_CAPABILITY = "sevro.fixture.files"
"""A fixture that writes declared files into the workspace."""
GIT_CAPABILITY = "sevro.fixture.git"
"""A fixture whose workspace is a Git repository observed by ``GitProbe``."""
CONTINUATION_CAPABILITY = "sevro.host.continuation"
"""A host that can run a case's ``followUpPrompt`` in the same session."""
ENFORCED_CAPABILITY = "sevro.condition.enforced"
"""A host that can run the ``enforced`` condition."""

# ---- judges ----------------------------------------------------------------------------------

SEMANTIC_ROLE = "semantic"
"""The judge of ``sevro.semantic`` propositions (``--semantic-host``)."""
ADVISORY_ROLE = "advisory"
"""The advisory reviewer of a trial's change (``--advisory-host``); never changes a verdict."""
COMPARATOR_ROLE = "comparator"
"""The blinded pairwise comparator of an experiment's paired trials."""
JUDGE_ROLES = (SEMANTIC_ROLE, ADVISORY_ROLE, COMPARATOR_ROLE)
JUDGE_PREFIX = "sevro.judge."
"""``sevro.judge.<role>`` is provided to capability negotiation when the run has that judge;
``sevro.judge.<role>.<n>.prompt`` and ``.reply`` are the artifacts of a trial's judge calls."""
SEMANTIC_JUDGE_CAPABILITY = JUDGE_PREFIX + SEMANTIC_ROLE
