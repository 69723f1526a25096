"""`simflow report`: one self-contained HTML page and its markdown twin, both rendered by Jinja2 from one model
of the report (templates/report.html.j2 and report.md.j2). Per comparison table: the table (units in the
headers, 4 significant digits, better and worse coloured), a figure per metric and the speed-up, explain's
account of the baseline against each group with its verdict, each multi-kernel run kernel by kernel, and the
simulator's progress over simulated cycles with the launch latency shaded; then GPU and simulator side by
side and simulator against hardware counters where both exist. Figures are SVG written by simflow.analysis.svg:
embedded in the page (hover values, legends that hide a series), and beside it as files for the markdown."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ..errors import UserError
from ..registry import backend_class, backend_names, known_backend
from ..results.folders import write_text
from ..results.metrics import better, speed_metric, stand_in
from ..results.store import StoredRun
from ..tables import demangle
from . import svg
from .compare import DEFAULT_THRESHOLD, comparison, short_labels

MAX_METRIC_PLOTS = 8
MAX_INTERVAL_RUNS = 8
MAX_EXPLAINED_TERMS = 4
INTERVAL_PANELS = [("ipc", "IPC (thread insn/cycle)", 1.0), ("occupancy", "occupancy (%)", 1.0),
                   ("l1d_hit_rate", "L1D hit rate (%, tag lookups)", 100.0)]


@dataclass
class Grid:
    """A table as both templates draw it: headers, and rows of (text, css class) cells."""
    caption: str
    headers: list[str]
    rows: list[list[tuple[str, str]]]
    css: str = ""  # a class of the table itself ('summary': the first a reader sees)


@dataclass
class Figure:
    name: str  # its file, NAME.svg, beside the page
    title: str
    svg: str


@dataclass
class Section:
    title: str
    anchor: str = ""  # its id in the page, for the contents (set by write_report)
    notes: list[str] = field(default_factory=list)
    grids: list[Grid] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    explained: list[dict] = field(default_factory=list)  # {title, verdict, grid}
    subsections: list[Section] = field(default_factory=list)


def write_report(runs: list[StoredRun], folder: Path, by: list[str], metrics: list[str] | None = None,
                 baseline: str | None = None, *, all_statuses: bool = False) -> list[Path]:
    """Write index.html, report.md and the figures (SVG) into `folder`; returns their paths. all_statuses: runs
    that did not pass join the tables and are listed with their reasons."""
    import jinja2

    if not runs:
        raise UserError("no stored run matches the filters; 'simflow runs' lists what is stored")
    result = comparison(runs, by, metrics, baseline, all_statuses=all_statuses)
    sections, speedups = [], {}
    if all_statuses and (failed := _not_passed(runs)):
        sections.append(failed)
    for number, table in enumerate(result.tables):
        sections.append(_table_section(table, runs, f"{table.backend or 'mixed'}-{number}", speedups))
    sections += _side_by_side(speedups)
    sections += [s for s in [correlation_section(runs)] if s]
    intro = [f"{len(runs)} runs, grouped by {','.join(by)}; made {datetime.now(UTC):%Y-%m-%d %H:%M} UTC."]
    intro += [line for line in (result.split, result.left_out) if line]
    intro += [f"Simulator and GPU disagree: {line}" for line in result.disagree]
    for number, s in enumerate(sections):
        s.anchor = f"s{number}"
        for sub_number, part in enumerate(s.subsections):
            part.anchor = f"s{number}-{sub_number}"
    figures = [f for s in sections for part in (s, *s.subsections) for f in part.figures]
    names = [f.name for f in figures]
    if len(set(names)) != len(names):
        raise AssertionError(f"two figures share a file name: {names}")
    env = jinja2.Environment(loader=jinja2.PackageLoader("simflow.analysis", "templates"),
                             autoescape=jinja2.select_autoescape(["html.j2"]), trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    model = {"intro": intro, "sections": sections, "toggle_script": svg.TOGGLE_SCRIPT,
             "contents": [(s.title, s.anchor, [(p.title, p.anchor) for p in s.subsections]) for s in sections]}
    folder.mkdir(parents=True, exist_ok=True)
    page, markdown = folder / "index.html", folder / "report.md"
    write_text(page, env.get_template("report.html.j2").render(model))
    write_text(markdown, env.get_template("report.md.j2").render(model))
    written = []
    for figure in figures:
        path = folder / f"{figure.name}.svg"
        write_text(path, figure.svg + "\n")
        written.append(path)
    return [page, markdown, *written]


def _not_passed(runs: list[StoredRun]) -> Section | None:
    """The runs that did not pass, each with its status and reason."""
    rows = [[(run.id, "label"), (run.label(["variant", *run.params]), ""), (run.problem.describe(), ""),
             (run.status, "worse"), (run.reason, "")] for run in runs if run.status != "passed"]
    if not rows:
        return None
    return Section(f"Runs that did not pass ({len(rows)})", grids=[Grid("each with the reason it gave",
                                                                       ["run", "job", "problem", "status", "reason"],
                                                                       rows)])


def _units(runs: list[StoredRun]) -> dict[str, str]:
    units: dict[str, str] = {}
    for run in runs:
        for name, unit in run.units.items():
            if unit:
                units.setdefault(name, unit)
    return units


def _mark(name: str, ratio: float) -> str:
    """better / worse for a value over the baseline's, by the metric's direction ('' within the threshold)."""
    direction = "higher" if name == "speedup" else better(name)
    if math.isnan(ratio) or not direction or abs(ratio - 1) <= DEFAULT_THRESHOLD:
        return ""
    return "better" if (ratio > 1) == (direction == "higher") else "worse"


def _grid(frame, label_of: dict[str, str], units: dict[str, str], caption: str, baseline: str = "") -> Grid:
    """The table as cells; each value marked better or worse than the baseline group's, also where the baseline's
    is 0 (bank conflicts 0 -> 1152 is worse, though no ratio exists)."""
    base = next((r for r in frame.to_dict(orient="records") if r.get("group") == baseline), {})
    headers, rows = [], []
    for column in frame.columns:
        if column.endswith(" /base"):
            headers.append(f"{column.removesuffix(' /base')} / baseline")
        elif column == "group":
            headers.append("group")
        else:
            headers.append(f"{column} ({units[column]})" if units.get(column) else column)
    for record in frame.to_dict(orient="records"):
        row = []
        for column, value in record.items():
            if column == "group":
                row.append((label_of.get(value, value), "label"))
            elif isinstance(value, float):
                ratio = value if column.endswith(" /base") or column == "speedup" else record.get(f"{column} /base",
                                                                                                  math.nan)
                name = column.removesuffix(" /base")
                if math.isnan(ratio) and base.get(name) == 0 and record.get(name):  # from zero: up without ratio
                    ratio = math.inf if record[name] > 0 else -math.inf
                row.append((svg.number(value), f"num {_mark(name, ratio)}".strip()))
            else:
                row.append(("" if value is None else str(value), ""))
        rows.append(row)
    return Grid(caption, headers, rows)


SUMMARY = ("gpu_sim_cycle", "time_ms", "gpu_ipc", "gflops", "gpu_occupancy", "L1D_total_cache_misses",
           "gbs", "gpgpu_n_shmem_bkconflict")  # what a profiler shows first, where a backend has it
SUMMARY_METRICS = 5


def _summary(frame, label_of: dict[str, str], units: dict[str, str], base: str, backend: str) -> Grid:
    """What a reader looks at first, narrow enough for a 1280 px page: the speed-up, then the key metrics
    (cycles or time, IPC, occupancy, misses), a group a row, each coloured against the baseline."""
    from ..results.metrics import default_metrics

    metrics = [c for c in frame.columns if c not in ("group", "run", "status", "speedup", "estimated")
               and not c.endswith(" /base")]
    key = [m for m in (*SUMMARY, *(default_metrics(backend) if backend else ()), *metrics)
           if m in metrics]
    key = list(dict.fromkeys(key))[:SUMMARY_METRICS]
    columns = ["group", *(["speedup"] if "speedup" in frame.columns else []), *key,
               *(f"{m} /base" for m in key if f"{m} /base" in frame.columns)]
    grid = _grid(frame[columns], label_of, units, "summary: the speed-up first, then the key metrics (green: "
                 "better than the baseline, red: worse)", base)
    shown = [i for i, h in enumerate(grid.headers) if not h.endswith(" / baseline")]  # ratios: in the table below
    return Grid(grid.caption, [grid.headers[i] for i in shown], [[row[i] for i in shown] for row in grid.rows],
                "summary")


def _transposed(grid: Grid) -> Grid:
    """A metric a row, a group a column: each cell the value, and where the table has it, its ratio (x0.92)."""
    groups = [row[0][0] for row in grid.rows]
    headers = grid.headers
    index = {h: i for i, h in enumerate(headers)}
    rows = []
    for i, header in enumerate(headers[1:], 1):
        if header.endswith(" / baseline"):
            continue
        name = header.split(" (")[0]
        ratio = index.get(f"{name} / baseline")
        cells = []
        for row in grid.rows:
            text, css = row[i]
            if ratio is not None and row[ratio][0] not in ("", "n/a"):
                text, css = f"{text} (x{row[ratio][0]})", row[ratio][1] or css
            cells.append((text, css))
        rows.append([(header, "label"), *cells])
    return Grid(grid.caption, ["metric", *groups], rows)


def _table_section(table, runs: list[StoredRun], slug: str, speedups: dict) -> Section:
    frame, base = table.frame, table.baseline
    table_runs = [r for r in runs if r.id in set(frame["run"])]
    by_id = {r.id: r for r in table_runs}
    label_of = short_labels(list(frame["group"]))
    units = _units(table_runs)
    section = Section(f"{table.title}: baseline {label_of[base]}")
    if not table.baseline_found:
        section.notes.append(f"The baseline asked for is not in this table; its first group, {label_of[base]}, "
                             "stands for it.")
    section.grids.append(_summary(frame, label_of, units, base, table.backend))
    section.grids.append(_transposed(_grid(frame, label_of, units, "every metric (a row each), each group's value "
                                                                   "and its ratio over the baseline's (green: "
                                                                   "better, red: worse, past 2 %; from a baseline "
                                                                   "of 0 too)", base)))
    labels = [label_of[g] for g in frame["group"]]
    if "speedup" in frame and table.backend:
        speed = speed_metric(table.backend)
        section.figures.append(Figure(f"{slug}-speedup", "speed-up", svg.bars(
            labels, list(frame["speedup"]), title=f"Speed-up over the baseline (orange), from {speed}: higher is "
                                                  "faster", highlight=label_of[base], reference=1.0,
            axis=f"baseline {speed} / {speed}")))
        for group, value in zip(frame["group"], frame["speedup"], strict=True):
            speedups.setdefault(table.identity[group], {"label": label_of[group]})[table.backend] = value
    names = [c for c in frame.columns if c not in ("group", "run", "status", "speedup", "estimated")
             and not c.endswith(" /base")][:MAX_METRIC_PLOTS]
    for name in names:
        direction = better(name)
        section.figures.append(Figure(f"{slug}-{_safe(name)}", name, svg.bars(
            labels, [float(v) for v in frame[name]], title=f"{name}" + (f" ({direction} is better)" if direction
                                                                        else "") + "; the baseline in orange",
            unit=units.get(name, ""), highlight=label_of[base], axis=units.get(name, "") or name)))
    section.grids.append(_launches(frame, by_id, label_of, base))
    slots = _slot_shares(frame, by_id, label_of)
    if slots:
        section.figures.insert(1, Figure(f"{slug}-issue-slots", "issue slots", slots))
    section.explained += _explained(table, by_id, label_of)
    kernels = _per_kernel(table_runs, label_of, {r: g for g, r in zip(frame["group"], frame["run"], strict=True)})
    if kernels:
        section.subsections.append(kernels)
    over = _interval_section(table, table_runs, label_of, f"{slug}-over-cycles")
    if over:
        section.subsections.append(over)
    return section


def _launches(frame, by_id: dict[str, StoredRun], label_of: dict[str, str], base: str) -> Grid:
    """Each group's launch and config: grid, block, registers, shared memory, the simulator config and the
    options its log printed other than the baseline's, and where its rendered source and log are."""
    from ..sim.log_import import config_changes

    groups = dict(zip(frame["group"], frame["run"], strict=True))
    base_run = by_id.get(groups.get(base, ""))
    rows = []
    for group, run_id in groups.items():
        run = by_id.get(run_id)
        if run is None:
            continue
        logs = [r.artifacts.get("log", "") for r in (base_run, run)] if base_run else []
        changes = ("(the baseline)" if run is base_run else config_changes(*logs) or "same options"
                   if len(logs) == 2 and all(logs) and all(Path(f).is_file() for f in logs) else "")
        smem = "+".join(x for x in (_figure(run, "smem"), _figure(run, "dynamic_smem")) if x and x != "0") or "0"
        rows.append([(label_of[group], "label"), (run.environment.get("grid", ""), ""),
                     (run.environment.get("block", ""), ""), (_figure(run, "regs"), "num"), (smem, "num"),
                     (run.config or run.backend, ""), (changes, ""),
                     (_kept(run, "kernel_source"), "file"), (_kept(run, "log"), "file")])
    return Grid("launch and config of each group (simulator options: those its log printed other than the "
                "baseline's)", ["group", "grid", "block", "regs/thread", "shared memory (B)", "config",
                                "options vs the baseline", "rendered source", "log"], rows)


