"""``sevro[ray]`` is a separate distribution: sevro_core never imports Ray, ``sevro --help`` does
not load it, and ``--ray-address`` is checked before anything runs (no cluster needed here)."""

from __future__ import annotations

import ast
from importlib import metadata
from pathlib import Path

import pytest

from sevro_core.testing import SevroProject
from sevro_executor_ray.executor import ray_address
from tests.e2e.helpers import regex_check
from tests.e2e.test_startup import imported_modules

ROOT = Path(__file__).resolve().parents[2]


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


def test_sevro_core_never_imports_ray() -> None:
    sources = sorted((ROOT / "sevro_core" / "src").rglob("*.py"))
    assert sources
    offenders = [str(p) for p in sources if "ray" in _imports(p)]
    assert offenders == []
    # positive control: the executor's worker module does
    assert "ray" in _imports(ROOT / "sevro_executor_ray/src/sevro_executor_ray/worker.py")
    requires = metadata.requires("sevro-core") or []
    assert not [r for r in requires if r.split()[0].startswith("ray")]
    assert any(r.startswith("ray[default]") for r in metadata.requires("sevro-executor-ray") or [])
    assert "sevro-executor-ray; extra == 'ray'" in (metadata.requires("sevro") or [])


def test_help_does_not_import_ray() -> None:
    for args in (("--help",), ("run", "--help"), ("plugins",)):
        modules = imported_modules(*args)
        assert "ray" not in modules and "sevro_executor_ray.pool" not in modules, args
    # positive control: loading the plugins imports the executor's module, not Ray
    assert "sevro_executor_ray.executor" in modules


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("auto", "auto"),
        ("local", "local"),
        ("127.0.0.1:6379", "127.0.0.1:6379"),
        ("head.example:10001", "head.example:10001"),
        ("[::1]:6379", "[::1]:6379"),
        ("127.0.0.1", None),
        ("127.0.0.1:0", None),
        ("127.0.0.1:70000", None),
        ("ray://head:10001", None),
        ("", None),
    ],
)
def test_ray_address_values(value: str, expected: str | None) -> None:
    assert ray_address(value) == expected


def test_a_bad_address_or_a_foreign_flag_is_refused_before_anything_runs(
    sevro_project: SevroProject,
) -> None:
    case = sevro_project.case(checks=[regex_check("r", "^ok$")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    bad = sevro_project.run(
        case, "--host-config", host, "--executor", "ray", "--ray-address", "nowhere"
    )
    assert bad.exit_code == 64
    assert bad.stderr == (
        "sevro: error: --ray-address 'nowhere' is not auto, local or HOST:PORT of a Ray head node\n"
    )
    foreign = sevro_project.run(case, "--host-config", host, "--ray-address", "auto")
    assert foreign.exit_code == 64
    assert foreign.stderr == "sevro: error: --ray-address needs --executor ray\n"
    assert not any(sevro_project.results.rglob("trial-*.json"))
    shown = sevro_project.sevro("run", "--help")
    assert "--ray-address" in shown.stdout and "Executor settings" in shown.stdout
