"""``sevro extension check`` through the real CLI against real extension processes: the reference
extension and the documented minimal one conform; each misbehaving one fails with its reason."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from sevro_core.testing import CliResult, SevroProject, require_tool
from tests.extensions.conftest import HERE, MISBEHAVING, REFERENCE, SLOW

ROOT = HERE.parent.parent
MINIMAL = ROOT / "examples" / "extensions" / "minimal.js"
FAULTY = HERE / "faulty.js"
EXTENSIONS_DOC = ROOT / "docs" / "extensions.md"
LINE = re.compile(r"^(ok  |FAIL) [^:]+(: .+)?$")


def check(
    project: SevroProject,
    argv: Sequence[str | Path],
    sources: Sequence[Path],
    *extra: str | Path,
) -> CliResult:
    """``sevro extension check`` with ``argv`` as the command file."""
    command = project.write_json("command.json", [str(arg) for arg in argv])
    flags = [flag for source in sources for flag in ("--extension-source-file", source)]
    return project.sevro("extension", "check", "--extension-command-file", command, *flags, *extra)


def lines(done: CliResult) -> list[str]:
    found = done.stdout.splitlines()
    assert all(LINE.match(line) for line in found[:-1]), done.stdout
    return found


def failures(done: CliResult) -> list[str]:
    return [line for line in lines(done) if line.startswith("FAIL")]


@pytest.fixture
def node() -> str:
    return str(Path(require_tool("node")).resolve())


def test_the_reference_extension_conforms(sevro_project: SevroProject, node: str) -> None:
    done = check(sevro_project, [node, REFERENCE], [REFERENCE])
    assert done.exit_code == 0, done.stdout + done.stderr
    found = lines(done)
    assert not failures(done)
    assert found[-1] == f"{len(found) - 1} ok, 0 failed: the extension conforms"
    for trial in ("completed", "failed execution", "partial evidence"):
        assert any(line.startswith(f"ok   evaluate {trial}: ") for line in found), trial
        policy = f"ok   evaluate {trial} with policy sevro-test.reference.strict: "
        assert any(line.startswith(policy) for line in found), trial
    resolved = next(line for line in found if line.startswith("ok   resolve without case ids: "))
    assert 'cases ("greets", ' in resolved and 'checking "greets"' in resolved, resolved
    assert any(line.startswith("ok   source closure: 2 files unchanged") for line in found)


def test_every_case_of_the_reference_conforms_as_json(
    sevro_project: SevroProject, node: str
) -> None:
    for case_id in ("greets", "example-case", "mixed", "farewell"):
        done = check(sevro_project, [node, REFERENCE], [REFERENCE], "--case-id", case_id, "--json")
        assert done.exit_code == 0, done.stdout + done.stderr
        document = done.json()
        assert document["conforms"] is True and document["failed"] == 0
        assert document["extension"] == {"id": "sevro-test.reference", "version": "1.0.0"}
        names = [item["name"] for item in document["checks"]]
        assert f"resolve {case_id}" in names and "resolve without case ids" not in names


def test_the_preparing_extension_conforms(sevro_project: SevroProject, node: str) -> None:
    """An executable artifact and a fixture setup: prepare is checked, never installed or run."""
    preparing = HERE / "preparing.js"
    done = check(sevro_project, [node, preparing], [preparing], "--case-id", "prepared")
    assert done.exit_code == 0, done.stdout + done.stderr
    assert "ok   prepare: 1 artifact, declares fixtureSetup, answered alike twice" in done.stdout


def test_a_case_the_extension_does_not_have_fails(sevro_project: SevroProject, node: str) -> None:
    done = check(sevro_project, [node, REFERENCE], [REFERENCE], "--case-id", "nope")
    assert done.exit_code == 1, done.stdout + done.stderr
    assert failures(done) == [
        'FAIL resolve nope: resolve for case "nope" returned no cases',
        "FAIL remaining checks: not run, resolve nope failed",
    ]
    assert lines(done)[-1].endswith("2 failed: the extension does not conform")


def test_the_documented_minimal_extension_conforms(sevro_project: SevroProject, node: str) -> None:
    shown = re.findall(r"```js\n(.*?)```", EXTENSIONS_DOC.read_text("utf-8"), re.DOTALL)
    assert MINIMAL.read_text("utf-8") in shown, "docs/extensions.md shows the file whole"
    done = check(sevro_project, [node, MINIMAL], [MINIMAL])
    assert done.exit_code == 0, done.stdout + done.stderr
    assert "recommends passed" in done.stdout and not failures(done)


def test_the_faulty_extension_conforms_when_it_breaks_nothing(
    sevro_project: SevroProject, node: str
) -> None:
    """The control for every fault below: the same script, no fault."""
    done = check(sevro_project, [node, FAULTY, "none"], [FAULTY])
    assert done.exit_code == 0, done.stdout + done.stderr
    assert not failures(done)


FAULTS = [
    ("malformed", "evaluate", "FAIL evaluate completed: extension stdout is not UTF-8 JSON"),
    (
        "crash",
        "prepare",
        "FAIL prepare: extension exited with status 3 (stderr: prepare: something broke)",
    ),
    ("oversized", "describe", "FAIL describe: extension stdout passed 8388608 bytes"),
    (
        "lying",
        "evaluate",
        'FAIL evaluate failed execution: check "sevro-test.faulty.said" passed citing '
        '"sevro.observation.final-message", which is not complete evidence',
    ),
    (
        "nondeterministic",
        "evaluate",
        "FAIL evaluate completed: two identical evaluate calls answered differently at "
        "/metrics/0/value",
    ),
    (
        "unknown-evidence",
        "evaluate",
        'FAIL evaluate completed: check "sevro-test.faulty.said" passed citing '
        '"sevro-test.nowhere", which is no known evidence',
    ),
    (
        "undeclared",
        "evaluate",
        "FAIL evaluate completed: extension sevro-test.faulty returned check "
        '"sevro-test.faulty.surprise", which the case does not declare',
    ),
    (
        "unprefixed",
        "evaluate",
        "FAIL evaluate completed: extension sevro-test.faulty returned check "
        '"sevro-test.elsewhere", whose id is not under its namespace',
    ),
    (
        "recommends-without-policy",
        "evaluate",
        'FAIL evaluate completed: extension recommended the task verdict "passed", but no '
        "task-verdict policy is selected",
    ),
    (
        "bad-digest",
        "prepare",
        "FAIL prepare: prepare artifact notes: sha256 does not match the content",
    ),
    (
        "collision",
        "prepare",
        "FAIL prepare: prepare artifact notes: 'README.md' is the fixture path 'README.md'",
    ),
]


@pytest.mark.parametrize(("mode", "method", "reason"), FAULTS, ids=[f[0] for f in FAULTS])
def test_a_faulty_extension_fails_with_its_reason(
    sevro_project: SevroProject, node: str, mode: str, method: str, reason: str
) -> None:
    done = check(sevro_project, [node, FAULTY, mode, method], [FAULTY], "--timeout-ms", "10000")
    assert done.exit_code == 1, done.stdout + done.stderr
    assert any(line.startswith(reason) for line in failures(done)), done.stdout
    assert done.stdout.splitlines()[-1].endswith("the extension does not conform")
    assert "Traceback" not in done.stderr


def test_a_slow_extension_fails_on_the_injected_timeout(
    sevro_project: SevroProject, node: str
) -> None:
    done = check(sevro_project, [node, FAULTY, "slow", "resolve"], [FAULTY], "--timeout-ms", "700")
    assert done.exit_code == 1, done.stdout + done.stderr
    assert failures(done) == [
        "FAIL resolve without case ids: extension did not answer within 700 ms",
        "FAIL remaining checks: not run, resolve without case ids failed "
        "(pass --case-id to check one case)",
    ]


def test_a_shell_extension_that_never_answers_fails(
    sevro_project: SevroProject, tmp_path: Path
) -> None:
    sh = str(Path(require_tool("sh")).resolve())
    done = check(sevro_project, [sh, SLOW, tmp_path], [SLOW], "--timeout-ms", "500")
    assert done.exit_code == 1, done.stdout + done.stderr
    assert failures(done)[0] == "FAIL describe: extension did not answer within 500 ms"
    assert not (tmp_path / "terminated").exists()  # SIGKILL, never SIGTERM


def test_a_self_modifying_extension_fails(
    sevro_project: SevroProject, node: str, tmp_path: Path
) -> None:
    copy = tmp_path / "faulty.js"
    shutil.copy(FAULTY, copy)
    done = check(sevro_project, [node, copy, "self-modifying", "prepare"], [copy])
    assert done.exit_code == 1, done.stdout + done.stderr
    assert failures(done) == [
        f"FAIL prepare: extension source {copy} changed after prepare",
        "FAIL remaining checks: not run, prepare failed",
    ]


def test_a_resolve_that_returns_another_case_fails(sevro_project: SevroProject, node: str) -> None:
    done = check(
        sevro_project, [node, FAULTY, "wrong-case", "resolve"], [FAULTY], "--case-id", "only"
    )
    assert done.exit_code == 1, done.stdout + done.stderr
    assert failures(done)[0] == 'FAIL resolve only: resolve for case "only" returned "other"'


def test_a_resolved_case_must_load_as_a_case_file(sevro_project: SevroProject, node: str) -> None:
    done = check(sevro_project, [node, FAULTY, "bad-case", "resolve"], [FAULTY])
    assert done.exit_code == 1, done.stdout + done.stderr
    assert failures(done)[0] == (
        "FAIL resolve only: the resolved case#/checks/1/id: duplicate check id "
        "'sevro-test.faulty.said' (also /checks/0)"
    )


def test_a_source_ref_artifact_needs_the_source_map(
    sevro_project: SevroProject, node: str, tmp_path: Path
) -> None:
    argv = [node, FAULTY, "source-ref", "prepare"]
    without = check(sevro_project, argv, [FAULTY])
    assert without.exit_code == 1, without.stdout + without.stderr
    assert failures(without)[0].startswith("FAIL prepare: ")
    assert "sourceRef needs --case-source-root and --case-source-map-file" in without.stdout
    root = tmp_path / "sources"
    root.mkdir()
    (root / "notes.md").write_text("prepared\n", encoding="utf-8")
    source_map = sevro_project.write_json("sources.json", {"notes": (root / "notes.md").as_uri()})
    flags = ("--case-source-root", root, "--case-source-map-file", source_map)
    done = check(sevro_project, argv, [FAULTY], *flags)
    assert done.exit_code == 0, done.stdout + done.stderr
    assert "ok   prepare: 1 artifact, answered alike twice" in done.stdout.splitlines()
    alone = check(sevro_project, argv, [FAULTY], "--case-source-root", root)
    assert alone.exit_code == 64 and "must be given together" in alone.stderr


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("malformed", "FAIL describe: extension stdout is not UTF-8 JSON"),
        (
            "crash",
            "FAIL describe: extension exited with status 3 (stderr: something broke: bad state)",
        ),
        ("wrong-id", 'FAIL describe: extension answered id "00000000-0000-4000-8000-000000000000"'),
        (
            "invalid-result",
            "FAIL describe: extension describe response is invalid: /result/extension/id",
        ),
    ],
)
def test_a_misbehaving_describe_stops_the_check(
    sevro_project: SevroProject, node: str, mode: str, reason: str
) -> None:
    done = check(sevro_project, [node, MISBEHAVING, mode], [MISBEHAVING])
    assert done.exit_code == 1, done.stdout + done.stderr
    first, rest = failures(done)
    assert first.startswith(reason), done.stdout
    assert rest == "FAIL remaining checks: not run, describe failed"


def test_the_configuration_reaches_every_request(sevro_project: SevroProject, node: str) -> None:
    without = check(sevro_project, [node, FAULTY, "needs-configuration", "resolve"], [FAULTY])
    assert without.exit_code == 1, without.stdout + without.stderr
    assert failures(without)[0] == (
        "FAIL resolve without case ids: extension reported sevro-test.faulty.unconfigured: "
        "configuration.ready is not true"
    )
    configuration = sevro_project.write_json("configuration.json", {"ready": True})
    done = check(
        sevro_project,
        [node, FAULTY, "needs-configuration", "resolve"],
        [FAULTY],
        "--extension-configuration-file",
        configuration,
    )
    assert done.exit_code == 0, done.stdout + done.stderr


def test_instrumentation_requests_are_counted_not_negotiated(
    sevro_project: SevroProject, node: str
) -> None:
    """A host offers instrumentation only once configured for a run, so the check says so."""
    configuration = sevro_project.write_json(
        "configuration.json", {"sevro-test.instrument": ["sevro.tool-calls"]}
    )
    done = check(
        sevro_project,
        [node, REFERENCE],
        [REFERENCE],
        *("--case-id", "greets", "--extension-configuration-file", configuration),
    )
    assert done.exit_code == 0, done.stdout + done.stderr
    assert (
        "ok   prepare: 1 artifact, 1 instrumentation requests (negotiated only in sevro run), "
        "answered alike twice"
    ) in done.stdout.splitlines()


def test_negotiation_uses_the_chosen_host(sevro_project: SevroProject, node: str) -> None:
    """The optional sevro.codex.native-calls is kept only against the Codex host."""
    argv = [node, FAULTY, "none"]
    scripted = check(sevro_project, argv, [FAULTY], "--json")
    codex = check(sevro_project, argv, [FAULTY], "--host", "codex", "--json")
    assert scripted.exit_code == 0 and codex.exit_code == 0, codex.stdout + codex.stderr
    details = {
        name: next(c["detail"] for c in done.json()["checks"] if c["name"].startswith("negotiate"))
        for name, done in (("scripted", scripted), ("codex", codex))
    }
    assert details == {
        "scripted": "capabilities none",
        "codex": "capabilities sevro.codex.native-calls",
    }


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--timeout-ms", "0"], "--timeout-ms must be between 1 and 30000"),
        (["--host", "acme.host.none"], "--host acme.host.none is not an installed host"),
        (["--extension-configuration-file", "CONFIG"], "must be a JSON object"),
    ],
)
def test_bad_input_is_one_line_and_exit_64(
    sevro_project: SevroProject, node: str, tmp_path: Path, extra: list[str], message: str
) -> None:
    copy = tmp_path / "faulty.js"
    shutil.copy(FAULTY, copy)
    config = sevro_project.write_json("config.json", ["not", "an", "object"])
    extra = [str(config) if arg == "CONFIG" else arg for arg in extra]
    # were anything to run, the extension would rewrite itself on its first call
    done = check(sevro_project, [node, copy, "self-modifying", "describe"], [copy], *extra)
    assert done.exit_code == 64, done.stdout + done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stdout == "" and copy.read_bytes() == FAULTY.read_bytes()


def test_a_command_without_sources_or_with_a_relative_path_is_exit_64(
    sevro_project: SevroProject, node: str
) -> None:
    no_source = check(sevro_project, [node, REFERENCE], [])
    assert no_source.exit_code == 64
    assert "at least one --extension-source-file is required" in no_source.stderr
    command = sevro_project.write_json("command.json", [node, str(REFERENCE)])
    relative = sevro_project.sevro(
        "extension", "check", "--extension-command-file", command.name,
        "--extension-source-file", REFERENCE,
    )  # fmt: skip
    assert relative.exit_code == 64
    assert "the extension command file must be an absolute path" in relative.stderr
    assert json.loads(command.read_text()) == [node, str(REFERENCE)]


def test_the_command_is_registered_by_the_distribution(sevro_project: SevroProject) -> None:
    done = sevro_project.sevro("plugins", "--json")
    assert done.exit_code == 0, done.stderr
    plugins = done.json()["plugins"]
    (plugin,) = [p for p in plugins if p["distribution"] == "sevro-extensions" and p["commands"]]
    assert plugin["commands"] == ["extension"] and plugin["source"] == "entry-point"
    helped = sevro_project.sevro("extension", "check", "--help")
    assert helped.exit_code == 0 and "--extension-command-file" in helped.stdout
