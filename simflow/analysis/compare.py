"""Comparison tables over stored runs: `diff` (two runs, metric by metric) and `compare` (many runs,
one row per group, against a baseline). Both are pandas DataFrames; `render` writes them as a
terminal table, markdown, CSV, JSON or HTML."""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError
from ..registry import known_backend
from ..results.metrics import better, default_metrics, speed_metric, stand_in
from ..results.selectors import matches, parse_selector
from ..results.store import StoredRun, problem_key, shape_key
from .fidelity import disagreements, normalised

DEFAULT_THRESHOLD = 0.02  # relative change below which two values count as the same
# Bookkeeping, not performance: left out of a diff unless asked for by name.
NOT_COMPARED = {"repeats", "input_sets", "checked_elements", "gpgpu_simulation_rate_insn", "gpgpu_simulation_time",
                "gpgpu_simulation_rate_cycle", "gpgpu_silicon_slowdown",
                "sim_wall_s", "job_wall_s"}


def measuring(x: str, y: str):
    """Of two backends, the one that measures the other's metrics under the same names (hardware counters beside
    the simulator's stats: Backend.measures), or None."""
    for one, other in ((x, y), (y, x)):
        cls = known_backend(one)
        if cls is not None and cls.measures and cls.measures == other:
            return cls
    return None


def comparable(a: StoredRun, b: StoredRun) -> str:
    """'' when a diff of the two means something, else why not. A model's run and a run that measures it (a
    simulator run and a hardware-counter run) of the same problem compare on the metrics both have, normalised
    (the measuring backend's `aligned`)."""
    if a.id != b.id and (why := problem_differs(a, b)):
        return why
    if measuring(a.backend, b.backend):
        return ""
    if a.backend != b.backend:
        return f"backend differs ({a.backend} vs {b.backend})"
    if a.config_key != b.config_key:
        return f"simulator config differs ({a.config} vs {b.config}{_option_changes(a, b)})"
    if a.config_hash and b.config_hash and a.config_hash != b.config_hash:
        return (f"the simulator read different config files (hash {a.config_hash} vs {b.config_hash}): "
                "another simulator install or version")
    return ""


def problem_differs(a: StoredRun, b: StoredRun) -> str:
    """'' when the two ran one problem, else why not, naming both: a different shape or label, or a problem that
    is unknown (a log imported without a problem= label could have run anything)."""
    ka, kb = problem_key(a.problem), problem_key(b.problem)
    if ka is not None and ka == kb:
        return ""
    if ka is not None and kb is not None:
        return f"problem differs (A: {a.problem.describe()}; B: {b.problem.describe()})"
    sides = "; ".join(f"{x}: " + ("a log imported without -l problem=NAME" if key is None else run.problem.describe())
                      for x, key, run in (("A", ka, a), ("B", kb, b)))
    return f"problem unknown ({sides}); label a log's problem when importing it"


def _option_changes(a: StoredRun, b: StoredRun) -> str:
    """': -option A -> B, ...' from the two runs' logs (the options the simulator printed), when both are kept."""
    from ..sim.log_import import config_changes

    logs = [run.artifacts.get("log", "") for run in (a, b)]
    if not all(logs) or not all(Path(log).is_file() for log in logs):
        return ""
    changes = config_changes(*logs)
    return f": {changes}" if changes else ""


def estimate_text(run: StoredRun) -> str:
    """How a sampled run's metrics were estimated, in one phrase (see simflow.sim.sampling)."""
    est = run.estimate
    cycles, bound = _num(run.metrics.get("gpu_sim_cycle")), run.bound("gpu_sim_cycle")
    rel = f"; cycles +/-{100 * bound / cycles:.2g} %" if cycles and not math.isnan(bound) else ""
    cut = f" on 1/{est['scale']} of the GPU" if est.get("scale", 1) > 1 else ""
    return (f"{est['spec']}: batches {','.join(map(str, est['batches']))}{cut} of {run.problem.B}, "
            f"{100 * est['fraction']:.3g} % of the images simulated{rel}")


