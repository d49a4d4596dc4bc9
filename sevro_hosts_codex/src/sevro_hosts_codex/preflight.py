"""The sandbox preflight before every fresh Codex request: one ``codex sandbox`` probe.

``sevro doctor`` says whether the sandbox holds on a machine; a trial must not trust that the
machine is still the one the doctor saw. So each fresh request (a trial's first turn, a judge's
call) first runs the trial's own permission profile through ``codex sandbox`` once, bounded in
time, and a probe that fails or does not finish makes the trial's execution an error with the
reason shown. The combined probe needs: the private ``TMPDIR`` writable, the workspace writable
for a candidate and read-only for a judge, ``CODEX_HOME`` (credentials, configuration) and a
protected root unreadable, and the native executable answering ``--version``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from sevro_core.api import CancelToken, HostFailure, inside, run_bounded
from sevro_hosts_codex.configuration import PROFILE
from sevro_hosts_codex.limits import MAX_CODEX_PREFLIGHT_OUTPUT_BYTES

_PROBE = (
    't="$1/.sevro-preflight"; : > "$t" && rm -f "$t" || exit 21; '
    'if [ "$2" = write ]; then [ -w . ] || exit 22; else [ -w . ] && exit 22; fi; '
    'if [ "$6" = state ]; then cat "$3/config.toml" >/dev/null 2>&1 || exit 26; '
    '[ -w "$3/config.toml" ] && exit 27; '
    'else cat "$3/config.toml" >/dev/null 2>&1 && exit 23; fi; '
    'cat "$3/auth.json" >/dev/null 2>&1 && exit 23; '
    'if [ -n "$4" ]; then ls "$4" >/dev/null 2>&1 && exit 24; fi; '
    '"$5" --version >/dev/null 2>&1 || exit 25; '
    "exit 0"
)
PROBLEMS = {
    21: "a command could not write its private temp directory",
    22: "the workspace's write access is not what the role needs",
    23: "a command could read CODEX_HOME (credentials or configuration)",
    24: "a command could list a protected root",
    25: "the Codex executable did not answer --version inside the sandbox",
    26: "a command could not read CODEX_HOME/config.toml although codexState selects it",
    27: "a command could write CODEX_HOME/config.toml (codexState grants it read-only)",
}
_KEPT = ("PATH", "HOME", "CODEX_HOME", "TMPDIR", "LANG")


def probe_root(protected: Sequence[Path], needed: Sequence[Path]) -> Path | None:
    """A protected directory the probe must fail to list: the first that exists and holds
    nothing the trial needs (None when there is none)."""
    for root in protected:
        if root.is_dir() and not any(inside(path, root) for path in needed):
            return root
    return None


def preflight_argv(
    native: Path,
    workspace: Path,
    private: tuple[Path, Path],
    judge: bool,
    root: Path | None,
    *,
    state: bool = False,
) -> list[str]:
    """``codex sandbox`` with the trial's profile running the combined probe; ``private`` is
    the trial's (``TMPDIR``, ``CODEX_HOME``). With the Codex state opt-in (``state``) the
    configuration must be readable and not writable; credentials stay unreadable either way."""
    tmp, codex_home = private
    mode = "read" if judge else "write"
    head = [str(native), "sandbox", "-P", PROFILE, "-C", str(workspace), "--"]
    args = [str(tmp), mode, str(codex_home), str(root or ""), str(native)]
    args.append("state" if state else "")
    return [*head, "/bin/bash", "-c", _PROBE, "sevro-preflight", *args]


def run_preflight(
    argv: Sequence[str],
    *,
    workspace: Path,
    env: Mapping[str, str],
    timeout_s: float,
    cancel: CancelToken,
) -> None:
    """Run the probe; ``HostFailure`` with the reason when it does not hold or finish."""
    outcome = run_bounded(
        argv,
        cwd=workspace,
        env={k: v for k, v in env.items() if k in _KEPT},
        timeout_s=timeout_s,
        cancel=cancel,
        output_limit=MAX_CODEX_PREFLIGHT_OUTPUT_BYTES,
    )
    if outcome.cancelled:
        raise HostFailure("run cancelled", cancelled=True)
    if outcome.timed_out:
        raise HostFailure(
            f"codex sandbox preflight did not finish within {timeout_s:g} s "
            "(preflightTimeoutSeconds; process group killed); see docs/hosts/codex.md"
        )
    if outcome.exit_code == 0:
        return
    code = outcome.exit_code
    detail = PROBLEMS.get(code) if code is not None else None
    if detail is None:
        text = " ".join(outcome.output.decode("utf-8", "replace").split())[-300:]
        detail = f"exit {code}: {text or '(no output)'}"
    raise HostFailure(
        f"codex sandbox preflight failed: {detail}; run `sevro doctor --host codex` "
        "(see docs/hosts/codex.md)"
    )