def _kept(run: StoredRun, kind: str) -> str:
    """A kept file's absolute path (the report links it: file://), or '' when it is not kept."""
    path = run.artifacts.get(kind, "")
    if path and not Path(path).exists() and Path(path + ".gz").exists():
        path += ".gz"  # a finished run's log is compressed after the record names it
    return str(Path(path).resolve()) if path else ""


def _figure(run: StoredRun, name: str) -> str:
    """A per-kernel figure of a run (regs, smem): one kernel's, or its kernels' joined by '/'."""
    values = [v for k, v in run.metrics.items() if k.rsplit(".", 1)[-1] == name]
    return "/".join(dict.fromkeys(svg.number(float(v)) for v in values)) if values else ""


def _slot_shares(frame, by_id: dict[str, StoredRun], label_of: dict[str, str]) -> str:
    """Where each group's issue slots went (explain's terms: issued, and lost to each cause), as shares; '' when
    the runs have no issue-slot account (a plain GPU run)."""
    from .explain import slot_account, totals

    accounts = {}
    for group, run_id in zip(frame["group"], frame["run"], strict=True):
        run = by_id.get(run_id)
        found = slot_account(run.backend, totals(run)) if run is not None else None
        if found:
            accounts[label_of[group]] = {"issued": found[0], **found[1]}
    if not accounts:
        return ""
    names = [n for n in dict.fromkeys(k for a in accounts.values() for k in a)
             if any(a.get(n, 0) > 0 for a in accounts.values())]
    return svg.shares(list(accounts), {n: [a.get(n, math.nan) for a in accounts.values()] for n in names},
                      title="Where the issue slots went: issued, or lost to each cause (simflow explain's terms)",
                      axis="share of each group's scheduler issue slots")


