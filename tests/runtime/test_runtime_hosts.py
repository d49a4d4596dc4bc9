"""The runtime policy as agent-CLI hosts get it: one value for every role, each role's own
temp directory, and the engine's ``sevro.host.runtime`` observation (scripted host here; the
Codex and Claude Code real-CLI tests are in ``tests/hosts_*/test_runtime_real_cli.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

from sevro_core.api import HOST_RUNTIME_OBSERVATION, HostOptions, HostRuntime
from sevro_core.judges.routes import JudgeRouteSpec, configure_judges
from sevro_core.plugin.manager import Registry
from sevro_core.testing import SevroProject
from tests.e2e.helpers import assert_valid_evidence, trial_evidence
from tests.judges.helpers import verdicts
from tests.runtime.test_runtime_loading import doc, load


def test_every_role_asks_the_same_value_for_its_own_root(tmp_path: Path) -> None:
    area = tmp_path.resolve()
    for directory in ("project", "home", "tools/bin", "cfg", "trial"):
        (area / directory).mkdir(parents=True)
    policy = load(
        area,
        doc(
            environment={
                "inherit": ["KEPT"],
                "set": {"MODE": "{{sevro.runtime}}/m", "PATH": f"{area}/tools/bin"},
            }
        ),
        KEPT="inherited-3f9b",
    )
    runtime = policy.host_runtime()
    assert runtime.path == f"{area}/tools/bin"
    assert runtime.read_roots == policy.read_roots == (area / "tools",)
    one = runtime.role_runtime("candidate", area / "trial" / "candidate")
    two = runtime.role_runtime("semantic", area / "trial" / "semantic")
    assert one == policy.role_runtime("candidate", area / "trial" / "candidate")  # idempotent
    assert dict(one.environment) == {
        "KEPT": "inherited-3f9b",
        "MODE": f"{area}/trial/candidate/m",
        "UV_OFFLINE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "TMPPREFIX": f"{area}/trial/candidate/tmp/zsh",
    }
    assert two.environment["MODE"] == f"{area}/trial/semantic/m" and "PATH" not in two.environment
    assert one.writable_roots == (area / "trial" / "candidate",) and one.home.is_dir()
    # The record names what was declared and keeps an inherited value only in the digest.
    assert runtime.record == policy.configuration()
    assert "inherited-3f9b" not in json.dumps(dict(runtime.record))
    assert "{{sevro.runtime}}/m" in json.dumps(dict(runtime.record))  # symbolic, no temp path


class _Recording:
    """A host that keeps the options each role was configured with."""

    id = "acme.host.recording"
    credential_locations = None

    def __init__(self) -> None:
        self.seen: dict[str, HostOptions] = {}

    def configure(self, options: HostOptions) -> object:
        self.seen[options.role] = options
        return object()


class _Registry:
    def __init__(self, host: _Recording) -> None:
        self._hosts = {host.id: host}

    def host(self, host_id: str) -> Any:
        return self._hosts.get(host_id)

    def hosts(self) -> dict[str, Any]:
        return self._hosts


def test_judges_get_the_candidate_s_runtime_value() -> None:
    runtime = HostRuntime("/opt/x/bin", (Path("/opt/x"),), {}, prepare=lambda role, root: None)
    host = _Recording()
    specs = [JudgeRouteSpec(role, host.id) for role in ("semantic", "comparator")]
    base = HostOptions(runtime=runtime)
    configure_judges(cast(Registry, _Registry(host)), specs, (host.id, base))
    assert {role: o.runtime for role, o in host.seen.items()} == {
        "semantic": runtime,
        "comparator": runtime,
    }
    host.seen.clear()
    configure_judges(cast(Registry, _Registry(host)), specs, (host.id, HostOptions()))
    assert [o.runtime for o in host.seen.values()] == [None, None]


def _observations(document: dict[str, Any]) -> dict[str, Any]:
    return {o["id"]: o for o in trial_evidence(document)["observations"]}


def test_the_engine_reports_the_runtime_for_every_host_and_only_with_a_file(
    sevro_project: SevroProject, tmp_path: Path
) -> None:
    check = {"id": "ok", "grader": "sevro.semantic", "configuration": {"proposition": "Fine."}}
    case = sevro_project.case(checks=[check])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    judge = sevro_project.write_json(
        "judge.json", {"judges": {"semantic": [{"reply": verdicts(("ok", "pass", "Fine."))}]}}
    )
    args = [case, "--host-config", host, "--semantic-host", "scripted"]
    args += ["--semantic-host-config", judge]
    without = sevro_project.run(*args)
    assert without.exit_code == 0, (without.stdout, without.stderr)
    assert HOST_RUNTIME_OBSERVATION not in _observations(without.json())

    config = tmp_path / "runtime.json"
    config.write_text(json.dumps(doc(environment={"set": {"MODE": "ci"}})))
    done = sevro_project.run(*args, "--runtime-config-file", config)
    assert done.exit_code == 0, (done.stdout, done.stderr)
    observation = _observations(done.json())[HOST_RUNTIME_OBSERVATION]
    assert observation["source"] == "sevro.engine"
    data = observation["data"]
    assert data["roles"] == ["candidate", "semantic"]
    assert data["environment"]["names"] == ["MODE"] and data["environment"]["path"] is None
    assert data["readRoots"] == []
    policy = assert_valid_evidence(done.json())["configuration"]["redacted"]["runtimePolicy"]
    assert data["digest"] == policy["digest"]
    dry = sevro_project.run(*args, "--runtime-config-file", config, "--dry")
    assert dry.exit_code == 0, (dry.stdout, dry.stderr)
    assert HOST_RUNTIME_OBSERVATION not in _observations(dry.json())  # no host ran
