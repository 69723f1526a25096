"""What a person reads in a terminal: a run's record as text, and the plain tables the commands print. The
command line (cli.py) parses and calls simflow.api; what it prints of the answers is made here."""

from __future__ import annotations

import math

from .backends import backend_class, known_backend
from .kernels.variants import show_value


def table(rows: list[dict]) -> str:
    import pandas as pd

    if not rows:
        return "(nothing)"
    with pd.option_context("display.max_colwidth", 120, "display.width", 250):
        return pd.DataFrame(rows).fillna("").to_string(index=False)


def params_text(params: dict) -> str:
    return " ".join(f"{k}={show_value(v)}" for k, v in params.items())


def metric_rows(metrics: dict, units: dict, prefix: str = "") -> list[dict]:
    """metric / value / unit rows of a run's metrics (`prefix` finds the units of one kernel's)."""
    return [{"metric": k, "value": f"{v:.6g}" if isinstance(v, float) else v, "unit": units.get(prefix + k, "")}
            for k, v in metrics.items()]


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
    if shown:
        lines += _shown_lines(result, shown)
    else:
        groups = result.split_metrics()
        for kernel, values in groups.items():
            rows = metric_rows(values, result.units, f"{kernel}." if kernel else "")
            lines.append((f"{kernel}:\n" if kernel else "") + table(rows))
        lines.append(f"environment: {', '.join(f'{k}={v}' for k, v in result.environment.items())}")
    lines.append(f"run: {result.run_id}")
    lines += [f"{key}: {path}" for key, path in result.artifacts.items() if key in ("run_dir", "log")]
    return "\n".join(lines)


def _shown_lines(result, shown: tuple[str, ...]) -> list[str]:
    """The backend's shown metrics, a column per kernel; the rest of the record is in `simflow show`."""
    import pandas as pd

    groups = result.split_metrics()
    run_level = groups.pop("", {})
    if not groups and result.kernels:  # one kernel: its stats are the unprefixed ones
        groups = {result.kernels[0]: run_level}
    values = {kern: {n: v for n, v in metrics.items() if n in shown} for kern, metrics in groups.items()}
    lines = []
    if any(values.values()):
        with pd.option_context("display.width", 200, "display.float_format", "{:.6g}".format):
            lines.append(pd.DataFrame(values).reindex([n for n in shown if any(n in v for v in values.values())])
                         .to_string())
    lines += [f"{key}: {result.metrics[key]:.4g}" for key in ("sim_wall_s", "rel_error") if key in result.metrics]
    lines += [f"{key}: {value} (what caps the CTAs per SM, so the theoretical occupancy)"
              for key, value in result.environment.items() if key.split(".")[-1] == "cta_limited_by"]
    return lines


def _estimate_lines(result, shown: tuple[str, ...]) -> list[str]:
    """A sampled simulation's estimate: each shown value with its bound, what was simulated."""
    est, rows = result.estimate, []
    for name in [n for n in (shown or tuple(result.metrics)) if n in result.metrics]:
        value, bound = result.metrics[name], result.bound(name)
        rel = f"{100 * bound / abs(value):.2g} %" if value and not math.isnan(bound) else ""
        rows.append({"metric": name, "estimate": f"{value:.6g}", "bound": "" if math.isnan(bound) else f"{bound:.3g}",
                     "bound %": rel, "unit": result.units.get(name, "")})
    return [table(rows),
            f"sampled {est['spec']}: batches {', '.join(map(str, est['batches']))} (probe: 1 image; a wave holds "
            f"{est['wave_images']:.3g} images) of {result.problem.B}, {100 * est['fraction']:.3g} % of the images "
            f"simulated, in {est['wall_s']:.0f} s",
            f"run: {result.run_id} (samples: {', '.join(est['runs'])}; probe {est['probe']})"]


