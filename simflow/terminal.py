"""What a person reads in a terminal: a run's record as text, and the plain tables the commands print. The
command line (cli.py) parses and calls simflow.api; what it prints of the answers is made here."""

from __future__ import annotations

import math
import re
import shutil
import sys
import textwrap
import threading
import time

from .kernels.values import show_value
from .registry import backend_class, known_backend
from .tables import demangle, duration, table, width


def params_text(params: dict) -> str:
    return " ".join(f"{k}={show_value(v)}" for k, v in params.items())


def run_text(result) -> str:
    """A run as `simflow run` prints it: what ran and how it ended, its metrics (the backend's shown ones per
    kernel where it names them, an estimate's with their bounds), then where its files are."""
    lines = [f"{result.variant} [{params_text(result.params)}] on {result.problem.describe()}, backend "
             f"{result.backend}: {result.status}"]
    if result.reason:
        lines.append(f"reason: {result.reason}")
    shown = getattr(known_backend(result.backend), "shown", ())  # unknown backend: every metric
    if result.sampled:
        lines += _estimate_lines(result, shown)
        return "\n".join(lines)
    lines.append(metrics_table(result, shown))
    if shown:
        lines += [f"{key}: {result.metrics[key]:.4g}" for key in ("sim_wall_s", "rel_error") if key in result.metrics]
        lines += [f"{key}: {value} (what caps the CTAs per SM, so the theoretical occupancy)"
                  for key, value in result.environment.items() if key.split(".")[-1] == "cta_limited_by"]
    else:
        env = ", ".join(f"{k}={v}" for k, v in result.environment.items())
        lines += textwrap.wrap(f"environment: {env}", width() or 10**6, subsequent_indent="  ")
    lines.append(f"run: {result.run_id}")
    lines += [f"{key}: {path}" for key, path in result.artifacts.items() if key in ("run_dir", "log")]
    return "\n".join(lines)


def _estimate_lines(result, shown: tuple[str, ...]) -> list[str]:
    """A sampled simulation's estimate: each shown value with its bound, what was simulated."""
    est, rows = result.estimate, []
    for name in [n for n in (shown or tuple(result.metrics)) if n in result.metrics]:
        value, bound = result.metrics[name], result.bound(name)
        rel = f"{100 * bound / abs(value):.2g} %" if value and not math.isnan(bound) else ""
        rows.append({"metric": name, "estimate": value, "bound": bound,
                     "bound %": rel, "unit": result.units.get(name, "")})
    cut = f" on {est['sample_config']} (1/{est['scale']} of the GPU)" if est.get("scale", 1) > 1 else ""
    what = f"the first {', '.join(map(str, est['ctas']))} CTAs of launches of" if est.get("ctas") else "batches"
    launches = f"; one launch at a time, {len(est['launches'])} launches" if est.get("launches") else ""
    probe = "its first CTAs" if est.get("ctas") else "1 image"
    return [table(rows),
            f"sampled {est['spec']}: {what} {', '.join(map(str, est['batches']))} images{cut}{launches} (probe: "
            f"{probe}; a wave of the whole GPU holds {est['wave_images']:.3g} images) of {result.problem.B}, "
            f"{100 * est['fraction']:.3g} % of the images simulated, in {est['wall_s']:.0f} s",
            f"run: {result.run_id} (samples: {', '.join(est['runs'])}; probe {est['probe']})",
            *([f"note: {est['note']}"] if est.get("note") else [])]


def variants_text(data: list[dict]) -> str:
    """`simflow variants`: each variant, its parameters, and what each backend that refuses anything says of it,
    wrapped to the terminal at word boundaries."""
    from .backends.base import Backend

    limit, lines = width() or 10**6, []

    def add(text: str, indent: str = "") -> None:
        lines.extend(textwrap.wrap(text, limit, initial_indent=indent, subsequent_indent=indent + "    ",
                                   break_long_words=False, break_on_hyphens=False) or [indent])

    for v in data:
        add(f"{v['variant']}: {v['summary']}")
        for p in v["params"]:
            host = " [host side: same kernel code]" if p["host"] else ""
            add(f"{p['name']} = {'|'.join(p['choices'])} (default {p['default']}){host}: {p['help']}", "    ")
        for name, support in v["backends"].items():
            cls = backend_class(name)
            if cls.support.__func__ is Backend.support.__func__:
                continue  # a backend that refuses no variant by itself says nothing here
            refused = ", ".join(f"{r['param']}={r['value']}" for r in support["refuses"])
            forms = ", ".join(support.get("needs_wmma_forms", []))
            reason = f" ({support['reason']})" if support["reason"] else ""
            add(f"{cls.title or name}: " + (f"runs it{reason}" if support["accepts_defaults"] else
                                            f"refuses it{reason}")
                + (f" where the build computes {forms} correctly (simflow doctor)" if forms else "")
                + (f"; refuses {refused}" if refused else ""), "    ")
    return "\n".join(lines)