def _explained(table, by_id: dict[str, StoredRun], label_of: dict[str, str]) -> list[dict]:
    """explain's account of the baseline against each other group, for backends whose stats it reads."""
    from .explain import explain, verdict

    cls = known_backend(table.backend) if table.backend else None
    if cls is None or not cls.simulator_stats:
        return []
    frame, base = table.frame, table.baseline
    runs = dict(zip(frame["group"], frame["run"], strict=True))
    out = []
    for group, run_id in runs.items():
        if group == base:
            continue
        title = f"{label_of[base]} -> {label_of[group]}"
        try:
            found = explain(by_id[runs[base]], by_id[run_id])
        except UserError as exc:
            out.append({"title": title, "verdict": f"not explained: {exc}", "grid": None})
            continue
        delta = found.delta
        rows = [[(line.what, "label"), (svg.number(line.a), "num"), (svg.number(line.b), "num"),
                 (f"{line.effect:+,.0f}", "num"), (f"{100 * line.effect / delta:+.0f} %" if delta else "", "num")]
                for line in found.ranked()[:MAX_EXPLAINED_TERMS]]
        out.append({"title": title, "verdict": verdict(found),
                    "grid": Grid("the largest terms (they add up to the cycle difference with the rest: simflow "
                                 "explain)", ["term", "baseline", "this group", "cycles", "share"], rows)})
    return out