def _bound_pct(run: StoredRun, name: str, value: float) -> float:
    bound = run.bound(name)
    return 100 * bound / abs(value) if value and not math.isnan(value) and not math.isnan(bound) else math.nan


def _num(value) -> float:
    return math.nan if value is None else float(value)


# The smallest change that counts, by unit, beside the relative threshold: a latency of 6 -> 7 cycles is +17 % and
# noise. Counts without a unit (misses, bad elements) have none: one more wrong element is a change.
FLOORS = {"cycles": 4, "scheduler cycles": 4, "thread insn": 32, "warp insn": 1, "%": 0.5, "thread insn/cycle": 0.5,
          "GB/s": 0.1, "ms": 0.0005, "s": 0.5, "packets": 1, "CTAs": 1, "regs/thread": 1, "B": 1}
RATE_FLOOR = 0.005  # a unitless rate (a miss rate) moves by half a point before it counts


def floor_of(unit: str, a: float, b: float) -> float:
    if unit in FLOORS:
        return FLOORS[unit]
    rate = not unit and 0 <= a <= 1 and 0 <= b <= 1 and not (float(a).is_integer() and float(b).is_integer())
    return RATE_FLOOR if rate else 0.0


def mark(name: str, a: float, b: float, threshold: float, unit: str = "") -> str:
    """same (within `threshold` relative, or within the unit's floor), better, worse, or changed (no direction)."""
    if math.isnan(a) or math.isnan(b):
        return "n/a"
    if a == b or (a != 0 and abs(b - a) / abs(a) <= threshold) or abs(b - a) <= floor_of(unit, a, b):
        return "same"
    direction = better(name)
    if not direction:
        return "changed"
    return "better" if (b < a) == (direction == "lower") else "worse"


def diff(a: StoredRun, b: StoredRun, metrics: list[str] | None = None, threshold: float = DEFAULT_THRESHOLD):
    """One row per metric: A, B, delta, ratio B/A, % change and a mark by the metric's better direction."""
    import pandas as pd

    if (pair := measuring(a.backend, b.backend)) is not None:
        return _diff_sim_hardware(a, b, metrics, pair)
    status = _diff_row("status", "", math.nan, math.nan, "passed", _status_mark(a.status, b.status))
    status.update(A=a.status, B=b.status)
    if metrics:
        names = [stand_in(m, (a, b)) for m in metrics]
        missing = [m for m in names if m not in a.metrics and m not in b.metrics]
        if missing:
            have = sorted(set(a.metrics) | set(b.metrics))
            raise UserError(f"no metric {', '.join(missing)} in either run; they have: {', '.join(have)}")
    else:
        names = [m for m in a.metrics if m in b.metrics and m.split(".", 1)[-1] not in NOT_COMPARED]
    rows = [status]
    sampled = a.sampled or b.sampled
    for name in names:
        va, vb = _num(a.metrics.get(name)), _num(b.metrics.get(name))
        unit = a.units.get(name) or b.units.get(name, "")
        row = _diff_row(name, unit, va, vb, better(name) or "-", mark(name, va, vb, threshold, unit))
        if sampled:  # an estimate's value comes with its bound; a change inside the bounds is not shown as real
            row.update({"A_bound_%": _bound_pct(a, name, va), "B_bound_%": _bound_pct(b, name, vb)})
            bounds = sum(x.bound(name) for x in (a, b) if not math.isnan(x.bound(name)))
            if row["mark"] in ("better", "worse") and abs(vb - va) <= bounds:
                row["mark"] = "within bound"
        rows.append(row)
    return pd.DataFrame(rows, columns=[*DIFF_COLUMNS, *(["A_bound_%", "B_bound_%"] if sampled else [])])


