"""Measure what sevro's configuration of each agent CLI costs, against the raw CLI.

Every sample answers one trivial prompt from the test kit's mock model (a single ``ready``
message), so the CLI's own start-up and set-up dominate. Per host, these variants run side by
side, interleaved round by round (the machine is shared and noisy; every variant sees the same
noise), each in fresh private directories:

* ``raw``: the native CLI with only the mock provider configured (``codex exec --json`` /
  ``claude -p --output-format stream-json --verbose``), a fresh ``HOME`` and nothing else;
* ``host trial``: sevro's whole host trial (``ConfiguredHost.run``: private directories, the
  generated configuration, the CLI, strict stream parsing, observations), without the engine
  (workspace, fixture, grading, evidence: a few ms, see ``benchmarks/overhead.py``);
* ``sevro config``: the same argv, environment and files as a trial, run bare;
* ``-<setting>``: that configuration with one setting reverted, to find which settings cost time.

Medians and ratios to ``raw`` are printed, with the processes each variant left running after its
samples (killed at once); ``--json`` writes them as a document too.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

API_KEY_ENV = "SEVRO_BENCH_KEY"
API_KEY = "sk-sevro-bench-0123456789abcdef"
PROMPT = "Reply ready."


@dataclass
class Prepared:
    """One sample ready to run: argv, environment, working directory, files it may rewrite."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    files: dict[str, Path] = field(default_factory=dict)


Variant = Callable[[Prepared], None]
"""Changes a prepared sevro configuration in place (one setting reverted)."""


def _clis() -> tuple[str, str]:
    from sevro_hosts_claude.testing import require_claude
    from sevro_hosts_codex.testing import require_codex

    return require_codex(), require_claude()


def _request(root: Path) -> Any:
    from sevro_core.models import CancelToken, HostRequest

    workspace, private = root / "workspace", root / "private"
    workspace.mkdir(mode=0o700)
    private.mkdir(mode=0o700)
    return HostRequest(
        case_id="bench",
        trial=1,
        prompts=(PROMPT,),
        workspace=workspace,
        condition="passive",
        cancel=CancelToken(),
        private_root=private,
    )


def _run(prepared: Prepared) -> float:
    from sevro_core.isolation.processes import run_bounded
    from sevro_core.limits import MAX_HOST_EVENT_STREAM_BYTES
    from sevro_core.models import CancelToken

    started = time.perf_counter()
    outcome = run_bounded(
        prepared.argv,
        cwd=prepared.cwd,
        env=prepared.env,
        timeout_s=120,
        cancel=CancelToken(),
        output_limit=MAX_HOST_EVENT_STREAM_BYTES,
        stdin=PROMPT.encode(),
        stderr="capture",
        stderr_limit=65536,
    )
    elapsed = time.perf_counter() - started
    if outcome.exit_code != 0 or b"ready" not in outcome.output:
        tail = outcome.stderr.decode("utf-8", "replace")[-400:]
        raise RuntimeError(f"{prepared.argv[:3]} failed ({outcome.exit_code}): {tail}")
    return elapsed


def _configured(host: Any, config: dict[str, Any], settings: dict[str, str], root: Path) -> Any:
    """The host configured as `sevro run` would, against the mock model, with sevro's own
    project and results roots protected (as a real run protects them)."""
    from sevro_core.plugin.protocols import HostOptions

    protected = (root / "project", root / "results")
    for path in protected:
        path.mkdir(exist_ok=True)
    options = HostOptions(
        config=config, model="mock-model", settings=settings, protected_roots=protected
    )
    return host.configure(options)


# -- Codex ---------------------------------------------------------------------------------


def _codex_host(codex: str, server: Any, root: Path) -> Any:
    from sevro_hosts_codex.host import CodexHost

    config = {
        "format": "sevro.codex-host.v1",
        "modelProvider": {
            "id": "mock",
            "baseUrl": server.base_url,
            "envKey": "MOCK_KEY",
            "requestMaxRetries": 0,
            "streamMaxRetries": 0,
        },
    }
    return _configured(
        CodexHost(), config, {"codex.bin": codex, "codex.apiKeyEnv": API_KEY_ENV}, root
    )


def codex_raw(host: Any, server: Any, root: Path) -> Prepared:
    home = root / "home"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "config.toml").write_text(
        'model = "mock-model"\nmodel_provider = "mock"\n\n[model_providers.mock]\n'
        f'name = "mock"\nbase_url = "{server.base_url}"\nwire_api = "responses"\n'
        'env_key = "MOCK_KEY"\nrequest_max_retries = 0\nstream_max_retries = 0\n'
    )
    workspace = root / "workspace"
    workspace.mkdir()
    native = str(host.binary.native)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "MOCK_KEY": API_KEY}
    argv = [native, "exec", "--json", "--skip-git-repo-check", "-C", str(workspace), "-"]
    return Prepared(argv, env, workspace)


