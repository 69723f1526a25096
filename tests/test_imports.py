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


def _executed(tree: ast.AST):
    """Every node but those under `if TYPE_CHECKING:` (imports for annotations alone, never run)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", "")) == "TYPE_CHECKING":
            yield from (n for child in node.orelse for n in [child, *_executed(child)])
            continue
        yield node
        yield from _executed(node)


def import_graph() -> dict[str, set[str]]:
    """Module -> the simflow modules it imports anywhere in its text (annotation-only imports aside). `from . import
    x` is an import of the submodule x, not of the package; `from . import name` of anything else is one of the
    package."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _executed(ast.parse(path.read_text())):
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


def test_the_check_sees_a_cycle_through_an_import_inside_a_function():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_modules_stay_within_issue_59s_sizes():
    """No module over 600 lines and cli.py under 200 (issue 59's limits, which hold after it)."""
    sizes = {name: len(path.read_text().splitlines()) for name, path in _modules().items()}
    assert {name: n for name, n in sizes.items() if n > 600} == {}
    assert sizes["simflow.cli"] < 200