def _status_mark(a: str, b: str) -> str:
    """A run that stopped passing is a regression; one that started passing is fixed."""
    if a == b:
        return "same"
    if a == "passed":
        return "worse"
    return "better" if b == "passed" else "changed"


DIFF_COLUMNS = ["metric", "unit", "A", "B", "delta", "ratio", "change_%", "better", "mark"]


def _diff_row(name: str, unit: str, va: float, vb: float, direction: str, judged: str) -> dict:
    ratio = vb / va if va and not math.isnan(va) else math.nan
    return {"metric": name, "unit": unit, "A": va, "B": vb, "delta": vb - va, "ratio": ratio,
            "change_%": (ratio - 1) * 100 if not math.isnan(ratio) else math.nan, "better": direction,
            "mark": judged}


def _diff_sim_hardware(a: StoredRun, b: StoredRun, metrics: list[str] | None, pair):
    """A model vs what measures it: the aligned metrics, normalised, each with what differs."""
    import pandas as pd

    names = metrics or [m for m in a.metrics if m in b.metrics and m.split(".", 1)[-1] in pair.aligned]
    rows = []
    for name in names:
        info = pair.aligned.get(name.split(".", 1)[-1])
        row = _diff_row(name, info.unit if info else "", normalised(a, name, pair), normalised(b, name, pair), "-",
                        "")
        rows.append({**row, "normalisation": info.normalisation if info else ""})
    return pd.DataFrame(rows, columns=[*DIFF_COLUMNS, "normalisation"])


# Keys a group label can use besides a variant's parameters.
GROUP_KEYS = ("variant", "backend", "config", "problem", "batch", "runner", "status", "seed")


@dataclass
class Table:
    """One comparison table: runs of one backend, config and problem unless `by` or --force says otherwise."""

    title: str
    frame: object  # pandas DataFrame: group, run, status, metrics, each over the baseline, speedup
    baseline: str
    identity: dict[str, str]  # group label -> variant + every parameter + problem shape (pairs tables)
    backend: str
    baseline_found: bool = True  # False: the asked-for baseline is not in this table, its first group serves
    units: dict[str, str] = field(default_factory=dict)  # metric -> its unit ('' or absent: none)


@dataclass
class Comparison:
    tables: list[Table]
    left_out: str  # one line: what was not shown, and why ('' when nothing)
    newly_failing: list[str] = field(default_factory=list)  # jobs whose newest run failed after a pass
    split: str = ""  # why the runs make several tables, and how to put them in one ('' for one table)
    disagree: list[str] = field(default_factory=list)  # pairs the simulator and the hardware order differently

    def regressions(self, threshold: float) -> list[str]:
        return [f"newly failing: {text}" for text in self.newly_failing] + [
            f"{t.title}: {r}" if len(self.tables) > 1 else r for t in self.tables
            for r in regressions(t.frame, threshold)]


def _identity(run: StoredRun) -> str:
    return json.dumps([run.variant, run.params, json.loads(shape_key(run.problem))], sort_keys=True, default=str)


def _check_names(runs: list[StoredRun], by: list[str], metrics: list[str] | None) -> None:
    params = sorted({k for r in runs for k in r.params})
    unknown = [k for k in by if k not in GROUP_KEYS and k not in params]
    if unknown:
        raise UserError(f"unknown --by key {', '.join(unknown)}; valid keys: {', '.join([*GROUP_KEYS, *params])}")
    if metrics:
        have = sorted({m for r in runs for m in r.metrics})
        missing = [m for m in metrics if m not in have]
        if missing:
            raise UserError(f"no metric {', '.join(missing)} in the selected runs; they have: {', '.join(have)}")