def variants_text(data: list[dict]) -> str:
    """`simflow variants`: each variant, its parameters, and what each backend that refuses anything says of it."""
    from .backends.base import Backend

    lines = []
    for v in data:
        lines.append(f"{v['variant']}: {v['summary']}")
        for p in v["params"]:
            host = " [host side: same kernel code]" if p["host"] else ""
            lines.append(f"    {p['name']} = {'|'.join(p['choices'])} (default {p['default']}){host}: {p['help']}")
        for name, support in v["backends"].items():
            cls = backend_class(name)
            if cls.support.__func__ is Backend.support.__func__:
                continue  # a backend that refuses no variant by itself says nothing here
            refused = ", ".join(f"{r['param']}={r['value']}" for r in support["refuses"])
            forms = ", ".join(support.get("needs_wmma_forms", []))
            reason = f" ({support['reason']})" if support["reason"] else ""
            lines.append(f"    {cls.title or name}: " + (f"runs it{reason}" if support["accepts_defaults"] else
                                                        f"refuses it{reason}")
                         + (f" where the build computes {forms} correctly (simflow doctor)" if forms else "")
                         + (f"; refuses {refused}" if refused else ""))
    return "\n".join(lines)


def problems_text(rows: list[dict], suite_name: str | None, gflop: float) -> str:
    from .kernels.problems import SUITE_NOTES, SUITES

    if suite_name:
        tail = f"suite {suite_name}: {SUITE_NOTES[suite_name]}; {len(rows)} layers, {gflop:.1f} GFLOP in all"
    else:
        tail = "suites (simflow problems --suite NAME): " + "; ".join(f"{n}: {SUITE_NOTES[n]}" for n in SUITES)
    return table(rows) + "\n" + tail


def runs_text(runs) -> str:
    """`simflow runs`: a line per run, its backend's headline figure."""
    from .backends.base import headline

    rows = []
    for r in runs:
        cls = known_backend(r.backend)
        speed = headline(cls, r.metrics) if cls else ""
        rows.append({"id": r.id, "variant": r.variant, "params": params_text(r.params),
                     "problem": r.problem.name, "backend": r.backend + (f" {r.config}" if r.config else ""),
                     "status": r.status + (" (sampled estimate)" if r.sampled else "")
                     + ("" if r.stored else " (not stored: simflow import its folder)"), "figure": speed})
    return table(rows)


def show_text(run) -> str:
    """`simflow show`: everything a stored run recorded."""
    lines = [f"run {run.id} ({run.created}): {run.variant} [{params_text(run.params)}] on {run.problem.describe()}",
             f"backend {run.backend} ({run.runner}{', config ' + run.config if run.config else ''}): {run.status}"
             + (f"\nreason: {run.reason}" if run.reason else ""),
             f"fingerprint {run.fingerprint}, seed {run.seed}, simflow {run.simflow_version}"]
    rows = metric_rows(run.metrics, run.units)
    if run.sampled:
        from .analysis.compare import estimate_text

        lines.append(f"ESTIMATE from sampled simulation ({estimate_text(run)}); probe {run.estimate['probe']}, "
                     f"samples {', '.join(run.estimate['runs'])}; each metric's bound is the absolute error expected")
        for row in rows:
            bound = run.bound(row["metric"])
            row["bound"] = "" if math.isnan(bound) else f"{bound:.3g}"
    lines.append(table(rows))
    config = {"config": run.config, "config_key": run.config_key} if run.config else {}  # the job's, beside the run's
    lines.append("environment: " + ", ".join(f"{k}={v}" for k, v in sorted({**run.environment, **config}.items())))
    lines += [f"{kind}: {path}" for kind, path in run.artifacts.items()]
    return "\n".join(lines)


def check_text(report) -> str:
    """`simflow check`'s summary: the toolkits, every variant's row, each backend present or how to get it."""
    lines = ["", "toolkits: " + ("; ".join(report.toolkits) or "none found"), table(report.rows), "", "backends:"]
    for name, b in report.backends.items():
        lines.append(f"  {name}: {'present' if b['available'] else 'ABSENT'}: {b['detail']}")
        if not b["available"] and b["how_to_get"]:
            lines.append(f"      how to get it: {b['how_to_get']}")
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