def problems_text(rows: list[dict], suite_name: str | None, gflop: float) -> str:
    from .kernels.problems import SUITE_NOTES, SUITES

    if suite_name:
        tail = f"suite {suite_name}: {SUITE_NOTES[suite_name]}; {len(rows)} layers, {gflop:.1f} GFLOP in all"
    else:
        tail = "suites (simflow problems --suite NAME): " + "; ".join(f"{n}: {SUITE_NOTES[n]}" for n in SUITES)
    return table(rows) + "\n" + tail


def runs_rows(runs) -> list[dict]:
    """`simflow runs`: a row per run, its backend's headline figure."""
    from .backends.base import headline

    rows = []
    for r in runs:
        cls = known_backend(r.backend)
        rows.append({"id": r.id, "variant": r.variant, "params": params_text(r.params),
                     "problem": r.problem.name, "backend": r.backend + (f" {r.config}" if r.config else ""),
                     "status": r.status + (" (sampled estimate)" if r.sampled else "")
                     + ("" if r.stored else " (not stored: simflow import its folder)"),
                     "figure": headline(cls, r.metrics) if cls else ""})
    return rows


def result_rows(result) -> list[dict]:
    """A run's metrics as rows (--format csv, markdown): kernel ('' for the run's own), metric, value, unit, and
    each estimate's bound."""
    rows = []
    for kernel, values in result.split_metrics().items():
        prefix = f"{kernel}." if kernel else ""
        for name, value in values.items():
            rows.append({"kernel": kernel, "metric": name, "value": value, "unit": result.units.get(prefix + name, ""),
                         **({"bound": result.bound(prefix + name)} if result.sampled else {})})
    return rows


def metrics_table(result, names: tuple[str, ...] = ()) -> str:
    """A run's metrics, a row per metric (`names`, in order, or every one): the run's value, a column per kernel,
    the unit (and an estimate's bound). A narrow terminal leaves out kernels' columns before the value and unit."""
    rows = result.by_kernel(names)
    if result.sampled:
        rows = [{**row, "bound": result.bound(row["metric"])} for row in rows]
    return table([{demangle(k): v for k, v in row.items()} for row in rows],  # every kernel fits, by its name
                 priority=("value", "unit", "bound"))


def show_text(run, every: bool = False) -> str:
    """`simflow show`: what a stored run is, its main metrics per kernel (`every`: all of them), where its files
    are."""
    lines = [f"run {run.id} ({run.created}): {run.variant} [{params_text(run.params)}] on {run.problem.describe()}",
             f"backend {run.backend} ({run.runner}{', config ' + run.config if run.config else ''}): {run.status}"
             + (f"\nreason: {run.reason}" if run.reason else ""),
             f"fingerprint {run.fingerprint}, seed {run.seed}, simflow {run.simflow_version}"]
    if run.sampled:
        from .analysis.compare import estimate_text

        lines.append(f"ESTIMATE from sampled simulation ({estimate_text(run)}); probe {run.estimate['probe']}, "
                     f"samples {', '.join(run.estimate['runs'])}; each metric's bound is the absolute error expected")
    shown = () if every else getattr(known_backend(run.backend), "shown", ())
    lines.append(metrics_table(run, shown))
    if shown:
        names = {n for values in run.split_metrics().values() for n in values}
        lines.append(f"({len(names - set(shown))} more metrics: simflow show {run.id} --all, or --format csv|json)")
    config = {"config": run.config, "config_key": run.config_key} if run.config else {}  # the job's, beside the run's
    env = ", ".join(f"{k}={v}" for k, v in sorted({**run.environment, **config}.items()))
    lines += textwrap.wrap("environment: " + env, width() or 10**6, subsequent_indent="  ")
    lines += [f"{kind}: {path}" for kind, path in run.artifacts.items()]
    return "\n".join(lines)


