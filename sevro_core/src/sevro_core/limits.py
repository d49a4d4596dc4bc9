"""Every bound sevro enforces, in one place, so docs and code cannot drift apart.

`docs/limits.md` lists these values; a test keeps the two in step.
"""

from __future__ import annotations

KIB = 1024
MIB = 1024 * KIB

# Case files
MAX_CASE_FILE_BYTES = 8 * MIB
MAX_CASE_FILES_IN_DIRECTORY = 1024
MAX_CASES_PER_RUN = 1024
MAX_TRIGGER_QUERIES = 512
"""Queries in one skill-creator trigger eval set (each is a case of the run)."""
MAX_EVAL_SET_EVALS = 512
"""Evals in one skill-creator ``evals/evals.json`` (each is a case of the run)."""
MAX_EVAL_EXPECTATION_BYTES = 8 * KIB
"""One natural-language expectation of an eval, UTF-8 (it becomes a ``sevro.semantic`` check)."""
MAX_EVAL_EXPECTED_OUTPUT_BYTES = 64 * KIB
"""One eval's ``expected_output``, UTF-8 (kept for the advisory reviewer)."""
MAX_EVAL_INPUT_FILE_BYTES = 8 * MIB
"""One input file an eval copies from the skill directory into its workspace."""
MAX_EVAL_SET_INPUT_BYTES = 64 * MIB
"""Every input file of one ``evals.json`` together, read at load time."""
MAX_CASE_ID_LENGTH = 128
MAX_PROMPT_BYTES = 1 * MIB
MAX_TURNS_PER_CASE = 64
MAX_CHECKS_PER_CASE = 128
MAX_REQUIRED_EVIDENCE = 128
MAX_JSON_DEPTH = 64
MAX_CALIBRATION_VARIANTS = 32
"""Calibration variants one case declares (docs/oracle-calibration.md)."""
MAX_CALIBRATION_OUTPUT_BYTES = 1 * MIB
"""One calibration variant's ``finalOutput`` file, read when ``sevro calibrate`` starts."""

# Inline fixtures
MAX_FIXTURE_FILES = 1024
MAX_FIXTURE_BYTES = 32 * MIB
MAX_FIXTURE_PATH_LENGTH = 1024
MAX_FIXTURE_PATH_DEPTH = 32

# Git fixtures (generated history and repository clones)
MAX_GENERATED_COMMITS = 128
MAX_COMMIT_MESSAGE_BYTES = 4096
MAX_GIT_FIXTURE_FILES = 1024
MAX_GIT_FIXTURE_BYTES = 32 * MIB
MAX_GIT_OUTPUT_BYTES = 64 * KIB
GIT_COMMAND_TIMEOUT_SECONDS = 120
MAX_FIXTURE_TOOLS = 64
MAX_FIXTURE_TOOL_BYTES = 1 * MIB
MAX_FIXTURE_HOOKS = 32
MAX_FIXTURE_HOOK_BYTES = 1 * MIB
MAX_FIXTURE_TOOL_NAME_LENGTH = 64
MAX_CASE_SOURCE_MAP_BYTES = 64 * KIB
MAX_CASE_SOURCES = 256
MAX_SOURCE_LISTING_BYTES = 8 * MIB

# Experiments: skill bundles and the sources they come from
MAX_SOURCE_FILES = 1024
MAX_SOURCE_BYTES = 32 * MIB
MAX_SOURCE_PATH_LENGTH = 1024
MAX_SOURCE_PATH_DEPTH = 32
MAX_SKILL_FILE_BYTES = 1 * MIB
MAX_SKILL_FRONT_MATTER_BYTES = 64 * KIB
MAX_SKILL_FRONT_MATTER_DEPTH = 16
MAX_SKILL_NAME_LENGTH = 64
MAX_SKILL_DESCRIPTION_LENGTH = 1024

# What a fixture reports after the host (workspace fingerprint, git diff)
MAX_FIXTURE_OBSERVATIONS = 8
MAX_FIXTURE_ARTIFACTS = 4
MAX_WORKSPACE_FILES = 65_536
MAX_WORKSPACE_HASHED_BYTES = 256 * MIB
MAX_WORKSPACE_LISTING_BYTES = 8 * MIB
MAX_WORKSPACE_CHANGED_PATHS = 1024
MAX_WORKSPACE_DIFF_BYTES = 4 * MIB

# Host results
MAX_FINAL_MESSAGE_BYTES = 8 * MIB
MAX_OBSERVATIONS = 128
MAX_OBSERVATION_BYTES = 8 * MIB
MAX_ARTIFACTS = 32
MAX_ARTIFACT_BYTES = 8 * MIB
MAX_TOTAL_ARTIFACT_BYTES = 32 * MIB
MAX_DIAGNOSTIC_CHARS = 4096