def comparison(runs: list[StoredRun], by: list[str], metrics: list[str] | None = None, baseline: str | None = None,
               *, all_statuses: bool = False, force: bool = False) -> Comparison:
    """Like with like: passed runs only (unless all_statuses); one table per backend (mixing them needs
    force), per simulator config (unless `by` has config) and per problem (unless `by` has problem or
    batch); in a table, one row per group, the group told apart on every parameter that varies (the
    newest run of each), and each metric over the baseline's. A table without the baseline group is
    compared with its first group (its title says so); a baseline in no table is an error."""
    if not runs:
        raise UserError("no stored run matches; 'simflow runs' lists what is stored")
    _check_names(runs, by, metrics)
    left: list[str] = []
    failing = [] if all_statuses else newly_failing(runs)
    stale = {id(r) for r in runs if _same_run(r) in {_same_run(f) for f in failing}}
    shown = runs if all_statuses else [r for r in runs if r.status == "passed" and id(r) not in stale]
    counts = Counter(r.status for r in runs if r.status != "passed")
    if counts and not all_statuses:
        left.append(f"{counts.total()} run(s) that did not pass ("
                    + ", ".join(f"{n} {status}" for status, n in sorted(counts.items(), key=lambda c: (-c[1], c[0])))
                    + "; --all-statuses shows them)")
    if not shown:
        raise UserError("no passed run matches: " + "; ".join(left + [_failing_note(failing)] if failing else left))

    def split_key(run: StoredRun) -> tuple:
        problem = problem_key(run.problem)
        if problem is None:  # an unlabelled log is set against nothing (but with --force)
            problem = f"unknown {run.id}"
        elif {"problem", "batch"} & set(by):
            problem = ""
        return (("" if force else run.backend), ("" if force or "config" in by else run.config_key),
                ("" if force else problem))

    splits: dict[tuple, list[StoredRun]] = {}
    for run in shown:
        splits.setdefault(split_key(run), []).append(run)
    tables, older = [], 0
    for part in splits.values():
        table, dropped = _table(part, by, metrics, baseline)
        tables.append(table)
        older += dropped
    if baseline is not None and not any(t.baseline_found for t in tables):
        labels = [label for t in tables for label in t.identity]
        raise UserError(f"baseline {baseline!r} is not one of the groups: {'; '.join(labels)}")
    if older:
        left.append(f"{older} older run(s) of groups shown with their newest run")
    if failing:
        left.append(_failing_note(failing))
    return Comparison(tables, "left out: " + "; ".join(left) if left else "", [_failing_text(r) for r in failing],
                      _split_reason(list(splits.values())), disagreements(shown))


def _split_reason(parts: list[list[StoredRun]]) -> str:
    """Why the runs fall into these tables: the backend, the simulator config (its options named, from two logs
    where the names alone do not tell them apart) or the problem differs; and the option that joins them."""
    if len(parts) < 2:
        return ""
    firsts = [part[0] for part in parts]
    why = []
    if len({r.backend for r in firsts}) > 1:
        why.append(f"backends differ ({', '.join(sorted({r.backend for r in firsts}))}; --force puts them in one "
                   "table)")
    keyed = {r.config_key: r for r in firsts}
    if len(keyed) > 1:
        names = sorted({r.config or "?" for r in keyed.values()})
        detail = f"configs {', '.join(names)}"
        one, two = list(keyed.values())[:2]
        logs = [r.artifacts.get("log", "") for r in (one, two)]
        if len(names) < len(keyed) and all(logs) and all(Path(f).is_file() for f in logs):
            from ..sim.log_import import config_changes

            detail = f"same name, other options: {config_changes(*logs) or 'print-only options'}"
        why.append(f"simulator configs differ ({detail}; --by config puts them in one table)")
    unknown = sum(1 for r in firsts if problem_key(r.problem) is None)
    if len({problem_key(r.problem) for r in firsts if problem_key(r.problem) is not None}) > 1:
        why.append("problems differ (--by problem puts them in one table)")
    if unknown:
        why.append(f"{unknown} run(s) of unknown problem, each alone (label each log's problem when importing it: "
                   "simflow import-log -l problem=NAME; --force compares them anyway)")
    return f"{len(parts)} tables: " + "; ".join(why)