class CheckTable:
    """`simflow check` as it goes: a row per variant once its results are in, each result said once, every line
    within the terminal's width (120 where it has none). A result too long for its column is cut to its first
    word with a note number; the notes, the toolkits and the backends (with how to get the absent ones) follow."""

    def __init__(self, write=print, limit: int | None = None):
        self.write, self.limit = write, limit or width() or 120
        self.notes: dict[str, int] = {}
        self.widths: list[int] = []

    def __call__(self, report, row: dict | None) -> None:
        if row is None:
            self._head(report)
        else:
            self._row(row)

    def _head(self, report) -> None:
        from .kernels.variants import VARIANTS

        name = min(22, max(len("variant"), *(len(v) for v in VARIANTS)))
        fixed = name + 2 + 5
        each = max(6, (self.limit - fixed - 2 * len(report.columns)) // max(1, len(report.columns)))
        self.widths = [name, 5] + [each] * len(report.columns)
        self._line(["variant", "lines", *report.columns])
        self.write("  ".join("-" * w for w in self.widths))

    def _cell(self, text: str, width: int) -> list[str]:
        text = text.replace(", 0 B spilled", "")
        lines = textwrap.wrap(text, width) or [""]
        if len(lines) <= 2:
            return lines
        number = self.notes.setdefault(text, len(self.notes) + 1)
        return textwrap.wrap(f"{text.split()[0].rstrip(':,')} [{number}]", width)

    def _line(self, cells: list[str]) -> None:
        parts = [self._cell(c, w) for c, w in zip(cells, self.widths, strict=True)]
        for i in range(max(map(len, parts))):
            self.write("  ".join((p[i] if i < len(p) else "").ljust(w) for p, w in zip(parts, self.widths,
                                                                                      strict=True)).rstrip())

    def _row(self, row: dict) -> None:
        if "render" in row:  # refused for this problem: one note across the row
            number = self.notes.setdefault(row["render"], len(self.notes) + 1)
            self.write(f"{row['variant'].ljust(self.widths[0])}  {'-'.ljust(5)}  "
                       f"not rendered for this problem [{number}]")
            return
        columns = [k for k in row if k not in ("variant", "lines", "fingerprint")]
        self._line([row["variant"], str(row.get("lines", "")), *(str(row[c]) for c in columns)])

    def summary(self, report) -> str:
        """The notes, the toolkits, the backends and the verdict, wrapped to the width."""
        def wrap(text: str, indent: str = "    ") -> list[str]:
            return textwrap.wrap(text, self.limit, subsequent_indent=indent)

        lines = [""] if self.notes else []
        for text, number in self.notes.items():
            lines += wrap(f"[{number}] {text}")
        lines += [""] + wrap("toolkits: " + ("; ".join(report.toolkits) or "none found"))
        lines.append("backends:")
        for name, b in report.backends.items():
            lines += wrap(f"  {name}: {'present' if b['available'] else 'absent'}: {b['detail']}")
            if not b["available"] and b["how_to_get"]:
                lines += wrap(f"    how to get it: {b['how_to_get']}", "      ")
        ran = ", ".join(report.ran)
        lines += wrap(f"{len(report.rows)} variants rendered and compiled"
                      + (f", run on {ran}" if ran else "; no backend could run them (see above how to get one)")
                      + (f"; FAILED: {', '.join(report.failed)}" if report.failed else ""))
        return "\n".join(lines)


def sweep_text(report) -> str:
    lines = [f"sweep {report.name}: {len(report.stored)} run now, {len(report.cached)} from the store, "
             f"{len(report.failed)} did not pass, {len(report.errors)} could not run, {len(report.refused)} refused; "
             f"{report.wall_s:.1f} s"]
    lines += [f"  skipped {where}: {why}" for where, why in report.refused]
    lines += [f"  {run_id}: {why}" for run_id, why in report.failed]
    for jobs, error in report.grouped_errors():
        lines.append(f"  ERROR, {len(jobs)} job(s) could not run: {error}")
        lines += [f"    {job}" for job in jobs]
    return "\n".join(lines)


def sweep_rows(report) -> list[dict]:
    """A finished sweep's outcomes, a row each (--format csv, markdown)."""
    return ([{"outcome": "run", "what": r, "reason": ""} for r in report.stored]
            + [{"outcome": "from the store", "what": r, "reason": ""} for r in report.cached]
            + [{"outcome": "did not pass", "what": r, "reason": why} for r, why in report.failed]
            + [{"outcome": "could not run", "what": str(j), "reason": e} for j, e in report.errors]
            + [{"outcome": "refused", "what": str(j), "reason": why} for j, why in report.refused])


def sweep_plan_rows(sweep, planned) -> list[dict]:
    """`simflow sweep --dry-run` as data: each job, its state and why it is refused."""
    refused = {job.key: why for job, why in planned.refused}
    return [{"state": "refused" if job.key in refused else "run" if job in planned.todo else "stored",
             "job": job.describe(), "reason": f"{sweep.where(job)}: {refused[job.key]}" if job.key in refused else ""}
            for job in sweep.jobs]


def sweep_plan_text(sweep, planned) -> str:
    """`simflow sweep --dry-run`: each job's state, then the counts."""
    refused = {job.key: why for job, why in planned.refused}
    lines = []
    for job in sweep.jobs:
        state = "refused" if job.key in refused else "run    " if job in planned.todo else "stored "
        lines.append(f"{state} {job.describe()}" + (f" ({sweep.where(job)}: {refused[job.key]})"
                                                    if job.key in refused else ""))
    lines.append(f"{len(sweep.jobs)} jobs, {sweep.duplicates} duplicates removed, {len(planned.cached)} stored "
                 f"already, {len(planned.todo)} to run, {len(planned.refused)} refused")
    return "\n".join(lines)


def sampled_sweep(sweep, outcomes, wall: float) -> tuple[dict, str]:
    """A sampled sweep's estimates: as JSON, and as text."""
    data = {"name": sweep.name, "sample": sweep.sample, "wall_s": round(wall, 3), "estimates": [
        {"job": o.job.describe(), "run": o.result.run_id if o.result else None, "cached": o.cached,
         "error": o.error, **({"gpu_sim_cycle": o.result.metrics.get("gpu_sim_cycle"),
                               "gpu_sim_cycle_bound": o.result.bound("gpu_sim_cycle"),
                               "fraction": o.result.estimate["fraction"]} if o.result else {})}
        for o in outcomes]}
    done = [o for o in outcomes if o.result]
    lines = [f"sweep {sweep.name} ({sweep.sample}): {len(done)} estimate(s) ({sum(o.cached for o in done)} from the "
             f"store), {len(outcomes) - len(done)} without; {wall:.1f} s"]
    for o in outcomes:
        if o.result:
            cycles, bound = o.result.metrics.get("gpu_sim_cycle", math.nan), o.result.bound("gpu_sim_cycle")
            lines.append(f"  {o.result.run_id}  {o.job.describe()}: {cycles:.6g} +/- {bound:.3g} cycles")
        else:
            lines.append(f"  NO ESTIMATE  {o.job.describe()}: {o.error}")
    return data, "\n".join(lines)


def diff_title(a, b, why: str) -> str:
    """What a diff compares: the two runs, whether they are comparable, which values are estimates."""
    from .analysis.compare import estimate_text

    title = f"A = {a.id} ({a.label(['variant', *a.params])}), B = {b.id} ({b.label(['variant', *b.params])})"
    if why:
        title += f"  [not comparable: {why}]"
    for side, run in (("A", a), ("B", b)):
        if run.sampled:
            title += f"\n{side} is an ESTIMATE from sampled simulation ({estimate_text(run)})"
    return title


MARK_ORDER = {"worse": 0, "better": 1, "changed": 2, "within bound": 3, "same": 4, "n/a": 5}


def colour() -> bool:
    """ANSI colour on a terminal only: not into a pipe or file, not where NO_COLOR is set (no-color.org)."""
    from .settings import current

    return sys.stdout.isatty() and not current().to_file and not current().no_color


def diff_text(frame, title: str, threshold: float) -> str:
    """`simflow diff` on a terminal: the status first, then the regressions, the improvements and the other
    changes, each largest first, then what stayed the same; the mark, change and delta kept before other
    columns; regressions red and improvements green (colour()); a summary line last."""
    from .tables import render

    def size(i: int) -> float:  # how far B is from A: |log ratio|; from a zero, further than any ratio
        ratio, delta = frame["ratio"].iat[i], frame["delta"].iat[i]
        if isinstance(ratio, float) and ratio > 0:
            return abs(math.log(ratio))
        return math.inf if isinstance(delta, float) and delta and not math.isnan(delta) else -1.0

    order = sorted(range(len(frame)), key=lambda i: (frame["metric"].iat[i] != "status",
                                                     MARK_ORDER.get(frame["mark"].iat[i], 6), -size(i)))
    shown = frame.iloc[order].assign(ratio=frame["ratio"].iloc[order].map(_significant),
                                     **{"change_%": frame["change_%"].iloc[order].map(_significant)})
    text = render(shown, "table", title, priority=("mark", "change_%", "delta", "A", "B"))
    if colour():
        text = re.sub(r"(?<![\w-])worse(?![\w-])", "\033[31mworse\033[0m", text)
        text = re.sub(r"(?<![\w-])better(?![\w-])", "\033[32mbetter\033[0m", text)
    counts = {m: int((frame["mark"] == m).sum()) for m in ("worse", "better", "changed")}
    summary = f"{counts['worse']} worse, {counts['better']} better past {100 * threshold:g} %"
    if counts["changed"]:
        summary += f", {counts['changed']} changed (no better direction)"
    return text + summary + f" (of {len(frame)} rows)\n"


def _significant(value) -> object:
    """A ratio or a percentage to 4 significant digits (0.9197, +8.726), as a person reads it."""
    if isinstance(value, float) and not math.isnan(value):
        return float(f"{value:.4g}")
    return value


def trial_text(trial, state=None) -> str:
    """One configuration `simflow tune` tried; with `state` (run.tune.Progress): k of N, the best so far, the ETA."""
    unit = f" {state.unit}" if state and state.unit else ""
    value = "refused" if trial.status == "refused" else (
        f"{trial.value:.6g}{unit}" if trial.status == "passed" else trial.status)
    line = f"{'ran   ' if trial.measured else 'cached'} {trial.variant} {params_text(trial.params)}: {value}"
    if state is None:
        return "  " + line
    best = (f"best {state.best.value:.6g}{unit} ({state.best.variant} {params_text(state.best.params)})"
            if state.best else "none passed yet")
    eta = f"; ETA {duration(state.eta_s)}" if state.eta_s is not None else ""
    return f"[{state.done}/{state.total}] {line} | {best}{eta}"


def tune_text(result) -> str:
    """A tuned layer: how much of its space was tried, and the best configuration."""
    best, summary = result.best, result.as_dict()
    return (f"{result.problem.name}: {summary['tried']} of {result.space} configurations tried ({summary['measured']} "
            f"measured, {summary['from_cache']} from the store, {summary['refused']} refused); {result.stopped}\n"
            + "  best: " + (f"{best.variant} {params_text(best.params)}: {result.metric} {best.value:.6g} "
                            f"(run {best.run_id})" + (f"; computes in {best.computes}, finer than {result.precision}"
                                                      if best.computes != result.precision else "")
                            if best else "none passed"))


def parse_text(rows: list[dict], logs: list[dict], every_column: bool) -> str:
    """`simflow parse`: each log's status and build, then the per-kernel summary (every column with --all)."""
    from .sim.catalogue import SUMMARY

    lines, limit = [], width() or 10**6
    for facts in logs:
        lines += textwrap.wrap(f"{facts['log']}: {facts['status']}" + (f" ({facts['reason']})" if facts["reason"]
                                                                        else ""), limit, subsequent_indent="  ")
        if facts["build"]:
            lines += textwrap.wrap(f"  simulator {facts['simulator_version']} [{facts['build']}], {facts['kernels']} "
                                   "kernel launch(es)", limit, subsequent_indent="    ")
    if rows:
        columns = list(dict.fromkeys(k for r in rows for k in r))
        ident = [c for c in ("log", "launch_uid", "launches", "kernel") if c in columns]
        keep = ident + [c for c in ["complete", "regs", "cta_per_core", "cta_limited_by", *SUMMARY] if c in columns]
        shown = [{c: r.get(c) for c in (columns if every_column else keep)} for r in rows]
        if len(logs) == 1:  # a row per stat, a column per kernel launch
            heads = [f"{demangle(r['kernel'])}#{r['launch_uid']}" if "launch_uid" in r and len(shown) > 1
                     else demangle(r["kernel"]) for r in shown]
            lines.append(table([{"stat": c, **{h: r[c] for h, r in zip(heads, shown, strict=True)}}
                               for c in shown[0] if c not in ("log", "kernel")]))
        else:
            lines.append(table([{**r, "kernel": demangle(r["kernel"])} if "kernel" in r else r for r in shown],
                               keep=len(ident)))
    return "\n".join(lines)


def findings_text(findings) -> str:
    """`simflow doctor`: each part, found or not, and how to get what is missing, each thing said once (a cause or
    an instruction said for an earlier part is referred to, not repeated), wrapped to the terminal."""
    limit, lines, said = width() or 10**6, [], {}  # said: a sentence (or a whole text) -> the part that said it
    whole: dict[str, str] = {}

    def once(text: str, part: str) -> str:
        earlier = next((p for t, p in whole.items() if p != part and text.strip(" .;") in t), None)
        if earlier:
            return f"(as for {earlier})"
        whole.setdefault(text, part)
        kept = []
        for sentence in (s.strip() for s in re.split(r"(?<=[.;)])\s+", text) if s.strip()):
            key = sentence.rstrip(".;")
            if key in said and said[key] != part:
                if f"(as for {said[key]})" not in kept:
                    kept.append(f"(as for {said[key]})")
            else:
                said.setdefault(key, part)
                kept.append(sentence)
        return " ".join(kept)

    for f in findings:
        whole_words = {"break_long_words": False, "break_on_hyphens": False}  # paths and commands stay whole
        detail = f.detail if f.found else once(f.detail, f.component)  # what is there is said as it is
        lines += textwrap.wrap(f"[{'ok' if f.found else '--'}] {f.component}: {detail}", limit,
                               subsequent_indent="       ", **whole_words)
        if not f.found and f.how_to_get:
            lines += textwrap.wrap(f"how to get it: {once(f.how_to_get, f.component)}", limit,
                                   initial_indent="       ", subsequent_indent="       ", **whole_words)
    return "\n".join(lines)


def comparison_text(result, fmt: str, by: str, baseline: str | None) -> str:
    """`simflow compare`: each like-with-like table in `fmt` (table, markdown, csv, html, json), titled with what
    it groups by and its baseline."""
    import json

    from .tables import render

    def title(t) -> str:
        missing = "" if t.baseline_found else f" ({baseline} is not in this table)"
        return f"{t.title}: by {by}, baseline {t.baseline}{missing}"

    if fmt == "json":
        tables = [{**json.loads(render(t.frame, "json", title(t))), "baseline": t.baseline} for t in result.tables]
        return json.dumps({**tables[0], "left_out": result.left_out, "disagreements": result.disagree}
                          if len(tables) == 1 else {"tables": tables, "left_out": result.left_out,
                                                    "split": result.split, "disagreements": result.disagree},
                          indent=2) + "\n"
    if fmt == "table":  # for a terminal: groups named by what varies, the speed-up first, run ids last
        return "\n".join(render(_for_terminal(t.frame, t.units), fmt, title(t)) for t in result.tables)
    if fmt == "html":  # a page in the report's styles, each table scrolling inside the page, not the page
        import html
        from importlib.resources import files

        css = files("simflow.analysis").joinpath("templates", "report.css").read_text()
        said = (result.split, result.left_out, *result.disagree)
        notes = "".join(f'<p class="note">{html.escape(line)}</p>' for line in said if line)
        body = "".join(f'<div class="table-wrap">{render(t.frame, fmt, title(t))}</div>' for t in result.tables)
        return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>simflow compare</title>'
                f"<style>\n{css}</style></head>\n<body><h1>simflow compare</h1>{notes}{body}</body></html>\n")
    return "\n".join(render(t.frame, fmt, title(t)) for t in result.tables)