# Check outcomes
MAX_OBSERVATIONS_PER_CHECK = 4
MAX_CHECK_OBSERVATION_BYTES = 64 * KIB
MAX_CHECK_PARTS = 256
"""Assertions one check outcome may carry as parts (more is a grading error)."""
MAX_CHECK_PART_ID_CHARS = 128
MAX_CHECK_PART_DETAIL_CHARS = 512
"""Of a part's detail kept in evidence (the rest is cut)."""
MAX_CHECKED_FILE_BYTES = 8 * MIB
"""A workspace file ``sevro.file-text`` or ``sevro.json-file`` reads (beyond: ``unavailable``)."""
MAX_PATH_GLOB_ENTRIES = 65_536
"""Workspace entries a ``sevro.path`` glob walks before it stops (then, unmatched: unavailable)."""
REGEX_CHECK_TIMEOUT_SECONDS = 5.0

# Semantic checks (sevro.semantic): what a check declares, what the judge reads and answers
MAX_SEMANTIC_PROPOSITION_BYTES = 8 * KIB
"""One ``sevro.semantic`` proposition, UTF-8 (beyond: refused before the run)."""
MAX_SEMANTIC_ARTIFACT_BYTES = 64 * KIB
"""The workspace file an ``artifactPath`` check puts before the judge (beyond: ``unavailable``)."""
MAX_SEMANTIC_GLOB_ENTRIES = 65_536
"""Entries of the directory an ``artifactPath`` with ``*`` lists (beyond: ``unavailable``)."""
MAX_SEMANTIC_REPLY_BYTES = 1 * MIB
"""The semantic judge's reply, UTF-8 (beyond: a grading error, never a verdict)."""
MAX_SEMANTIC_REASON_CHARS = 4096
"""One verdict's reason in the judge's reply (beyond: a grading error)."""

# Sandbox
MAX_PROTECTED_ROOTS = 64
SANDBOX_PROBE_TIMEOUT_SECONDS = 10.0
MAX_SANDBOX_DIAGNOSTIC_BYTES = 4096
MAX_HOST_SOCKET_LISTING_BYTES = 16 * MIB
"""``/proc/net/unix`` beyond this refuses the sandbox: its sockets could not all be hidden."""

# Run settings (sevro.run-settings.v1)
MAX_RUN_SETTINGS_BYTES = 64 * KIB
"""A ``--run-settings-file`` (beyond: refused before the run)."""

# Runtime configuration (sevro.runtime.v1)
MAX_RUNTIME_CONFIG_BYTES = 64 * KIB
"""A ``sevro.json`` or ``--runtime-config-file`` (beyond: refused before the run)."""
MAX_RUNTIME_VARIABLES = 64
"""Names in ``environment.inherit``, and entries in ``environment.set``, each."""
MAX_RUNTIME_VALUE_CHARS = 8192
"""One ``environment.set`` value, and one inherited value."""
MAX_RUNTIME_READ_ROOTS = 64
"""Paths in ``filesystem.readOnlyRoots``, and in ``optionalReadOnlyRoots``, each."""
MAX_RUNTIME_PATH_TOOLS = 4096
"""Entries of one ``PATH`` directory looked at for symlinked tools (beyond: refused)."""
MAX_RUNTIME_SEED_DIRECTORIES = 16
"""Entries in ``runtime.seedDirectories``, and in ``runtime.sharedCacheDirectories``, each."""
MAX_SEED_ENTRIES = 16_384
"""Files, directories and links in one seed directory's tree (beyond: refused)."""
MAX_SEED_BYTES = 512 * MIB
"""Bytes of the regular files in one seed directory's tree (beyond: refused)."""
MAX_RUNTIME_SLOT_CHARS = 64
"""One seed or shared-cache ``target`` (a slot name in the role's runtime root)."""
MAX_RUNTIME_HOOK_PLUGINS = 64
"""Names in ``hooks.plugins`` (beyond: refused before the run)."""
MAX_ARTIFACT_DIRECTORIES = 16
"""Entries of ``runtime.artifactDirectories`` (beyond: refused before the run)."""
MAX_ARTIFACT_DIRECTORY_ENTRIES = 16_384
"""Entries of one candidate artifact directory, its root included (beyond: a grading error)."""