def codex_sevro(host: Any, server: Any, root: Path) -> Prepared:
    trial = host.trial(_request(root))
    trial.prepare()
    config = trial.layout.codex_home / "config.toml"
    return Prepared(trial.command(1), dict(trial.env), trial.request.workspace, {"c": config})


def _toml_without(prepared: Prepared, predicate: Callable[[str, str], bool]) -> None:
    """Drop lines (given the current [section]) for which ``predicate`` is true."""
    path = prepared.files["c"]
    kept, section = [], ""
    for line in path.read_text().splitlines():
        if line.startswith("["):
            section = line
        if not predicate(section, line):
            kept.append(line)
    path.write_text("\n".join(kept) + "\n")


def _drop_args(*names: str) -> Variant:
    def apply(prepared: Prepared) -> None:
        prepared.argv[:] = [a for a in prepared.argv if a not in names]

    return apply


def _codex_no_pid_namespace(prepared: Prepared) -> None:
    if "--" in prepared.argv:
        del prepared.argv[: prepared.argv.index("--") + 1]


def _codex_no_profile(prepared: Prepared) -> None:
    _toml_without(
        prepared,
        lambda section, line: (
            line.startswith("default_permissions") or section.startswith("[permissions.")
        ),
    )


def _codex_no_env_policy(prepared: Prepared) -> None:
    _toml_without(prepared, lambda section, _: section.startswith("[shell_environment_policy"))


def _codex_no_helper_alias(prepared: Prepared) -> None:
    bin_dir = prepared.env["PATH"].split(":")[0]
    prepared.env["PATH"] = prepared.env["PATH"].replace(f"{bin_dir}:", "", 1)


CODEX_VARIANTS: dict[str, Variant] = {
    "-pid-namespace": _codex_no_pid_namespace,
    "-permission-profile": _codex_no_profile,
    "-shell-env-policy": _codex_no_env_policy,
    "-strict-config": _drop_args("--strict-config"),
    "-ignore-rules": _drop_args("--ignore-rules"),
    "-helper-alias": _codex_no_helper_alias,
}


# -- Claude --------------------------------------------------------------------------------


def _claude_host(claude: str, server: Any, root: Path) -> Any:
    from sevro_hosts_claude.host import ClaudeHost

    config = {"format": "sevro.claude-host.v1", "baseUrl": server.origin, "maxRetries": 0}
    return _configured(
        ClaudeHost(), config, {"claude.bin": claude, "claude.apiKeyEnv": API_KEY_ENV}, root
    )


def claude_raw(host: Any, server: Any, root: Path) -> Prepared:
    home = root / "home"
    home.mkdir()
    workspace = root / "workspace"
    workspace.mkdir()
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": server.origin,
        "ANTHROPIC_API_KEY": API_KEY,
    }
    argv = [str(host.binary.native), "-p", "--output-format", "stream-json", "--verbose"]
    return Prepared([*argv, "--model", "mock-model"], env, workspace)


def claude_sevro(host: Any, server: Any, root: Path) -> Prepared:
    trial = host.trial(_request(root))
    trial.prepare()
    trial.session = "0b0e0c5e-0000-4000-8000-000000000001"
    argv = trial.command(1)
    files = {"s": trial.layout.settings_file}
    return Prepared(argv, dict(trial.env), trial.request.workspace, files)


def _settings(prepared: Prepared, change: Callable[[dict[str, Any]], None]) -> None:
    path = prepared.files["s"]
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))


def _claude_no_outer(prepared: Prepared) -> None:
    del prepared.argv[: prepared.argv.index("--") + 1]


def _claude_no_inner(prepared: Prepared) -> None:
    _settings(prepared, lambda d: d.update(sandbox={"enabled": False}))


def _claude_env_key(prepared: Prepared) -> None:
    _settings(prepared, lambda d: d.pop("apiKeyHelper"))
    prepared.env["ANTHROPIC_API_KEY"] = API_KEY


def _claude_no_quiet_env(prepared: Prepared) -> None:
    from sevro_hosts_claude.host import _QUIET_ENV

    for name in _QUIET_ENV:
        prepared.env.pop(name, None)


def _claude_drop_pair(flag: str) -> Variant:
    def apply(prepared: Prepared) -> None:
        index = prepared.argv.index(flag)
        del prepared.argv[index : index + 2]

    return apply


def _claude_no_mcp(prepared: Prepared) -> None:
    _claude_drop_pair("--mcp-config")(prepared)
    prepared.argv.remove("--strict-mcp-config")


def _claude_no_tools(prepared: Prepared) -> None:
    _claude_drop_pair("--tools")(prepared)
    _claude_drop_pair("--allowedTools")(prepared)


CLAUDE_VARIANTS: dict[str, Variant] = {
    "-outer-bwrap": _claude_no_outer,
    "-inner-sandbox": _claude_no_inner,
    "-api-key-helper": _claude_env_key,
    "-quiet-env": _claude_no_quiet_env,
    "-tool-allow-list": _claude_no_tools,
    "-mcp-config": _claude_no_mcp,
    "-setting-sources": _claude_drop_pair("--setting-sources"),
    "-permission-mode": _claude_drop_pair("--permission-mode"),
    "-session-id": _claude_drop_pair("--session-id"),
}


