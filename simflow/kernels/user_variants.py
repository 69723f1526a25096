"""Kernel variants of a user's own: a folder of `NAME.cu.j2` templates, each with a `NAME.toml`.

The TOML declares what simflow's own variants have in code (simflow/families.py):

    summary = "one line"
    precision = "float32"            # what it computes in: float32 | float16 | tf32 (the check's tolerance)
    output = "conv"                  # what y holds: conv | conv_relu_pool
    fixed = { weights = "global" }   # template values it fixes (optional)

    [params.outputs]                 # a parameter: choices, default, help; host = true for one that
    choices = [1, 2, 4]              # changes how kernels are run, not their code
    default = 2
    [params.tile]
    like = "tile"                    # or simflow's own definition of a parameter, by ID

    [[launch]]                       # one table per kernel launch, in order
    kernel = "conv2d_rows"           # the __global__ function (default conv2d_NAME)
    grid = ["ceil(Wout / (tile * outputs))", "Hout * M", "batch"]
    block = ["tile", 1, 1]
    dynamic_smem = "4 * C * K * K"   # bytes (default 0)
    args = ["x", "w", "y", "batch"]  # buffers in order: x, w, y, batch, or a workspace buffer

    [workspace]                      # device buffers the launches share: name = float count
    col = "C * K * K * batch * Hout * Wout"

    [[refuse]]                       # what it cannot do; simulator = true: only in GPGPU-Sim
    when = "Hout * M > 65535"
    reason = "grid.y (Hout x M) is over 65,535"

or, instead of [[launch]] and [workspace], `family = "shared_tile"` to reuse the launch code of one
of simflow's families. Expressions are arithmetic (+ - * / // % **, ceil, floor, min, max),
comparisons and and/or/not over the layer (C, M, H, W, K, pad, stride, Hout, Wout), `batch` and the
parameters; a mistake names the file and line.
"""

from __future__ import annotations

import ast
import dataclasses
import math
import operator
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from .limits import check_threads
from .problems import Problem
from .variant_types import GENERIC_LIMITS, Kernel, Launch, Param, Variant

LAYER_NAMES = ("C", "M", "H", "W", "K", "pad", "stride", "Hout", "Wout")
FUNCTIONS = {"ceil": math.ceil, "floor": math.floor, "min": min, "max": max}
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge}
TOP_KEYS = {"summary", "template", "precision", "output", "fixed", "params", "launch", "workspace", "refuse", "family"}
LAUNCH_KEYS = {"kernel", "grid", "block", "dynamic_smem", "args"}


@dataclass(frozen=True)
class Expression:
    """An expression from a variant's TOML, checked when the file is read; evaluated per layer."""

    text: str
    where: str  # file:line

    def __call__(self, names: dict) -> int | float | bool | str:
        try:
            return _evaluate(ast.parse(self.text, mode="eval").body, names)
        except ZeroDivisionError:
            raise UserError(f"{self.where}: {self.text!r} divides by zero for this layer") from None

    def whole(self, names: dict, what: str) -> int:
        value = self(names)
        if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
            raise UserError(f"{self.where}: {what} {self.text!r} is {value!r} for this layer, not a whole number "
                            "(use ceil() or //)")
        return int(value)


def _evaluate(node: ast.AST, names: dict):
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float | str | bool):
        return node.value
    if isinstance(node, ast.Name):
        return names[node.id]
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)](_evaluate(node.left, names), _evaluate(node.right, names))
    if isinstance(node, ast.UnaryOp):
        value = _evaluate(node.operand, names)
        return not value if isinstance(node.op, ast.Not) else (-value if isinstance(node.op, ast.USub) else +value)
    if isinstance(node, ast.BoolOp):
        values = (_evaluate(v, names) for v in node.values)
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare):
        left = _evaluate(node.left, names)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _evaluate(right_node, names)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.Call):
        return FUNCTIONS[node.func.id](*(_evaluate(a, names) for a in node.args))
    raise AssertionError(type(node).__name__)  # _check refuses everything else when the file is read


