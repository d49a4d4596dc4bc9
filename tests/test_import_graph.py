"""The house's shape, checked from the source: sevro_core's modules import each other without
circles, its rooms are layered (a room imports only rooms below it), and the orchestration path
(run/, store/, cli.py) keeps its functions short and their parameter lists small.

Every `sevro_core` import counts — module-level, under `TYPE_CHECKING` and inside functions —
because a lazy or typing-only import is still a dependency the next reader has to untangle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "sevro_core" / "src" / "sevro_core"

# The rooms of sevro_core from the bottom of the house to the top: a room may import only
# itself and rooms listed before it. A sub-package is one room; each top-level module is a room
# of its own (they sit at very different heights: `errors` near the bottom, `entry` at the top);
# `__init__` is the package itself (its `__version__`). Values and protocols sit low, the
# machinery that runs a trial above them, then the run, what reads runs back, the support
# library of agent-CLI hosts, the built-in plugins, and the command line on top.
LAYERS = (
    "__init__",
    "versions",
    "limits",
    "logs",
    "errors",
    "states",
    "vocabulary",
    "formats",
    "models",
    "prices",  # the price table: a foundation module above models
    "plugin",
    "isolation",
    "fixtures",
    "store",
    "judges",
    "experiments",
    "run",
    "reporting",
    "hosts",
    "api",
    "builtins",
    "arguments",
    "runflags",  # the run command's flags as one object, checked
    "cli",
    "entry",
    "__main__",
    "testing",
)

# Functions of the orchestration path longer than this many lines (docstring included) or with
# more than MAX_PARAMETERS parameters should be split into named steps or given a parameter object.
MAX_LINES = 60
MAX_PARAMETERS = 8


def module_name(path: Path) -> str:
    parts = ("sevro_core", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imported(node: ast.AST, known: set[str], importer: str, is_package: bool) -> Iterator[str]:
    """The sevro_core modules one import statement depends on (a package's `__init__` is the
    package's own name; `from package import name` names the sub-module when there is one)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name.split(".")[0] == "sevro_core":
                yield alias.name
        return
    if not isinstance(node, ast.ImportFrom):
        return
    base = node.module or ""
    if node.level:
        anchor = importer.split(".")
        anchor = anchor if is_package else anchor[:-1]
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, base] if base else anchor)
    if base.split(".")[0] != "sevro_core":
        return
    for alias in node.names:
        submodule = f"{base}.{alias.name}"
        yield submodule if submodule in known else base


def import_graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    graph: dict[str, set[str]] = {}
    for name, path in found.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        targets = {
            target
            for node in ast.walk(tree)
            for target in imported(node, known, name, is_package)
            if target != name
        }
        unknown = targets - known
        assert not unknown, f"{name} imports modules that do not exist: {sorted(unknown)}"
        graph[name] = targets
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle as a path that ends where it starts, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def room(module: str) -> str:
    """The room a module lives in: its sub-package, or the top-level module itself."""
    return module.split(".")[1] if "." in module else "__init__"


def test_the_graph_sees_every_kind_of_import() -> None:
    """Negative control for the cycle finder: module-level, TYPE_CHECKING and function-local
    imports all make edges, and a circle through any of them is reported."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "from sevro_core import models\n"
        "if TYPE_CHECKING:\n    from sevro_core.run.engine import TrialRecord\n"
        "def later():\n    import sevro_core.store.runstate\n"
        "    from sevro_core.plugin import protocols, manager\n"
    )
    known = {
        "sevro_core.models",
        "sevro_core.run.engine",
        "sevro_core.store.runstate",
        "sevro_core.plugin",
        "sevro_core.plugin.protocols",
    }
    edges = {
        target
        for node in ast.walk(ast.parse(source))
        for target in imported(node, known, "sevro_core.x", False)
    }
    assert edges == {
        "sevro_core.models",
        "sevro_core.run.engine",
        "sevro_core.store.runstate",
        "sevro_core.plugin.protocols",
        "sevro_core.plugin",
    }
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_no_import_cycles() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Imports from a room into a room above it."""
    height = {name: index for index, name in enumerate(LAYERS)}
    return sorted(
        f"{module} ({room(module)}) imports {target} ({room(target)})"
        for module, targets in graph.items()
        for target in targets
        if height[room(target)] > height[room(module)]
    )