def trial_text(trial) -> str:
    """One configuration `simflow tune` tried."""
    value = "refused" if trial.status == "refused" else (
        f"{trial.value:.6g}" if trial.status == "passed" else trial.status)
    return f"  {'ran   ' if trial.measured else 'cached'} {trial.variant} {params_text(trial.params)}: {value}"


def tune_text(result) -> str:
    """A tuned layer: how much of its space was tried, and the best configuration."""
    best, summary = result.best, result.as_dict()
    return (f"{result.problem.name}: {summary['tried']} of {result.space} configurations tried ({summary['measured']} "
            f"measured, {summary['from_cache']} from the store, {summary['refused']} refused); {result.stopped}\n"
            + "  best: " + (f"{best.variant} {params_text(best.params)}: {result.metric} {best.value:.6g} "
                            f"(run {best.run_id})" if best else "none passed"))


def parse_text(table, logs: list[dict], every_column: bool) -> str:
    """`simflow parse`: each log's status and build, then the per-kernel summary (every column with --all)."""
    from .sim.catalogue import SUMMARY

    lines = []
    for facts in logs:
        lines.append(f"{facts['log']}: {facts['status']}" + (f" ({facts['reason']})" if facts["reason"] else ""))
        if facts["build"]:
            lines.append(f"  simulator {facts['simulator_version']} [{facts['build']}], {facts['kernels']} kernel "
                         "launch(es)")
    if len(table):
        ident = [c for c in ("log", "launch_uid", "launches", "kernel") if c in table.columns]
        keep = ident + [c for c in ["complete", "regs", "cta_per_core", "cta_limited_by", *SUMMARY]
                        if c in table.columns]
        shown = table if every_column else table[keep]
        lines.append((shown.drop(columns=["log"]).set_index("kernel").T if len(logs) == 1 else shown).to_string())
    return "\n".join(lines)


def findings_text(findings) -> str:
    """`simflow doctor`: each part, found or not, and how to get what is missing."""
    lines = []
    for f in findings:
        lines.append(f"[{'ok' if f.found else '--'}] {f.component}: {f.detail}")
        if not f.found and f.how_to_get:
            lines.append(f"       how to get it: {f.how_to_get}")
    return "\n".join(lines)


def comparison_text(result, fmt: str, by: str, baseline: str | None) -> str:
    """`simflow compare`: each like-with-like table in `fmt` (table, markdown, csv, html, json), titled with what
    it groups by and its baseline."""
    import json

    from .analysis.compare import render

    def title(t) -> str:
        missing = "" if t.baseline_found else f" ({baseline} is not in this table)"
        return f"{t.title}: by {by}, baseline {t.baseline}{missing}"

    if fmt == "json":
        tables = [{**json.loads(render(t.frame, "json", title(t))), "baseline": t.baseline} for t in result.tables]
        return json.dumps({**tables[0], "left_out": result.left_out} if len(tables) == 1 else
                          {"tables": tables, "left_out": result.left_out}, indent=2) + "\n"
    return "\n".join(render(t.frame, fmt, title(t)) for t in result.tables)


def parse_notes(table, logs: list[dict]) -> list[str]:
    """What `simflow parse` says on stderr: the parser's notes, and which launches were aggregated."""
    lines = []
    for facts in logs:
        lines += [f"simflow: note: {facts['log']}: {note}" for note in facts["notes"]]
        if facts["aggregated"]:
            rows = int((table["log"] == facts["log"]).sum())
            lines.append(f"simflow: aggregated {facts['kernels']} launches into {rows} kernels: "
                         f"{', '.join(facts['aggregated'])}; counts summed, rates weighted by cycles, miss rates "
                         "recomputed, whole-process figures the last launch's")
    return lines


def parse_json(table, logs: list[dict]) -> str:
    """`simflow parse --json`: a log's facts and its per-kernel records (several logs: {"logs": [...]})."""
    import json

    records = [{**{k: v for k, v in facts.items() if k != "aggregated"},
                "per_kernel": json.loads(table[table["log"] == facts["log"]].drop(columns=["log"])
                                         .to_json(orient="records")) if "log" in table else []}
               for facts in logs]
    return json.dumps(records[0] if len(records) == 1 else {"logs": records}, indent=2)