def _for_terminal(frame, units: dict[str, str]):
    """Groups named by what varies, the speed-up first, ratios to 4 significant digits, units in the headers."""
    from .analysis.compare import short_labels

    shown = frame.assign(group=frame["group"].map(short_labels(list(frame["group"]))))
    ratios = [c for c in shown.columns if c == "speedup" or c.endswith(" /base")]
    shown = shown.assign(**{c: shown[c].map(_significant) for c in ratios})
    last = [c for c in ("status", "estimated", "run") if c in shown.columns]
    first = ["group", *(["speedup"] if "speedup" in shown.columns else [])]
    shown = shown[first + [c for c in shown.columns if c not in first and c not in last] + last]
    return shown.rename(columns={c: f"{c} ({units[c]})" for c in shown.columns if units.get(c)})


def parse_notes(rows: list[dict], logs: list[dict]) -> list[str]:
    """What `simflow parse` says on stderr: the parser's notes, and which launches were aggregated."""
    lines = []
    for facts in logs:
        lines += [f"simflow: note: {facts['log']}: {note}" for note in facts["notes"]]
        if facts["aggregated"]:
            count = sum(1 for r in rows if r.get("log") == facts["log"])
            lines.append(f"simflow: aggregated {facts['kernels']} launches into {count} kernels: "
                         f"{', '.join(facts['aggregated'])}; counts summed, rates weighted by cycles, miss rates "
                         "recomputed, whole-process figures the last launch's")
    return lines