def _per_kernel(runs: list[StoredRun], label_of: dict[str, str], group_of: dict[str, str]) -> Section | None:
    """Each run with several kernels, kernel by kernel: the backend's main metrics, a column per kernel."""
    several = [r for r in runs if len(r.kernels) > 1]
    same = _same_kernel(runs, label_of, group_of)
    if not several and not same:
        return None
    section = Section("Kernel by kernel")
    for run in several:
        kernels = [k for k in run.split_metrics() if k]
        rows = [[(row["metric"] + (f" ({row['unit']})" if row["unit"] else ""), "label")]
                + [(svg.number(row[k]) if isinstance(row.get(k), float | int) else str(row.get(k, "")), "num")
                   for k in kernels]
                for row in run.by_kernel(getattr(known_backend(run.backend), "shown", ()), totals=False)]
        section.grids.append(Grid(f"{label_of.get(group_of.get(run.id, ''), run.id)} (run {run.id})",
                                  ["metric", *map(demangle, kernels)], rows))
    section.grids += same
    return section


def _same_kernel(runs: list[StoredRun], label_of: dict[str, str], group_of: dict[str, str]) -> list[Grid]:
    """A kernel that several runs launch, in one table across them: its main metrics, a column per group."""
    holders: dict[str, list[tuple[StoredRun, dict]]] = {}
    for run in runs:
        for kernel, values in run.split_metrics().items():
            kernel = kernel or (run.kernels[0] if len(run.kernels) == 1 else "")  # a one-kernel run's, unprefixed
            if kernel:
                holders.setdefault(kernel, []).append((run, values))
    grids = []
    for kernel, having in holders.items():
        if len(having) < 2:
            continue
        shown = getattr(known_backend(having[0][0].backend), "shown", ())
        names = [n for n in (shown or having[0][1]) if n in having[0][1]]
        rows = [[(n, "label"), *((svg.number(float(v[n])) if isinstance(v.get(n), float | int) else "", "num")
                                 for _, v in having)] for n in names]
        grids.append(Grid(f"kernel {demangle(kernel)} across the groups that launch it", ["metric", *(
            label_of.get(group_of.get(r.id, ""), r.id) for r, _ in having)], rows))
    return grids