# -- driver --------------------------------------------------------------------------------


LEAKED: dict[str, int] = {}
"""Processes still running after a sample, by variant (killed; the ``-pid-namespace`` variant
shows what the namespace prevents)."""


def _reap_leftovers(root: Path) -> int:
    """SIGKILL every process whose command line mentions ``root``; return how many there were."""
    needle = str(root).encode()
    found = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "cmdline").read_bytes():
                os.kill(int(entry.name), signal.SIGKILL)
                found += 1
        except (OSError, ProcessLookupError):
            continue
    return found


@contextmanager
def _scratch(variant: str | None = None) -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="sevro-cli-cost-")).resolve()
    try:
        yield root
    finally:
        if variant is not None and sys.platform == "linux":
            time.sleep(0.2)
            LEAKED[variant] = LEAKED.get(variant, 0) + _reap_leftovers(root)
        shutil.rmtree(root, ignore_errors=True)


def _host_trial(host: Any, root: Path) -> float:
    request = _request(root)
    started = time.perf_counter()
    result = host.run(request)
    elapsed = time.perf_counter() - started
    if not result.complete or result.final_message != "ready":
        raise RuntimeError(f"host trial failed: {result.error}")
    return elapsed


def measure(
    name: str,
    make_host: Callable[[str, Any, Path], Any],
    raw: Callable[[Any, Any, Path], Prepared],
    sevro: Callable[[Any, Any, Path], Prepared],
    variants: dict[str, Variant],
    cli: str,
    protocols: tuple[Any, ...],
    rounds: int,
    only: set[str] | None,
) -> dict[str, list[float]]:
    from sevro_core.testing.mockmodel import Message, MockModelServer, reply

    samples: dict[str, list[float]] = {"raw": [], "host trial": [], "sevro config": []}
    chosen = {k: v for k, v in variants.items() if only is None or k in only}
    samples.update({key: [] for key in chosen})
    replies = [reply(Message("ready"))] * (rounds * (len(samples) + 1) * 4)
    with _scratch() as base, MockModelServer(replies, protocols=protocols) as server:
        os.environ[API_KEY_ENV] = API_KEY
        host = make_host(cli, server, base)
        for number in range(rounds + 1):  # round 0 warms caches and is discarded
            for key, values in samples.items():
                with _scratch(key) as root:
                    if key == "raw":
                        elapsed = _run(raw(host, server, root))
                    elif key == "host trial":
                        elapsed = _host_trial(host, root)
                    else:
                        prepared = sevro(host, server, root)
                        if key in chosen:
                            chosen[key](prepared)
                        elapsed = _run(prepared)
                if number:
                    values.append(elapsed)
            print(f"{name}: round {number}/{rounds} done", file=sys.stderr, flush=True)
    return samples


def _report(name: str, samples: dict[str, list[float]]) -> dict[str, Any]:
    raw = statistics.median(samples["raw"])
    sevro = statistics.median(samples["sevro config"])
    rows = {}
    print(f"\n{name}: median of {len(samples['raw'])} interleaved rounds")
    print(f"  {'variant':22} {'median s':>9} {'/ raw':>7} {'vs sevro config':>16} {'leaked':>7}")
    for key, values in samples.items():
        value = statistics.median(values)
        leaked = LEAKED.get(key, 0)
        rows[key] = {
            "medianSeconds": round(value, 4),
            "ratioToRaw": round(value / raw, 3),
            "leakedProcesses": leaked,
        }
        delta = "" if key in ("raw", "host trial", "sevro config") else f"{value - sevro:+.3f} s"
        print(f"  {key:22} {value:9.3f} {value / raw:7.2f} {delta:>16} {leaked:7d}")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--host", choices=["codex", "claude", "both"], default="both")
    parser.add_argument("--only", action="append", help="measure only these variants")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    from sevro_core.testing.mockmodel import AnthropicMessages, OpenAIResponses

    codex, claude = _clis()
    only = set(args.only) if args.only else None
    document: dict[str, Any] = {"rounds": args.rounds}
    if args.host in ("codex", "both"):
        samples = measure(
            "codex",
            _codex_host,
            codex_raw,
            codex_sevro,
            CODEX_VARIANTS,
            codex,
            (OpenAIResponses(),),
            args.rounds,
            only,
        )
        document["codex"] = _report("codex", samples)
    if args.host in ("claude", "both"):
        samples = measure(
            "claude",
            _claude_host,
            claude_raw,
            claude_sevro,
            CLAUDE_VARIANTS,
            claude,
            (AnthropicMessages(),),
            args.rounds,
            only,
        )
        document["claude"] = _report("claude", samples)
    if args.json is not None:
        args.json.write_text(json.dumps(document, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