def parse_json(rows: list[dict], logs: list[dict]) -> str:
    """`simflow parse --json`: a log's facts and its per-kernel records, every column of the whole table in each
    (null where a log has none; NaN as null) (several logs: {"logs": [...]})."""
    import json

    columns = [c for c in dict.fromkeys(k for r in rows for k in r) if c != "log"]

    def clean(value):
        return None if isinstance(value, float) and math.isnan(value) else value

    records = [{**{k: v for k, v in facts.items() if k != "aggregated"},
                "per_kernel": [{c: clean(r.get(c)) for c in columns} for r in rows if r["log"] == facts["log"]]}
               for facts in logs]
    return json.dumps(records[0] if len(records) == 1 else {"logs": records}, indent=2)


class LiveSimulation:
    """`simflow sim` on a terminal: one line on stderr, redrawn twice a second from the simulator's own progress
    lines in its log as it grows: the kernel launched (k of n), simulated cycles and instructions, elapsed time."""

    def __init__(self, log, kernels: list[str], every_s: float = 0.5):
        self.log, self.kernels, self.every_s = log, list(kernels), every_s
        self.stopped = threading.Event()

    def __enter__(self):
        from tqdm import tqdm

        self.started = time.monotonic()
        columns = shutil.get_terminal_size().columns  # 80 where the terminal says 0 (a bare pseudo-terminal)
        self.bar = tqdm(total=None, bar_format="{desc}", file=sys.stderr, leave=False, ncols=columns)
        self.thread = threading.Thread(target=self._follow, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopped.set()
        self.thread.join()
        self.bar.close()

    def _follow(self) -> None:
        from .sim.log import Live

        live, rest, handle = Live(), "", None
        try:
            while not self.stopped.wait(self.every_s):
                if handle is None and self.log.is_file():
                    handle = open(self.log, encoding="utf-8", errors="replace")  # noqa: SIM115 (read as it grows)
                if handle is not None:
                    rest += handle.read()
                    *lines, rest = rest.split("\n")
                    for line in lines:
                        live.read(line)
                self.bar.set_description_str(self.line(live, time.monotonic() - self.started))
        finally:
            if handle is not None:
                handle.close()

    def line(self, live, elapsed: float) -> str:
        if not live.launched:
            return f"simflow: building and starting the simulator, {duration(elapsed)}"
        of = f" of {len(self.kernels)}" if len(self.kernels) > 1 else ""
        return (f"simflow: simulating {live.kernel} (kernel {live.launched}{of}): cycle {live.cycle:,}, "
                f"{live.insn:,} instructions, {duration(elapsed)}")