def _interval_section(table, runs: list[StoredRun], label_of: dict[str, str], name: str) -> Section | None:
    """Simulator runs' IPC, occupancy and L1D hit rate over simulated cycles (their intervals.csv), one line per
    run, the kernel launch latency shaded: where in the run a difference arises."""
    import csv

    group_of = {r: g for g, r in zip(table.frame["group"], table.frame["run"], strict=True)}
    found, missing = [], []
    for run in runs:
        source = run.artifacts.get("intervals", "")
        if not source:
            continue
        if Path(source).is_file():
            with open(source, newline="") as handle:
                found.append((run, list(csv.DictReader(handle))))
        else:
            missing.append(f"{run.id} ({source} is gone)")
    section = Section(f"{table.title}: over simulated cycles")
    if not found:
        if not missing:
            return None
        section.notes.append("No intervals for: " + "; ".join(missing) + ".")
        return section
    shown = found[:MAX_INTERVAL_RUNS]
    first, rows = shown[0]
    latency = float(first.metrics.get("kernel_launch_latency", 0) or 0)
    starts = {}
    for row in rows:
        starts.setdefault((row["kernel"], row["launch"]), float(row["cycle_start"]))
    shade = [(start, start + latency) for start in starts.values()] if latency else []
    section.figures.append(Figure(name, "over simulated cycles", svg.timeline(
        [(label_of.get(group_of.get(run.id, ""), run.id), rows) for run, rows in shown], INTERVAL_PANELS,
        title=f"{table.title}: IPC, occupancy and L1D hit rate over simulated cycles (click a legend entry to hide "
              "or show it)", shade=shade, shade_label=f"kernel launch latency ({latency:g} cycles: no instruction "
                                                      "runs)")))
    totals = []
    for run, rows in shown:
        accesses, misses = run.metrics.get("L1D_total_cache_accesses"), run.metrics.get("L1D_total_cache_misses")
        hit = 100 * (1 - misses / accesses) if accesses and misses is not None else math.nan
        values = [len(rows), run.metrics.get("gpu_sim_cycle", math.nan), run.metrics.get("gpu_ipc", math.nan),
                  run.metrics.get(stand_in("gpu_occupancy", [run]), math.nan), hit]
        totals.append([(label_of.get(group_of.get(run.id, ""), run.id), "label"), (run.id, "")]
                      + [(svg.number(float(v)), "num") for v in values])
    section.grids.append(Grid("the whole runs (the simulator's own totals; occupancy: gpu_occupancy, or "
                              "sampled_occupancy where the build prints -nan)",
                              ["group", "run", "intervals", "gpu_sim_cycle (cycles)", "gpu_ipc (thread insn/cycle)",
                               "occupancy (%)", "L1D hit rate (%)"], totals))
    section.notes.append("Each run's simulator progress every few hundred cycles (intervals.csv in its folder): IPC "
                         "over the interval, occupancy at its end, L1D hit rate of its tag lookups."
                         + (f" The first {len(shown)} of {len(found)} runs are drawn." if len(found) > len(shown)
                            else "") + (" No intervals for: " + "; ".join(missing) + "." if missing else ""))
    return section


