"""First-party plugins are written like third-party ones: against ``sevro_core.api`` only.

Every module of the packages in :data:`PACKAGES` is parsed (every import, also function-local
and under ``TYPE_CHECKING``); an import of any other ``sevro_core`` module fails. The shared ids
of ``sevro_core.vocabulary`` are spelled out nowhere else in those packages or in the core.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from sevro_core import api, vocabulary
from sevro_core.plugin import protocols

ROOT = Path(__file__).resolve().parent.parent
PACKAGES: tuple[tuple[str, Path], ...] = (
    ("sevro_graders", ROOT / "sevro_graders" / "src" / "sevro_graders"),
    ("sevro_sandbox", ROOT / "sevro_sandbox" / "src" / "sevro_sandbox"),
    ("sevro_core.builtins", ROOT / "sevro_core" / "src" / "sevro_core" / "builtins"),
    ("sevro_hosts_codex", ROOT / "sevro_hosts_codex" / "src" / "sevro_hosts_codex"),
    ("sevro_hosts_claude", ROOT / "sevro_hosts_claude" / "src" / "sevro_hosts_claude"),
    ("sevro_hosts_pi", ROOT / "sevro_hosts_pi" / "src" / "sevro_hosts_pi"),
    ("sevro_judges", ROOT / "sevro_judges" / "src" / "sevro_judges"),
    ("sevro_extensions", ROOT / "sevro_extensions" / "src" / "sevro_extensions"),
    ("sevro_executor_ray", ROOT / "sevro_executor_ray" / "src" / "sevro_executor_ray"),
)
"""First-party plugin packages: (dotted name, directory)."""
CORE = ROOT / "sevro_core" / "src" / "sevro_core"
ALLOWED = "sevro_core.api"
TEST_KIT = "sevro_core.testing"
"""A plugin's own ``testing`` module (its ``require_<host>`` helpers) builds on the test kit."""


def _modules(package: str, directory: Path) -> Iterator[tuple[str, Path]]:
    for path in sorted(directory.rglob("*.py")):
        parts = path.relative_to(directory).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join((package, *parts)), path


def _imported(module: str, is_package: bool, source: str) -> Iterator[tuple[int, str]]:
    """Every module ``source`` imports, relative imports resolved: (line, dotted name)."""
    here = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here[: len(here) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            if base in ("sevro_core", ""):  # `from sevro_core import limits` names modules
                for alias in node.names:
                    yield node.lineno, f"{base}.{alias.name}".lstrip(".")
            else:
                yield node.lineno, base


def forbidden_imports(package: str, module: str, is_package: bool, source: str) -> list[str]:
    """The ``sevro_core`` modules ``source`` imports other than the api and its own package."""
    return [
        f"line {line}: {name}"
        for line, name in _imported(module, is_package, source)
        if (name == "sevro_core" or name.startswith("sevro_core."))
        and name != ALLOWED
        and not (name == TEST_KIT and module == f"{package}.testing")
        and name != package
        and not name.startswith(f"{package}.")
    ]


@pytest.mark.parametrize(("package", "directory"), PACKAGES, ids=[p for p, _ in PACKAGES])
def test_first_party_plugins_import_only_the_api(package: str, directory: Path) -> None:
    modules = list(_modules(package, directory))
    assert modules, directory
    found = {}
    for module, path in modules:
        bad = forbidden_imports(
            package, module, path.name == "__init__.py", path.read_text("utf-8")
        )
        if bad:
            found[str(path.relative_to(ROOT))] = bad
    assert not found, found


def test_the_import_check_sees_every_kind_of_import() -> None:
    """Negative controls: top-level, function-local, TYPE_CHECKING, relative and module imports."""
    flagged = [
        "from sevro_core.models import CheckOutcome",
        "import sevro_core.states",
        "from sevro_core import limits",
        "def f():\n    from sevro_core.isolation.doctor import sandbox_check",
        "if TYPE_CHECKING:\n    from sevro_core.models import Case",
        "from ..models import Case",
        "from .. import limits",
    ]
    for source in flagged:
        assert forbidden_imports("sevro_core.builtins", "sevro_core.builtins.x", False, source)
    allowed = [
        "from sevro_core.api import CheckOutcome, limits",
        "import sevro_core.api",
        "from sevro_core import api",
        "from sevro_graders.jsregex import JsRegex",
        "from . import sibling",
        "from sevro_core.builtins.reporters import MarkdownReporter",
    ]
    for source in allowed:
        assert not forbidden_imports("sevro_core.builtins", "sevro_core.builtins.x", False, source)
    kit = "from sevro_core.testing import require_agent_cli"
    assert not forbidden_imports("sevro_hosts_acme", "sevro_hosts_acme.testing", False, kit)
    assert forbidden_imports("sevro_hosts_acme", "sevro_hosts_acme.host", False, kit)


def test_every_exported_name_exists_once() -> None:
    assert len(api.__all__) == len(set(api.__all__))
    missing = [name for name in api.__all__ if not hasattr(api, name)]
    assert not missing, missing


def test_the_api_exports_every_protocol_value_type_and_id() -> None:
    """A new protocol, protocol value type or vocabulary id is part of the author's surface."""
    declared = {
        name
        for name, value in vars(protocols).items()
        if inspect.isclass(value)
        and value.__module__ == protocols.__name__
        and (attrs.has(value) or getattr(value, "_is_protocol", False))
    }
    ids = {name for name in vars(vocabulary) if name.isupper()}
    assert ids and {"Host", "Grader", "HostOptions", "SandboxPolicy"} <= declared
    assert not (declared | ids) - set(api.__all__), (declared | ids) - set(api.__all__)


def _shared_ids() -> dict[str, str]:
    return {value: name for name, value in vars(vocabulary).items() if name.isupper()}


def _literals(source: str) -> Iterator[tuple[int, str]]:
    """String literals except docstrings and logger names (``get_logger("sevro.sandbox")``)."""
    tree = ast.parse(source)
    skipped = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
        ):
            skipped.add(id(node.body[0].value))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "get_logger":
            skipped.update(id(arg) for arg in node.args)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in skipped
        ):
            yield node.lineno, node.value


def spelled_out_ids(source: str) -> list[str]:
    """Shared ids written as literals (docstrings aside) instead of imported."""
    shared = _shared_ids()
    return [f"line {line}: {value!r}" for line, value in _literals(source) if value in shared]


def test_shared_ids_are_spelled_out_only_in_the_vocabulary() -> None:
    directories = [
        CORE,
        *(directory for package, directory in PACKAGES if package != "sevro_core.builtins"),
    ]
    found = {}
    for directory in directories:
        for path in sorted(directory.rglob("*.py")):
            if path == CORE / "vocabulary.py":
                continue
            spelled = spelled_out_ids(path.read_text("utf-8"))
            if spelled:
                found[str(path.relative_to(ROOT))] = spelled
    assert not found, found


def test_the_id_check_sees_a_spelled_out_id() -> None:
    assert spelled_out_ids('CAPS = frozenset({"sevro.commands"})\n')
    assert spelled_out_ids('def f():\n    """Doc."""\n    return "sevro.fixture.git"\n')
    assert not spelled_out_ids('"""Reports sevro.commands."""\nfrom sevro_core.api import X\n')
    assert not spelled_out_ids('HOST_ID = "sevro.host.scripted"\n')
    assert not spelled_out_ids('log = structlog.get_logger("sevro.sandbox")\n')
    assert spelled_out_ids('requires = frozenset({"sevro.sandbox"})\n')
