"""The fixture seam is general: a third-party fixture's probe, baseline and report, via --plugin."""

from __future__ import annotations

import textwrap
from pathlib import Path

from sevro_core.testing import SevroProject
from tests.e2e.helpers import assert_valid_evidence, trial_evidence

LISTING_FIXTURE = textwrap.dedent("""
    from sevro_core.api import (
        Artifact,
        CheckOutcome,
        CheckStatus,
        Completeness,
        FixtureReport,
        MaterialisedFixture,
        Observation,
        hookimpl,
    )


    class Probe:
        def __init__(self, workspace, clash):
            self.workspace, self.clash = workspace, clash

        def baseline(self, cancel):
            return {"files": sorted(p.name for p in self.workspace.iterdir())}

        def observe(self, baseline, cancel):
            now = sorted(p.name for p in self.workspace.iterdir())
            data = {"before": list(baseline["files"]), "after": now}
            name = "sevro.commands" if self.clash else "acme.listing"
            return FixtureReport(
                observations=(Observation(name, "acme.fixture", Completeness.COMPLETE, data),),
                artifacts=(Artifact("acme.listing", "\\n".join(now).encode()),),
            )


    class Compiled:
        capabilities = frozenset({"acme.listing", "acme.fixture.listing"})

        def __init__(self, declaration):
            self.declaration = declaration

        def identity(self):
            return dict(self.declaration)

        def materialise(self, workspace):
            (workspace / "seed.txt").write_text("seed")
            (workspace / "tools").mkdir()
            return MaterialisedFixture(
                bin_dir=workspace / "tools", probe=Probe(workspace, self.declaration.get("clash"))
            )


    class Provider:
        id = "acme.fixture"
        version = "1.0.0"
        capabilities = Compiled.capabilities
        requires = frozenset()

        def accepts(self, declaration):
            return declaration.get("kind") == "acme"

        def compile(self, declaration, context):
            return Compiled(declaration)


    class BaselineCheck:
        def grade(self, check_id, view):
            seen = view.observations["acme.listing"].data
            grew = seen["after"] != seen["before"]
            ok = grew and view.baseline == {"files": ["seed.txt", "tools"]}
            ok = ok and view.fixture_bin_dir == view.workspace / "tools"
            status = CheckStatus.PASSED if ok else CheckStatus.FAILED
            return CheckOutcome(check_id, "acme.grew", status)


    class Grew:
        id = "acme.grew"
        version = "1.0.0"
        stage = 30
        capabilities = frozenset()
        requires = frozenset({"acme.fixture.listing"})

        def compile(self, configuration):
            return BaselineCheck()


    @hookimpl
    def sevro_register_fixtures(register):
        register(Provider())


    @hookimpl
    def sevro_register_graders(register):
        register(Grew())
""")
GREW = {"id": "grew", "grader": "acme.grew", "configuration": {}}


def plugin(project: SevroProject) -> Path:
    path = project.root / "acme_fixture.py"
    path.write_text(LISTING_FIXTURE)
    return path


def test_a_plugin_fixture_probes_before_and_after_the_host(sevro_project: SevroProject) -> None:
    case = sevro_project.case(
        fixture={"kind": "acme"}, checks=[GREW], requiredEvidence=["acme.listing"]
    )
    on_path = 'case "$PATH" in "$PWD/tools:"*) ;; *) exit 9;; esac'
    host = sevro_project.script(
        default=[
            [
                {"write": {"path": "new.txt", "content": "n"}},
                {"run": {"command": on_path}},
                {"reply": {"text": "ok"}},
            ]
        ]
    )
    done = sevro_project.run(case, "--host-config", host, "--plugin", plugin(sevro_project))
    assert done.exit_code == 0, done.stdout + done.stderr
    evidence = trial_evidence(done.json())
    listing = next(o for o in evidence["observations"] if o["id"] == "acme.listing")
    assert listing["data"] == {
        "before": ["seed.txt", "tools"],
        "after": ["new.txt", "seed.txt", "tools"],
    }
    commands = next(o for o in evidence["observations"] if o["id"] == "sevro.commands")
    assert [c["exitCode"] for c in commands["data"]["commands"]] == [0]
    assert [o["id"] for o in evidence["observations"]][-1] == "acme.listing"
    assert [a["id"] for a in evidence["artifactRefs"]] == ["acme.listing"]
    assert evidence["requiredEvidence"] == [{"id": "acme.listing", "status": "complete"}]
    assert_valid_evidence(done.json())


def test_a_plugin_report_that_breaks_the_bounds_is_a_runner_error(
    sevro_project: SevroProject,
) -> None:
    case = sevro_project.case(fixture={"kind": "acme", "clash": True}, checks=[GREW])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    done = sevro_project.run(case, "--host-config", host, "--plugin", plugin(sevro_project))
    assert done.exit_code == 70
    assert "could not be inspected after the host: fixture evidence refused" in done.stderr
    assert "'sevro.commands' is not namespaced or is already taken" in done.stderr