def _check(text, where: str, allowed: set[str]) -> Expression:
    """An expression made safe to evaluate: only the forms above, only known names."""
    if isinstance(text, bool) or isinstance(text, int | float):
        text = str(text)
    if not isinstance(text, str) or not text.strip():
        raise UserError(f"{where}: expected an expression (a number or text such as \"ceil(Wout / tile)\")")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise UserError(f"{where}: {text!r} is not an expression: {exc.msg}") from None
    ok = (ast.Expression, ast.Constant, ast.Name, ast.Load, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Call,
          ast.And, ast.Or, ast.Not, ast.USub, ast.UAdd, *_BINARY, *_COMPARE)
    for node in ast.walk(tree):
        if not isinstance(node, ok):
            raise UserError(f"{where}: {text!r}: {type(node).__name__} is not allowed (arithmetic, comparisons, "
                            f"and/or/not and {', '.join(FUNCTIONS)} only)")
        if isinstance(node, ast.Call) and (not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS
                                           or node.keywords):
            raise UserError(f"{where}: {text!r}: only {', '.join(FUNCTIONS)} may be called")
        if isinstance(node, ast.Name) and node.id not in allowed and node.id not in FUNCTIONS:
            raise UserError(f"{where}: {text!r} uses {node.id!r}; known names: {', '.join(sorted(allowed))}")
    return Expression(text.strip(), where)


def names_for(problem: Problem, params: dict, batch: int) -> dict:
    layer = {name: getattr(problem, name) for name in LAYER_NAMES}
    return {**layer, **params, "batch": batch}


def load_user_variant(toml_path: Path, builtin_params: dict, families: dict) -> object:
    """One NAME.toml (and its template) as a Variant; every mistake names the file and line."""
    name = toml_path.stem
    text = toml_path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"{toml_path}: not valid TOML: {exc}") from None

    def where(needle: str) -> str:
        """file:line of a key (`key =` at a line's start) or else of the first line holding the text."""
        lines = text.splitlines()
        key = re.compile(rf"^\s*{re.escape(needle)}\s*=")
        for found in ([n for n, line in enumerate(lines, 1) if key.match(line)],
                      [n for n, line in enumerate(lines, 1) if needle in line]):
            if found:
                return f"{toml_path}:{found[0]}"
        return str(toml_path)

    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise UserError(f"{where(unknown[0])}: unknown key {unknown[0]!r}; valid keys: {', '.join(sorted(TOP_KEYS))}")
    template = data.get("template", f"{name}.cu.j2")
    if not (toml_path.parent / template).is_file():
        raise UserError(f"{toml_path}: no template {template!r} beside it")
    params = []
    for key, spec in data.get("params", {}).items():
        if not isinstance(spec, dict):
            raise UserError(f"{where(key)}: [params.{key}] must be a table (choices, default, help, host; or like)")
        if "like" in spec:
            if spec["like"] not in builtin_params:
                raise UserError(f"{where('like')}: like = {spec['like']!r} is none of simflow's parameters: "
                                f"{', '.join(builtin_params)}")
            params.append(builtin_params[spec["like"]])
            continue
        choices = tuple(spec.get("choices", ()))
        if not choices or spec.get("default") not in choices:
            raise UserError(f"{where(f'params.{key}')}: [params.{key}] needs choices and a default among them")
        if len({type(c) for c in choices}) > 1:
            raise UserError(f"{where(f'params.{key}')}: [params.{key}]: choices must all be numbers, all text or "
                            "all true/false")
        params.append(Param(key, choices, spec["default"], str(spec.get("help", "")), bool(spec.get("host", False))))
    allowed = {*LAYER_NAMES, "batch", *(p.name for p in params)}
    precision = data.get("precision", "float32")
    from .reference import OPS, TOLERANCE

    if precision not in TOLERANCE:
        raise UserError(f"{where('precision')}: precision must be {', '.join(TOLERANCE)}, got {precision!r}")

    output = data.get("output", "conv")
    if output not in OPS:
        raise UserError(f"{where('output')}: output must be one of {', '.join(OPS)}, got {output!r}")
    fixed = {**data.get("fixed", {}), "output": output}
    refusals = []
    for rule in data.get("refuse", []):
        if not isinstance(rule, dict) or not rule.get("reason") or "when" not in rule:
            raise UserError(f"{where('refuse')}: each [[refuse]] needs when (an expression) and reason")
        refusals.append((_check(rule["when"], where(str(rule["when"])), allowed), str(rule["reason"]),
                         bool(rule.get("simulator", False))))
    common = dict(name=name, template=template, summary=str(data.get("summary", "")), params=tuple(params),
                  fixed=fixed, precision=precision, template_dir=str(toml_path.parent.resolve()))
    if "family" in data:
        family = families.get(data["family"])
        if family is None:
            raise UserError(f"{where('family')}: unknown family {data['family']!r}; valid families: "
                            f"{', '.join(families)} (or [[launch]] tables of your own)")
        if "launch" in data or "workspace" in data:
            raise UserError(f"{where('family')}: give a family or [[launch]] tables, not both")
        if refusals:
            raise UserError(f"{where('refuse')}: [[refuse]] goes with [[launch]] tables; a family refuses in its code")
        return family(**common)
    launches = []
    for index, spec in enumerate(data.get("launch", []), 1):
        here = f"{where('[[launch]]')} (launch {index})"
        if not isinstance(spec, dict) or set(spec) - LAUNCH_KEYS:
            bad = sorted(set(spec) - LAUNCH_KEYS) if isinstance(spec, dict) else []
            raise UserError(f"{here}: unknown key(s) {', '.join(bad)}; valid: {', '.join(sorted(LAUNCH_KEYS))}")
        for dim in ("grid", "block"):
            if not isinstance(spec.get(dim), list) or not 1 <= len(spec[dim]) <= 3:
                raise UserError(f"{here}: {dim} must be a list of 1 to 3 expressions, e.g. {dim} = [\"tile\", 1, 1]")
        workspace_names = set(data.get("workspace", {}))
        args = tuple(spec.get("args", ("x", "w", "y", "batch")))
        bad_args = [a for a in args if a not in {"x", "w", "y", "batch"} | workspace_names]
        if bad_args:
            raise UserError(f"{where(bad_args[0])}: launch {index} takes {bad_args[0]!r}, which is no buffer: x, w, "
                            f"y, batch or a [workspace] entry ({', '.join(sorted(workspace_names)) or 'none'})")
        launches.append((str(spec.get("kernel", f"conv2d_{name}")),
                         tuple(_check(e, where(str(e)), allowed) for e in spec["grid"]),
                         tuple(_check(e, where(str(e)), allowed) for e in spec["block"]),
                         _check(spec.get("dynamic_smem", 0), where("dynamic_smem") if "dynamic_smem" in spec else here,
                                allowed), args))
    if not launches:
        raise UserError(f"{toml_path}: no [[launch]] table (or family = ...): simflow cannot launch it")
    workspace = tuple((buffer, _check(e, where(f"{buffer} ="), allowed))
                      for buffer, e in data.get("workspace", {}).items())
    return DeclaredVariant(**common, launch_specs=tuple(launches), workspace_specs=workspace,
                           refusals=tuple(refusals), declared_in=str(toml_path))