def test_rooms_are_layered() -> None:
    graph = import_graph()
    rooms = {room(module) for module in graph}
    assert rooms <= set(LAYERS), f"rooms missing from LAYERS: {sorted(rooms - set(LAYERS))}"
    upward = upward_imports(graph)
    assert not upward, "imports from a lower room into a higher one:\n" + "\n".join(upward)


def test_the_layering_check_can_fail() -> None:
    """Negative control: the store importing the run is an upward import; the reverse is not."""
    upward = {"sevro_core.store.runstate": {"sevro_core.run.runner"}}
    downward = {"sevro_core.run.runner": {"sevro_core.store.runstate", "sevro_core.models"}}
    assert upward_imports(upward) == [
        "sevro_core.store.runstate (store) imports sevro_core.run.runner (run)"
    ]
    assert upward_imports(downward) == []


Function = ast.FunctionDef | ast.AsyncFunctionDef


def named_functions(node: ast.AST, scope: str) -> Iterator[tuple[str, Function]]:
    """Every function and method under ``node``, named ``scope.Class.method``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, Function):
            name = f"{scope}.{child.name}"
            yield name, child
            yield from named_functions(child, name)
        elif isinstance(child, ast.ClassDef):
            yield from named_functions(child, f"{scope}.{child.name}")
        else:
            yield from named_functions(child, scope)


def orchestration_functions() -> Iterator[tuple[str, Function]]:
    files = [
        *sorted((PACKAGE / "run").glob("*.py")),
        *sorted((PACKAGE / "store").glob("*.py")),
        PACKAGE / "cli.py",
        PACKAGE / "runflags.py",
    ]
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        yield from named_functions(tree, module_name(path).removeprefix("sevro_core."))


def body_lines(function: Function) -> int:
    """Lines from the first statement of the body (the docstring when there is one) to the last."""
    return (function.body[-1].end_lineno or 0) - function.body[0].lineno + 1


def parameter_count(function: Function) -> int:
    arguments = function.args
    named = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    return (
        len([a for a in named if a.arg not in {"self", "cls"}])
        + bool(arguments.vararg)
        + bool(arguments.kwarg)
    )


def is_command(function: Function) -> bool:
    """A Typer command (``@app.command(...)``): its parameters are its flags, declared once each
    as an option alias; it hands them on as one object (``RunFlags``), so only its length counts."""
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Attribute) and target.attr == "command":
            return True
    return False


def test_orchestration_functions_are_short() -> None:
    long = sorted(
        f"{name}: {body_lines(function)} lines"
        for name, function in orchestration_functions()
        if body_lines(function) > MAX_LINES
    )
    assert not long, f"functions over {MAX_LINES} lines:\n" + "\n".join(long)


def test_orchestration_functions_take_few_parameters() -> None:
    wide = sorted(
        f"{name}: {parameter_count(function)} parameters"
        for name, function in orchestration_functions()
        if parameter_count(function) > MAX_PARAMETERS and not is_command(function)
    )
    assert not wide, f"functions with more than {MAX_PARAMETERS} parameters:\n" + "\n".join(wide)


def test_the_length_checks_can_fail() -> None:
    """Negative control: a long, wide function is measured as such."""
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES + 1))
    source = f"def wide(a, b, c, d, e, f, g, h, *rest, **named):\n    '''Why.'''\n{body}\n"
    function = ast.parse(source).body[0]
    assert isinstance(function, ast.FunctionDef)
    assert body_lines(function) == MAX_LINES + 2
    assert parameter_count(function) == 10
    assert not is_command(function)
    command = ast.parse("@app.command(cls=X)\ndef run(a, b):\n    pass\n").body[0]
    assert isinstance(command, ast.FunctionDef) and is_command(command)