def short_labels(labels: list[str]) -> dict[str, str]:
    """Each group label with only the KEY=VALUE parts that differ between the groups (empty values dropped):
    'variant=global,tile=16' and 'variant=shared,tile=16' read 'variant=global' and 'variant=shared'."""
    parts = {label: [p for p in label.split(",") if p.partition("=")[2] != ""] for label in labels}
    common = set.intersection(*(set(p) for p in parts.values())) if len(labels) > 1 else set()
    keys = [p.partition("=")[0] for p in next(iter(parts.values()), [])]
    for i, key in enumerate(keys):  # a key that repeats an earlier one's value in every group (an imported log's
        for earlier in keys[:i]:   # variant is its app) says nothing more
            if all(dict(q.partition("=")[::2] for q in found).get(key) == dict(
                    q.partition("=")[::2] for q in found).get(earlier) for found in parts.values()):
                common |= {p for found in parts.values() for p in found if p.partition("=")[0] == key}
                break
    return {label: ",".join(p for p in found if p not in common) or label for label, found in parts.items()}


def _same_run(run: StoredRun) -> tuple:
    """What makes two runs the same job run again: kernel variant and parameters, shape, backend, config."""
    return run.variant, json.dumps(run.params, sort_keys=True, default=str), shape_key(run.problem), run.backend, \
        run.config_key


def newly_failing(runs: list[StoredRun]) -> list[StoredRun]:
    """The newest run of each job that failed where an older run of it passed (asv's "newly failing"): a
    comparison of passed runs alone would show the old pass and hide the failure. A run the user stopped
    (interrupted) or one still running is no failure."""
    newest: dict[tuple, StoredRun] = {}
    passed_before: set[tuple] = set()
    for run in sorted(runs, key=lambda r: r.created):
        if run.status in ("interrupted", "running"):
            continue
        key = _same_run(run)
        if key in newest and newest[key].status == "passed":
            passed_before.add(key)
        newest[key] = run
    return [run for key, run in newest.items() if key in passed_before and run.status != "passed"]


def _failing_note(failing: list[StoredRun]) -> str:
    return ("newly failing (the newest run failed where an older one passed; a regression): "
            + "; ".join(_failing_text(r) for r in failing))


def _failing_text(run: StoredRun) -> str:
    params = ",".join(f"{k}={v}" for k, v in sorted(run.params.items()))
    return f"{run.variant}[{params}] on {run.problem.name}: run {run.id} {run.status}"


