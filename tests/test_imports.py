"""simflow's modules import each other without a cycle, counting imports inside functions: a module can be
read, tested and moved with only what it imports below it."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "simflow"


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _executed(tree: ast.AST, annotations: bool = False):
    """Every node but those under `if TYPE_CHECKING:` (imports for annotations alone, never run; with
    `annotations`, those too)."""
    for node in ast.iter_child_nodes(tree):
        typing_only = getattr(node, "test", None) is not None and getattr(
            node.test, "id", getattr(node.test, "attr", "")) == "TYPE_CHECKING"
        if isinstance(node, ast.If) and typing_only and not annotations:
            yield from (n for child in node.orelse for n in [child, *_executed(child)])
            continue
        yield node
        yield from _executed(node, annotations)


def import_graph(annotations: bool = False) -> dict[str, set[str]]:
    """Module -> the simflow modules it imports anywhere in its text (with `annotations`, its imports under `if
    TYPE_CHECKING:` too). `from . import x` is an import of the submodule x, not of the package; `from . import
    name` of anything else is one of the package."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _executed(ast.parse(path.read_text()), annotations):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                subs = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules]
                targets = subs if len(subs) == len(node.names) else [base, *subs]
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            part = []
            while True:
                top = stack.pop()
                part.append(top)
                if top == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle():
    graph = import_graph()
    assert "simflow.run.sweep" in graph["simflow.api"]  # imported inside a function: counted
    assert cycles(graph) == []


def test_no_import_cycle_counting_imports_for_annotations_alone():
    graph = import_graph(annotations=True)
    source = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import typed_only\n")
    assert [n.names[0].name for n in _executed(source, True) if isinstance(n, ast.Import)] == ["typed_only"]
    assert [n for n in _executed(source) if isinstance(n, ast.Import)] == []
    assert cycles(graph) == []


def _package(module: str) -> str:
    """simflow.X for a module of a subpackage X (simflow.run.sweep -> simflow.run), else the module itself."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 and (PACKAGE / parts[1]).is_dir() else module


def test_no_two_packages_import_each_other():
    """A package below another never imports up into it: the backend registry sits under job and results
    (issue 59 counted 7 such pairs; the last two went through the registry)."""
    edges = {(_package(a), _package(b)) for a, targets in import_graph().items() for b in targets}
    assert sorted((a, b) for a, b in edges if a < b and a != b and (b, a) in edges) == []


def test_the_check_sees_a_cycle_through_an_import_inside_a_function():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_modules_stay_within_issue_59s_sizes():
    """No module over 600 lines and cli.py under 200 (issue 59's limits, which hold after it)."""
    sizes = {name: len(path.read_text().splitlines()) for name, path in _modules().items()}
    assert {name: n for name, n in sizes.items() if n > 600} == {}
    assert sizes["simflow.cli"] < 200
