"""`simflow report`: one self-contained HTML page (plots embedded) and a markdown twin, with the
comparison tables and plots of stored runs: each metric across groups, speed-up against the
baseline, and GPU and simulator results side by side where both exist."""

from __future__ import annotations

import base64
import html
import math
from datetime import UTC, datetime
from pathlib import Path

from ..backends import backend_class, backend_names
from ..errors import UserError
from ..results.folders import replace_with, write_text
from ..results.metrics import better, speed_metric, stand_in
from ..results.store import StoredRun
from ..tables import render
from .compare import comparison

MAX_METRIC_PLOTS = 8
STYLE = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222}
table.simflow{border-collapse:collapse;margin:1em 0;font-size:13px}
table.simflow td,table.simflow th{border:1px solid #ccc;padding:3px 8px}
table.simflow td.num{text-align:right;font-variant-numeric:tabular-nums}
table.simflow th{background:#f2f2f2} caption{text-align:left;font-weight:bold;padding:4px 0}
td.better{background:#dff0d8} td.worse{background:#f2dede} img{max-width:100%;border:1px solid #eee}
.plots{display:flex;flex-wrap:wrap;gap:12px} .plots img{width:560px}"""


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UserError("simflow report needs matplotlib: pip install 'simflow[report]'") from None
    return plt


def _bar(plt, labels: list[str], values: list[float], title: str, xlabel: str, path: Path,
         reference: float | None = None, highlight: str | None = None) -> Path:
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(labels) + 1.4))
    colors = ["#d9822b" if label == highlight else "#3b75af" for label in labels]
    shown = [0 if math.isnan(v) else v for v in values]
    bars = ax.barh(range(len(labels)), shown, color=colors)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel, fontsize=9)
    if reference is not None:
        ax.axvline(reference, color="#555", linestyle="--", linewidth=1)
    for bar, value in zip(bars, values, strict=True):
        text = "n/a" if math.isnan(value) else f"{value:.4g}"
        ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, f" {text}", va="center", fontsize=8)
    ax.margins(x=0.18)
    fig.tight_layout()
    replace_with(path, lambda tmp: fig.savefig(tmp, dpi=110, format=path.suffix[1:]))
    plt.close(fig)
    return path


def _pair_bars(plt, labels: list[str], first: list[float], second: list[float], names: tuple[str, str],
               path: Path) -> Path:
    """Paired bars of two backends' speed-ups (`names`: their titles and speed metrics, as legend labels)."""
    fig, ax = plt.subplots(figsize=(7, 0.6 * len(labels) + 2.0))
    ys = range(len(labels))
    for offset, values, label, color in ((-0.2, first, names[0], "#3b75af"), (0.2, second, names[1], "#d9822b")):
        bars = ax.barh([y + offset for y in ys], values, height=0.4, label=label, color=color)
        for bar, value in zip(bars, values, strict=True):
            ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, f" {value:.3f}", va="center", fontsize=8)
    ax.set_yticks(list(ys), labels, fontsize=8)
    ax.invert_yaxis()
    ax.axvline(1.0, color="#555", linestyle="--", linewidth=1)
    ax.set_xlabel("speed-up over the baseline (higher is faster)", fontsize=9)
    ax.set_title(f"The same variants: {names[0].split(':')[0]} and {names[1].split(':')[0]}", fontsize=10)
    ax.margins(x=0.15)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=2, frameon=False)
    fig.tight_layout()
    replace_with(path, lambda tmp: fig.savefig(tmp, dpi=110, format=path.suffix[1:]))
    plt.close(fig)
    return path


def _img(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return f'<img alt="{html.escape(path.stem)}" src="data:image/png;base64,{data}">'


def write_report(runs: list[StoredRun], folder: Path, by: list[str], metrics: list[str] | None = None,
                 baseline: str | None = None) -> list[Path]:
    """Write index.html, report.md and the PNGs into `folder`; returns their paths."""
    if not runs:
        raise UserError("no stored run matches the filters; 'simflow runs' lists what is stored")
    plt = _pyplot()
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    html_parts = [f"<h1>simflow report</h1><p>{len(runs)} runs, grouped by {html.escape(','.join(by))}; "
                  f"made {datetime.now(UTC):%Y-%m-%d %H:%M} UTC</p>"]
    md_parts = [f"# simflow report\n\n{len(runs)} runs, grouped by {','.join(by)}.\n"]
    result = comparison(runs, by, metrics, baseline)
    if result.left_out:
        html_parts.append(f"<p>{html.escape(result.left_out)}</p>")
        md_parts.append(result.left_out + "\n")
    speedups: dict[str, dict[str, float]] = {}  # run identity -> backend -> speed-up
    names_of: dict[str, str] = {}  # run identity -> the group label shown for it
    for table in result.tables:
        frame, base, backend = table.frame, table.baseline, table.backend
        title = f"{table.title}: baseline {base}"
        html_parts.append(f"<h2>{html.escape(title)}</h2>")
        html_parts.append(render(frame, "html", "values, and each over the baseline (/base)"))
        md_parts.append(f"## {title}\n\n" + render(frame, "markdown"))
        labels = list(frame["group"])
        slug = f"{backend or 'mixed'}-{len(written)}"
        plots = []
        names = [c for c in frame.columns if c not in ("group", "run", "status", "speedup")
                 and not c.endswith(" /base")][:MAX_METRIC_PLOTS]
        table_runs = [r for r in runs if r.id in set(frame["run"])]
        for name in names:
            direction = better(name)
            note = f" ({direction} is better)" if direction else ""
            unit = next((r.units.get(name, "") for r in table_runs if r.units.get(name)), "")
            plots.append(_bar(plt, labels, list(frame[name]), f"{name}{note}; baseline in orange", unit or name,
                              folder / f"{slug}-{_safe(name)}.png", highlight=base))
        if "speedup" in frame and backend:
            speed = speed_metric(backend)
            plots.insert(0, _bar(plt, labels, list(frame["speedup"]),
                                 f"speed-up over the baseline (orange), from {speed}\nhigher is faster",
                                 f"baseline {speed} / {speed}", folder / f"{slug}-speedup.png", reference=1.0,
                                 highlight=base))
            for label, value in zip(labels, frame["speedup"], strict=True):
                key = table.identity[label]
                speedups.setdefault(key, {})[backend] = value
                names_of.setdefault(key, label)
        written += plots
        html_parts.append('<div class="plots">' + "".join(_img(p) for p in plots) + "</div>")
        md_parts.append("\n".join(f"![{p.stem}]({p.name})" for p in plots) + "\n")
        over_time = _interval_section(plt, table, table_runs, folder / f"{slug}-over-cycles.png")
        if over_time:
            html_parts.append(over_time[0])
            md_parts.append(over_time[1])
            written += [over_time[2]] if over_time[2] else []
    # The same variant, every parameter and the problem equal, on two backends that time it (the GPU, the simulator).
    speedups = {names_of[k]: v for k, v in speedups.items()}
    timed = [n for n in backend_names() if backend_class(n).speed_metric]
    for i, first in enumerate(timed):
        for second in timed[i + 1:]:
            both = {label: v for label, v in speedups.items() if first in v and second in v}
            if both:
                parts = _side_by_side(plt, both, backend_class(first), backend_class(second), folder)
                html_parts.append(parts[0])
                md_parts.append(parts[1])
                written.append(parts[2])
    sim_hw = _correlation_section(plt, runs, folder)
    if sim_hw:
        html_parts.append(sim_hw[0])
        md_parts.append(sim_hw[1])
        written.append(sim_hw[2])
    page = folder / "index.html"
    write_text(page, f"<!doctype html><html><head><meta charset='utf-8'><title>simflow report</title>"
                     f"<style>{STYLE}</style></head><body>{''.join(html_parts)}</body></html>\n")
    markdown = folder / "report.md"
    write_text(markdown, "\n".join(md_parts))
    return [page, markdown, *written]


def _side_by_side(plt, both: dict, a, b, folder: Path) -> tuple[str, str, Path]:
    """Each group's speed-up on two backends (a and b: their classes), as a table and paired bars."""
    ta, tb = a.title or a.name, b.title or b.name
    labels = list(both)
    path = _pair_bars(plt, labels, [both[k][a.name] for k in labels], [both[k][b.name] for k in labels],
                      (f"{ta}: {a.speed_metric} speed-up", f"{tb}: {b.speed_metric} speed-up"),
                      folder / f"{a.short or a.name}-vs-{b.short or b.name}.png")
    rows = "".join(f"<tr><td>{html.escape(k)}</td><td class='num'>{both[k][a.name]:.3f}</td>"
                   f"<td class='num'>{both[k][b.name]:.3f}</td></tr>" for k in labels)
    page = (f"<h2>{html.escape(ta)} and {html.escape(tb)} side by side</h2><table class='simflow'><thead><tr>"
            f"<th>group</th><th>{html.escape(ta)} speed-up</th><th>{html.escape(tb)} speed-up</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>{_img(path)}")
    md = (f"## {ta} and {tb} side by side\n\n| group | {ta} speed-up | {tb} speed-up |\n| --- | ---: | ---: |\n"
          + "".join(f"| {k} | {both[k][a.name]:.3f} | {both[k][b.name]:.3f} |\n" for k in labels)
          + f"\n![{path.stem}]({path.name})\n")
    return page, md, path


MAX_INTERVAL_RUNS = 8
INTERVAL_PANELS = (("ipc", "IPC (thread insn/cycle)", 1.0), ("occupancy", "occupancy (%)", 1.0),
                   ("l1d_hit_rate", "L1D hit rate (%, tag lookups)", 100.0))


def _interval_section(plt, table, runs: list[StoredRun], path: Path) -> tuple[str, str, Path | None] | None:
    """Simulator runs' IPC, occupancy and L1D hit rate over simulated cycles (their intervals.csv), one
    line per run, with each run's totals beside: where in the run a difference arises."""
    import pandas as pd

    label_of = {run_id: label for label, run_id in zip(table.frame["group"], table.frame["run"], strict=True)}
    found, missing = [], []
    for run in runs:
        source = run.artifacts.get("intervals", "")  # what a simulator run keeps
        if not source:
            continue
        if source and Path(source).is_file():
            found.append((run, pd.read_csv(source)))
        elif source:
            missing.append(f"{run.id} ({source} is gone)")
    title = f"{table.title}: over simulated cycles"
    if not found:
        if not missing:
            return None
        note = "No intervals for: " + "; ".join(missing) + "."
        return f"<h2>{html.escape(title)}</h2><p>{html.escape(note)}</p>", f"## {title}\n\n{note}\n", None
    shown = found[:MAX_INTERVAL_RUNS]
    fig, axes = plt.subplots(len(INTERVAL_PANELS), 1, figsize=(9, 2.4 * len(INTERVAL_PANELS) + 0.8), sharex=True)
    for run, frame in shown:
        for ax, (column, _, scale) in zip(axes, INTERVAL_PANELS, strict=True):
            ax.step(frame["cycle_end"], frame[column] * scale, where="pre", linewidth=1.2, label=label_of.get(run.id))
    for ax, (_, axis_label, _) in zip(axes, INTERVAL_PANELS, strict=True):
        ax.set_ylabel(axis_label, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("simulated cycles (gaps: no SM had work, e.g. the launch latency)", fontsize=8)
    axes[0].legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, 1.35), ncol=min(4, len(shown)), frameon=False)
    fig.tight_layout()
    replace_with(path, lambda tmp: fig.savefig(tmp, dpi=110, format=path.suffix[1:]))
    plt.close(fig)
    rows = []
    for run, frame in shown:
        accesses, misses = run.metrics.get("L1D_total_cache_accesses"), run.metrics.get("L1D_total_cache_misses")
        hit = 100 * (1 - misses / accesses) if accesses and misses is not None else math.nan
        rows.append({"group": label_of.get(run.id, run.id), "run": run.id, "intervals": len(frame),
                     "gpu_sim_cycle": run.metrics.get("gpu_sim_cycle", math.nan),
                     "gpu_ipc": run.metrics.get("gpu_ipc", math.nan),
                     "occupancy %": run.metrics.get(stand_in("gpu_occupancy", [run]), math.nan),
                     "L1D hit rate %": hit})
    totals = pd.DataFrame(rows)
    note = ("Each run's simulator progress every few hundred cycles (intervals.csv in its folder): IPC over "
            "the interval, occupancy at its end, L1D hit rate of its tag lookups. The totals beside are the "
            "simulator's own figures for the whole run (occupancy: gpu_occupancy, or sampled_occupancy where the "
            "build prints -nan).")
    if len(found) > len(shown):
        note += f" The first {len(shown)} of {len(found)} runs are drawn."
    if missing:
        note += " No intervals for: " + "; ".join(missing) + "."
    page = (f"<h2>{html.escape(title)}</h2><p>{html.escape(note)}</p>" + render(totals, "html", "totals")
            + _img(path))
    markdown = f"## {title}\n\n{note}\n\n" + render(totals, "markdown") + f"\n![{path.stem}]({path.name})\n"
    return page, markdown, path


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:60]