def _side_by_side(speedups: dict) -> list[Section]:
    """The same variant, every parameter and the problem equal, on two backends that time it."""
    timed = [n for n in backend_names() if backend_class(n).speed_metric]
    out = []
    for i, first in enumerate(timed):
        for second in timed[i + 1:]:
            both = [v for v in speedups.values() if first in v and second in v]
            if not both:
                continue
            a, b = backend_class(first), backend_class(second)
            ta, tb = a.title or a.name, b.title or b.name
            section = Section(f"{ta} and {tb} side by side")
            section.grids.append(Grid("speed-up over the baseline on each", ["group", f"{ta} speed-up",
                                                                           f"{tb} speed-up"],
                                      [[(v["label"], "label"), (f"{v[first]:.3f}", "num"), (f"{v[second]:.3f}", "num")]
                                       for v in both]))
            section.figures.append(Figure(f"{a.short or a.name}-vs-{b.short or b.name}", "side by side",
                                          svg.paired_bars([v["label"] for v in both],
                                                          {f"{ta}: {a.speed_metric}": [v[first] for v in both],
                                                           f"{tb}: {b.speed_metric}": [v[second] for v in both]},
                                                          title=f"The same variants: {ta} and {tb}",
                                                          axis="speed-up over the baseline (higher is faster)",
                                                          reference=1.0)))
            out.append(section)
    return out


SCATTER_METRICS = ("gpu_sim_cycle", "gpu_sim_insn", "Total_core_cache_stats_breakdown[GLOBAL_ACC_R][TOTAL_ACCESS]",
                   "L2_total_cache_accesses", "gpgpu_n_shmem_insn", "gpgpu_n_shmem_bkconflict", "total dram reads")


def correlation_section(runs: list[StoredRun]) -> Section | None:
    """Simulator vs hardware, where jobs were run both ways: per config, how well each layer's variants rank alike
    (the pairs ordered differently, named) and the time error, the counters' agreement, and a scatter per counter
    with the y = x line (benchmarks/fidelity.py writes the same scatters as SVG files)."""
    from .fidelity import correlate, fidelity

    try:
        table, points = correlate(runs)
    except UserError:
        return None
    found = fidelity(runs)
    section = Section(f"Simulator vs hardware ({points['group'].nunique()} jobs run both ways)")
    section.notes.append("Per layer: the Spearman correlation of the variants' time ranks (simulated cycles "
                         "against the GPU's time) and the pairs the two order differently; the time error is "
                         "simulated cycles over the simulated clock against the GPU's time_ms.")
    for name, frame in (("per layer", found.layers), ("per metric", table)):
        section.grids.append(Grid(name, list(frame.columns),
                                  [[(svg.number(v) if isinstance(v, float) else str(v),
                                     "num" if isinstance(v, float) else "label") for v in row]
                                   for row in frame.itertuples(index=False)]))
    stats = table.set_index(["config", "metric"])
    for (config, metric), sub in points.groupby(["config", "metric"], sort=True):
        if metric not in SCATTER_METRICS:
            continue
        row = stats.loc[(config, metric)]
        short = metric.replace("Total_core_cache_stats_breakdown", "L1").replace("[TOTAL_ACCESS]", "")
        section.figures.append(Figure(f"sim-vs-hardware-{_safe(config)}-{_safe(short)}", f"{config}: {short}",
                                      svg.scatter([(g, float(h), float(s)) for g, h, s in
                                                   zip(sub["group"], sub["hardware"], sub["simulator"], strict=True)],
                                                  title=f"{config}, {short}: Spearman {row['spearman']:.2f}, "
                                                        f"same order {row['same_order_%']:.0f} %",
                                                  x_axis="hardware (ncu)", y_axis="simulator (normalised)")))
    return section


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:60]