@dataclass(frozen=True)
class DeclaredVariant(Variant):
    """A user's variant whose launches, workspace and refusals are the expressions of its TOML
    (simflow.kernels.user_variants reads them)."""

    launch_specs: tuple = ()  # (kernel, grid expressions, block expressions, smem expression, args)
    workspace_specs: tuple = ()  # (buffer, float-count expression)
    refusals: tuple = ()  # (when expression, reason, simulator only)
    declared_in: str = ""

    @staticmethod
    def _names(problem: Problem, params: dict, batch: int) -> dict:
        return names_for(problem, params, batch)

    def check(self, problem: Problem, params: dict) -> None:
        names = self._names(problem, params, 1)
        for when, reason, simulator in self.refusals:
            if not simulator and when(names):
                raise UserError(f"{self.name}: {reason} (refused where {when.text}: {when.where})")
        for kernel, _, block, _, _ in self.launch_specs:
            dims = tuple(e.whole(names, f"{kernel} block") for e in block)
            check_threads(dims + (1,) * (3 - len(dims)), GENERIC_LIMITS,
                          f"change the block of {kernel} in {self.declared_in}")

    def launches(self, kernel: Kernel, batch: int) -> list[Launch]:
        names = self._names(kernel.problem, kernel.params, batch)

        def dims(exprs, what: str) -> tuple[int, int, int]:
            values = tuple(e.whole(names, what) for e in exprs)
            return values + (1,) * (3 - len(values))

        return [Launch(kernel=name, grid=dims(grid, f"{name} grid"), block=dims(block, f"{name} block"),
                       dynamic_smem=smem.whole(names, f"{name} dynamic_smem"), args=args)
                for name, grid, block, smem, args in self.launch_specs]

    def workspace(self, kernel: Kernel, batch: int) -> dict[str, int]:
        names = self._names(kernel.problem, kernel.params, batch)
        return {buffer: e.whole(names, f"workspace {buffer}") for buffer, e in self.workspace_specs}

    def smem_floats(self, problem: Problem, params: dict) -> int:
        return self.launch_specs[0][3].whole(self._names(problem, params, 1), "dynamic_smem") // 4

    def render(self, problem: Problem, params: dict | None = None) -> Kernel:
        kernel = super().render(problem, params)
        names = self._names(problem, kernel.params, 1)
        for when, reason, simulator in self.refusals:
            if simulator and when(names):
                refused = f"refused:{reason} (refused in the simulator where {when.text}: {when.where})"
                return dataclasses.replace(kernel, features=(refused, *kernel.features))
        return kernel