SCATTER_METRICS = ("gpu_sim_cycle", "gpu_sim_insn", "gpgpu_n_tot_w_icount",
                   "Total_core_cache_stats_breakdown[GLOBAL_ACC_R][TOTAL_ACCESS]", "gpgpu_n_shmem_insn",
                   "gpgpu_n_shmem_bkconflict")


def _correlation_section(plt, runs: list[StoredRun], folder: Path) -> tuple[str, str, Path] | None:
    """Simulator vs hardware counters, when variants were run both ways: table and scatter plots."""
    from .compare import correlate

    try:
        table, points = correlate(runs)
    except UserError:
        return None
    shown = [m for m in SCATTER_METRICS if m in set(points["metric"])]
    cols = 3
    rows = math.ceil(len(shown) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(12, 3.6 * rows), squeeze=False)
    for ax, metric in zip(axes.flat, shown, strict=False):
        sub = points[points["metric"] == metric]
        ax.scatter(sub["hardware"], sub["simulator"], s=22, color="#3b75af")
        values = [*sub["hardware"], *sub["simulator"]]
        positive = [v for v in values if v > 0]
        top = max(values) * 1.3 or 1
        if positive:  # variants of several problems span decades: log axes (symlog when zeros occur)
            low = min(positive) / 1.3
            scale = {"value": "log"} if len(positive) == len(values) else {"value": "symlog", "linthresh": low}
            ax.set_xscale(**scale)
            ax.set_yscale(**scale)
            bottom = low if len(positive) == len(values) else 0
        else:
            bottom = 0
        ax.plot([bottom, top], [bottom, top], color="#999", linestyle="--", linewidth=1)
        ax.set_xlim(bottom, top)
        ax.set_ylim(bottom, top)
        row = table.set_index("metric").loc[metric]
        short = metric.replace("Total_core_cache_stats_breakdown", "L1").replace("[TOTAL_ACCESS]", "")
        ax.set_title(f"{short}\nPearson {row['pearson']:.2f}, same order {row['same_order_%']:.0f}%", fontsize=9)
        ax.set_xlabel("hardware (ncu)", fontsize=8)
        ax.set_ylabel("simulator (normalised)", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(shown):]:
        ax.axis("off")
    fig.tight_layout()
    path = folder / "sim-vs-hardware.png"
    replace_with(path, lambda tmp: fig.savefig(tmp, dpi=100, format=path.suffix[1:]))
    plt.close(fig)
    n = points["group"].nunique()
    title = f"Simulator vs hardware counters ({n} variants run both ways)"
    page = f"<h2>{html.escape(title)}</h2>" + render(table, "html") + _img(path)
    markdown = f"## {title}\n\n" + render(table, "markdown") + f"\n![sim-vs-hardware]({path.name})\n"
    return page, markdown, path