# Scripted host
MAX_HOST_CONFIG_BYTES = 8 * MIB
MAX_SCRIPTED_STEPS_PER_TURN = 256
MAX_SCRIPTED_COMMAND_OUTPUT_BYTES = 1 * MIB
DEFAULT_SCRIPTED_COMMAND_TIMEOUT_MS = 30_000
MAX_SCRIPTED_COMMAND_TIMEOUT_MS = 600_000
MAX_SCRIPTED_SLEEP_MS = 600_000
MAX_SCRIPTED_READ_BYTES = 1 * MIB

# Agent CLI hosts (shared by every agent-CLI host; host-specific limits live in the host's own
# distribution, in its own ``limits`` module)
MAX_HOST_EVENT_LINE_BYTES = 1 * MIB
MAX_HOST_EVENT_STREAM_BYTES = 8 * MIB
MAX_HOST_STDERR_BYTES = 64 * KIB
MAX_NATIVE_TRANSCRIPT_ENTRIES = 4096
MAX_NATIVE_TRANSCRIPT_TREE_BYTES = 5 * MIB
MAX_NATIVE_TRANSCRIPT_BUNDLE_BYTES = 7 * MIB
MAX_HOST_STDERR_TAIL_LINES = 8
MAX_HOST_STDERR_TAIL_CHARS = 1200
MAX_HOST_CREDENTIAL_FILE_BYTES = 1 * MIB
DEFAULT_HOST_TURN_TIMEOUT_SECONDS = 1800
MAX_HOST_TURN_TIMEOUT_SECONDS = 86_400
DEFAULT_HOST_STALL_SECONDS = 300
MAX_SKILL_FILE_BYTES = 1 * MIB
MAX_MOUNTED_SKILLS = 256
MAX_HOOK_RECORDS = 4096
MAX_HOOK_RECORD_BYTES = 4 * MIB
MAX_SKILL_ACTIVATIONS = 256
MAX_ACTIVATION_MATCH_STEPS = 8_000_000
MAX_READ_CHECK_BYTES = 1 * MIB
MAX_FILE_READS = 4096
MAX_READ_COMMAND_CHARS = 1 * MIB
MAX_TOOL_CALL_TEXT_CHARS = 2048
MAX_TOOL_CALL_TEXT_TOTAL_CHARS = 512 * KIB
MAX_CHANGE_SCAN_FILES = 10_000
MAX_CHANGE_SCAN_BYTES = 256 * MIB
MAX_TURN_SNAPSHOT_ENTRIES = 10_000
MAX_TURN_SNAPSHOT_BYTES = 64 * MIB
MAX_TURN_REPLY_KEPT_CHARS = 4096

# Engine
DEFAULT_JOBS = 3
MAX_JOBS = 64
MAX_TRIALS = 10_000
KILL_GRACE_SECONDS = 2.0
RUN_STATE_BUSY_TIMEOUT_MS = 5000

# Spend journal (store/spendjournal.py)
MAX_SPEND_JOURNAL_BYTES = 64 * MIB
"""One run's spend journal, read whole on every open (10,000 calls x 3 records of ~1 KiB fit
twice over); an append that would pass it fails the run (exit 70) instead of writing a journal
no later open could read."""
MAX_SPEND_LABEL_CHARS = 200
"""A spend journal record's call id and label (a longer label is cut)."""

# Reports and results
MAX_RESULT_FILE_BYTES = 64 * MIB
MAX_PLUGIN_FILE_BYTES = 1 * MIB

# Screen output: failure reasons, progress, results roots
MAX_FAILURE_REASON_CHARS = 240
MAX_SUMMARY_FAILED_CASES = 20
MAX_SUMMARY_REASONS_PER_CASE = 3
MAX_SUMMARY_TRIAL_FILES = 2000
MAX_REPORT_REASONS_PER_CASE = 32
MAX_RESULTS_ROOT_RUNS = 1024
DEFAULT_STATUS_INTERVAL_SECONDS = 10.0
LIVE_REFRESH_PER_SECOND = 4
MAX_LIVE_LABEL_CHARS = 40
MAX_SKILLEVAL_SUITE_GROUPS = 256
MAX_SKILLEVAL_TURNS = 64
MAX_SKILLEVAL_EXPECTATIONS = 128
MAX_SKILLEVAL_EXTENSIONS = 16
"""Extension bundles one skill-eval ``runtime`` declares."""
MAX_SKILLEVAL_BUNDLE_RESOURCES = 64
"""Directory resources of one extension bundle."""
MAX_SKILLEVAL_EXTENSION_FILES = 1024
"""Files of one extension bundle (its resources and entry), snapshotted into memory at load."""
MAX_SKILLEVAL_EXTENSION_BYTES = 16 * MIB
"""Bytes of one extension bundle's files, held in memory for the whole run."""
MAX_SKILLEVAL_SNAPSHOT_BYTES = 64 * MIB
"""Bytes of every extension bundle one definition (a suite's groups together) snapshots."""
MAX_SKILLEVAL_ENVIRONMENT = 64
"""Variables of one runtime's ``environment`` (literal and inherited together)."""
MAX_SKILLEVAL_LITERAL_CHARS = 4096
"""Characters of one ``environment.literal`` value (recorded in evidence and identity)."""
MAX_CONTEXT_TEXT_VALUE_CHARS = 65536
"""Characters of one ``context-text`` expectation's ``value``."""