def _table(runs: list[StoredRun], by: list[str], metrics: list[str] | None, baseline: str | None):
    import pandas as pd

    def varies(key: str) -> bool:  # a parameter varies when one variant's runs differ in it
        if key in GROUP_KEYS:
            return len({r.value(key) for r in runs}) > 1
        return any(len({r.value(key) for r in runs if r.variant == v and key in r.params}) > 1
                   for v in {r.variant for r in runs})

    candidates = ["variant", *sorted({k for r in runs for k in r.params}), "problem", "batch", "backend", "config"]
    keys = list(dict.fromkeys([*by, *(k for k in candidates if varies(k))]))  # a key once (a log's problem= label
    # is also a parameter)
    groups: dict[str, StoredRun] = {}
    for run in sorted(runs, key=lambda r: r.created):  # the newest of a group wins
        groups[run.label(keys)] = run
    backends = sorted({r.backend for r in groups.values()})
    names = metrics or [m for b in backends for m in default_metrics(b)
                        if any(m in r.metrics for r in groups.values())]
    names = list(dict.fromkeys(stand_in(m, groups.values()) for m in names))
    labels = list(groups)
    try:
        base, found = _baseline(groups, baseline), True
    except _NoBaseline:
        base, found = labels[0], False
    ref = groups[base]
    rows = []
    for label, run in groups.items():
        row = {"group": label, "run": run.id, "status": run.status}
        if any(r.sampled for r in groups.values()):  # an estimate says so, with its cycle bound
            row["estimated"] = estimate_text(run) if run.sampled else "simulated whole"
        for m in names:
            value, ref_value = _num(run.metrics.get(m)), _num(ref.metrics.get(m))
            row[m] = value
            row[f"{m} /base"] = value / ref_value if ref_value and not math.isnan(ref_value) else math.nan
        speed = speed_metric(run.backend)
        if speed and speed in run.metrics and speed in ref.metrics and run.metrics[speed]:
            row["speedup"] = ref.metrics[speed] / run.metrics[speed]
        rows.append(row)
    first = next(iter(groups.values()))
    where = [backends[0] if len(backends) == 1 else "mixed backends"]
    if "problem" not in keys and "batch" not in keys:
        where.append(f"on {first.problem.describe()}")
    if first.config and "config" not in keys:
        where.append(f"config {first.config}")
    title = " ".join(where[:2]) + (f", {where[2]}" if len(where) > 2 else "")
    problems = [problem_key(r.problem) for r in groups.values()]
    if len(set(problems)) > 1 or (len(problems) > 1 and None in problems):  # joined by --by problem or --force
        title += " (NOT LIKE WITH LIKE: " + ("unknown problems" if None in problems else "different problems") + \
            "; a speed-up here compares different work)"
    units = {m: next((r.units[m] for r in groups.values() if r.units.get(m)), "") for m in names}
    return Table(title, pd.DataFrame(rows), base, {k: _identity(r) for k, r in groups.items()},
                 backends[0] if len(backends) == 1 else "", found or baseline is None,
                 {m: u for m, u in units.items() if u}), len(runs) - len(groups)


class _NoBaseline(UserError):
    pass


def _baseline(groups: dict[str, StoredRun], baseline: str | None) -> str:
    """The group named by `baseline`: a whole label, a selector its run matches (tile=16,variant=global),
    or a VALUE one of its label's parts has. Several matches are an error; none raises _NoBaseline."""
    labels = list(groups)
    if baseline is None:
        return labels[0]
    if baseline in groups:
        return baseline
    if "=" in baseline:
        selector = parse_selector(baseline)
        found = [label for label, run in groups.items() if matches(run, selector)]
    else:
        found = [label for label in labels if any(part.split("=", 1)[-1] == baseline for part in label.split(","))]
    if len(found) == 1:
        return found[0]
    if found:
        raise UserError(f"baseline {baseline!r} matches several groups: {'; '.join(found)}; name one "
                        "(e.g. --baseline with more KEY=VALUE)")
    raise _NoBaseline(f"baseline {baseline!r} is not one of the groups: {'; '.join(labels)}")


def compare(runs: list[StoredRun], by: list[str], metrics: list[str] | None = None, baseline: str | None = None,
            **options):
    """The one table of a comparison, as (frame, baseline label); several tables are an error."""
    result = comparison(runs, by, metrics, baseline, **options)
    if len(result.tables) != 1:
        raise UserError(f"the runs make {len(result.tables)} tables: " + "; ".join(t.title for t in result.tables))
    return result.tables[0].frame, result.tables[0].baseline


def regressions(frame, threshold: float = DEFAULT_THRESHOLD) -> list[str]:
    """Rows of a diff marked worse (a status that stopped passing first), or groups of a compare slower
    than the baseline."""
    if "mark" in frame:
        return [f"{r.metric}: {r.A:g} -> {r.B:g}" if isinstance(r.A, float) else f"{r.metric}: {r.A} -> {r.B}"
                for r in frame.itertuples() if r.mark == "worse"]
    if "speedup" in frame:
        return [f"{r['group']}: speedup {r['speedup']:.3f}" for _, r in frame.iterrows()
                if not math.isnan(r["speedup"]) and r["speedup"] < 1 - threshold]
    return []