# Judges (docs/judges.md)
MAX_JUDGE_PROMPT_BYTES = 4 * MIB
MAX_JUDGE_REPLY_BYTES = 1 * MIB
MAX_JUDGE_CALLS_PER_TRIAL = 64
# what the blinded pairwise comparator is shown of a pair (judges/subjects.py)
MAX_JUDGED_RESULT_BYTES = 1 * MIB
MAX_JUDGED_BASE_FILES_BYTES = 2 * MIB
MAX_JUDGED_BASE_FILE_ENTRIES = 10_000

# Judge calibration
MAX_JUDGE_CORPUS_BYTES = 8 * MIB
MAX_CALIBRATION_RECORD_BYTES = 16 * MIB
MAX_CALIBRATION_ERROR_CHARS = 500

MAX_ADVISORY_DIFF_BYTES = 1 * MIB
MAX_ADVISORY_SCAN_ENTRIES = 10_000
MAX_ADVISORY_CITABLE_FILES = 2000
MAX_ADVISORY_FILE_BYTES = 1 * MIB
MAX_SUMMARY_ADVISORY_LINES = 40

# Evaluator-only resources (docs/evaluator-resources.md)
MAX_EVALUATOR_DIRECTORIES = 8
MAX_EVALUATOR_ENTRIES = 4096
MAX_EVALUATOR_BYTES = 64 * MIB
MAX_CHECK_INPUT_BYTES = 8 * MIB
MAX_CHECK_TRANSCRIPT_BYTES = 64 * MIB
"""Bytes of the candidate's transcripts copied for checks, all files together (beyond: a file
is listed as ``omitted`` in ``index.json`` and not copied)."""

# Outputs CI systems read (docs/ci.md)
MAX_JUNIT_DETAIL_CHARS = 64 * KIB
"""Characters of one JUnit testcase's failure, error or skipped text (then a line says how many
trials were left out)."""
MAX_GITHUB_SUMMARY_BYTES = 1 * MIB
"""GitHub's cap on one step's summary file: what ``--github-summary`` appends stays within it,
counting what the step already wrote."""

# The static HTML viewer (docs/viewer.md)
MAX_VIEWER_TEXT_CHARS = 64 * KIB
"""Characters of one final message, command or tool call shown (beyond: cut, marked)."""
MAX_VIEWER_DIFF_BYTES = 1 * MIB
"""Bytes of one trial's diff artifact rendered (beyond: cut, marked)."""
MAX_VIEWER_TRIALS = 20_000
"""Trials in one viewer page, all runs together (beyond: refused, exit 64)."""
VIEWER_INTERVALS_SECONDS = 60
"""How long the viewer waits for its interval helper process (beyond: killed, and the parent
computes the intervals itself)."""

# Plots of a run (docs/plots.md)
MAX_PLOT_BARS = 60
"""Pass-rate bars one figure draws (case and arm pairs; the rest are counted in its caption)."""
MAX_PLOT_POINTS = 200
"""Points one arm's strip plot draws (evenly picked; range and median stay over all values)."""
MAX_PLOT_LABEL_CHARS = 60
"""Characters of one case id or arm name written in a figure (then ``…``)."""

# Holdout plans (docs/holdouts.md)
MIN_HOLDOUT_DISTINCT_TASKS = 8
"""Distinct task fingerprints a holdout plan must hold (fewer: ``sevro holdout seal`` refuses,
exit 64); near-duplicate cases collapse into one task and do not count twice."""
MAX_HOLDOUT_PLAN_BYTES = 4 * MIB
"""One sealed holdout plan file (beyond: refused when sealed and when read, exit 64)."""

# Prices
MAX_PRICES_FILE_BYTES = 1 * MIB
"""A ``--prices`` file (beyond: refused before the run)."""

MAX_SPEND_CEILING_USD = 1_000_000.0
"""The largest USD amount ``--max-cost-usd`` or ``--max-call-cost-usd`` may give: a typo of a
few extra digits is refused rather than obeyed."""
