"""How close the simulator is to the GPU on layers of real size (simflow.analysis.fidelity), per simulator config.

Both sides are sweeps of the same jobs:
  simulator (this machine, sampled):  simflow sweep benchmarks/fidelity_sim.toml --results SIM
  GPU (the lent H200, one call):      bash benchmarks/fidelity_gpu.sh   (results in .scratch/fidelity-gpu)
then
  python benchmarks/fidelity.py SIM .scratch/fidelity-gpu -o benchmarks/results/fidelity-....md \
      --keep benchmarks/results/fidelity-.../runs-kept

--figures DIR writes the scatter plots of `simflow report`'s simulator-vs-hardware section (one a config and counter;
--figures-config keeps the configs whose name holds a text, e.g. an options key).

--keep copies the runs the tables come from into a folder of the repository: each run's result.json and, of a
simulator run's gpgpusim.config, only the clock option the time error reads (never the simulator's config): a few KB
a run. This script reads such a folder again as a results folder on a machine that has neither store: a later
session adds its runs to the same tables.
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simflow import api  # noqa: E402
from simflow.analysis.fidelity import fidelity  # noqa: E402
from simflow.tables import render  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", help="results folders: the simulator's and the GPU's")
    parser.add_argument("-o", "--output", help="also write the tables here (markdown)")
    parser.add_argument("--keep", metavar="DIR", help="copy the runs used into DIR/runs/<id>/ (see above)")
    parser.add_argument("--earlier", metavar="FILE.md", help="an earlier result file of this script whose runs are "
                        "gone: its per-layer and per-job rows are added, config by config, in a last section")
    parser.add_argument("--figures", metavar="DIR", help="also write the scatter plots of `simflow report`'s "
                        "simulator-vs-hardware section (a config and counter each, hardware against simulator, the "
                        "y = x line) into DIR as NAME.svg")
    parser.add_argument("--figures-config", metavar="TEXT", help="with --figures: only the configs whose name "
                        "contains TEXT (an options key, e.g. 7c4bf852)")
    args = parser.parse_args()
    if args.figures_config and not args.figures:
        parser.error("--figures-config picks the configs of --figures DIR: give --figures too")
    runs = [run for folder in args.results for run in _runs(Path(folder))]
    if args.keep:
        kept, missing = _keep(runs, Path(args.keep))
        print(f"kept {kept} runs in {args.keep}")
        if missing:
            print(f"fidelity.py: warning: {len(missing)} run(s) not kept, their folders are not found: "
                  f"{', '.join(missing)}", file=sys.stderr)
    found = fidelity(runs)
    sims = [r for r in runs if r.backend == "gpgpusim" and r.status == "passed"]
    gpus = sorted({r.environment.get("gpu", "") for r in runs if r.backend == "gpu"} - {""})
    head = [f"# Simulator vs GPU on layers of real size, {datetime.now(UTC):%Y-%m-%d}", "",
            f"Runs: {len(sims)} passed simulator runs ({sum(bool(r.estimate) for r in sims)} sampled estimates) "
            f"from {', '.join(args.results)}; GPU: {', '.join(gpus) or 'unknown'}.",
            "Time ranks: simulated cycles against the GPU's CUDA-event time (backend gpu); time error: cycles over "
            "the config's core clock against that time; counters: simulator stats against Nsight Compute's "
            "(backend gpu-ncu), normalised as `simflow correlate` says.", ""]
    parts = [("Per config", found.summary), ("Per layer", found.layers), ("Per counter", found.counters),
             ("Per job", found.points)]
    if args.earlier:
        summary, layers, timed_before = _with_earlier(Path(args.earlier), found, runs)
        parts += [(f"Per config, with the layers of {args.earlier}", summary),
                  (f"Per layer, with the layers of {args.earlier}", layers)]
        if len(timed_before):
            parts.append((f"Per job: this run's simulator against the GPU times of {args.earlier}", timed_before))
    text = "\n".join(head) + "\n".join(f"\n## {title}\n\n{render(frame, 'markdown')}" for title, frame in parts)
    if args.output:
        Path(args.output).write_text(text + "\n")
    if args.figures:
        written = _figures(runs, Path(args.figures), args.figures_config or "")
        print(f"wrote {len(written)} scatter plots into {args.figures}")
    print(render(found.layers.drop(columns=["ordered_differently"]), "table"))
    print()
    print(render(found.counters, "table"))
    print()
    print(render(found.summary, "table"))
    return 0


def _figures(runs: list, folder: Path, config_text: str) -> list[Path]:
    """The simulator-vs-hardware scatters (simflow.analysis.report.correlation_section) of the configs whose name
    holds config_text, each written to folder/NAME.svg; none where no job was run both ways."""
    from simflow.analysis.report import correlation_section
    from simflow.results.folders import write_text

    section = correlation_section(runs)
    figures = [f for f in (section.figures if section else []) if config_text in f.title.split(": ", 1)[0]]
    folder.mkdir(parents=True, exist_ok=True)
    for figure in figures:
        write_text(folder / f"{figure.name}.svg", figure.svg + "\n")
    return [folder / f"{figure.name}.svg" for figure in figures]


def _markdown_table(text: str, title: str):
    """The table under `## title` of a result file of this script, as text columns."""
    import pandas as pd

    lines = text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0].strip().splitlines()
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in lines if line.startswith("|")]
    return pd.DataFrame(rows[2:], columns=rows[0])


def _with_earlier(path: Path, found, runs: list):
    """Per config, this run's layers and those of an earlier result file (its runs gone, its rows the figures): the
    layers, jobs, median per-layer Spearman and median |time error| over both; a layer in both is this run's. A config
    is matched by name and options (this run's configs named with their options key where the earlier file has it)."""
    import pandas as pd

    keys = {run.config: run.config_key[:8] for run in runs if run.backend == "gpgpusim" and run.config_key}
    label = {config: f"{config} (options {key})" for config, key in keys.items()}
    text = path.read_text()
    earlier_layers, earlier_jobs = _markdown_table(text, "Per layer"), _markdown_table(text, "Per job")
    layers = found.layers.assign(config=found.layers["config"].replace(label))
    jobs = found.points.assign(config=found.points["config"].replace(label))
    if not set(layers["config"]) & set(earlier_layers["config"]):  # the earlier file names configs plainly
        layers, jobs = found.layers, found.points
    new = set(zip(layers["config"], layers["layer"], strict=True))
    earlier_layers = earlier_layers[[(c, lay) not in new for c, lay in
                                     zip(earlier_layers["config"], earlier_layers["layer"], strict=True)]]
    earlier_jobs = earlier_jobs[[(c, lay) not in new for c, lay in
                                 zip(earlier_jobs["config"], earlier_jobs["problem"], strict=True)]]
    source = f"{path.parent.name}/{path.name}"
    timed_before = _timed_before(runs, found, earlier_jobs, new)
    layers = pd.concat([earlier_layers.assign(source=source), layers.assign(source="this run"),
                        _layers_of(timed_before, f"this run's simulator, the GPU times of {source}")])
    jobs = pd.concat([earlier_jobs, jobs, timed_before])
    for frame, column in ((layers, "spearman"), (jobs, "time_error_%")):
        frame[column] = pd.to_numeric(frame[column], errors="coerce")
    summary = [{"config": config, "layers": len(group), "jobs": int((jobs["config"] == config).sum()),
                "median_layer_spearman": round(group["spearman"].median(), 6) + 0.0,  # no -0
                "median_abs_time_error_%": jobs.loc[jobs["config"] == config, "time_error_%"].abs().median()}
               for config, group in layers.groupby("config", sort=True)]
    return pd.DataFrame(summary), layers[["config", "layer", "variants", "spearman", "source"]], timed_before


def _timed_before(runs: list, found, earlier_jobs, new: set):
    """This run's simulator jobs of layers it has no GPU run of, set against the GPU time the earlier file gives the
    same job (the same GPU measured it, beside whichever config): per job, its time error on a config that models
    the GPU. Each run goes under its own config and options ('H200 (options 588553f2)'): two calibrations of one
    config never share a row. Layers this run joined itself are left as they are."""
    import pandas as pd

    from simflow.analysis.fidelity import _name, models_gpu, simulated_mhz

    measured = {(problem, job): float(ms) for problem, job, ms in
                zip(earlier_jobs["problem"], earlier_jobs["job"], earlier_jobs["gpu_ms"], strict=True) if ms}
    gpus = {r.environment.get("gpu", "") for r in runs if r.backend == "gpu"} - {""}
    joined = set(zip(found.points["config"], found.points["problem"], found.points["job"], strict=True))
    rows, seen = [], set()  # a run kept is read twice: from its store and from the kept folder
    for run in runs:
        config = f"{run.config} (options {run.config_key[:8]})" if run.config_key else run.config
        job = _name(run)
        if (run.run_id in seen or run.backend != "gpgpusim" or run.status != "passed"
                or (config, run.problem.name) in new
                or {(config, run.problem.name, job), (run.config, run.problem.name, job)} & joined
                or (run.problem.name, job) not in measured):
            continue
        seen.add(run.run_id)
        gpu_ms, mhz = measured[(run.problem.name, job)], simulated_mhz(run)
        sim_ms = run.metrics.get("gpu_sim_cycle", math.nan) / (mhz * 1e3)
        models = any(models_gpu(config, gpu) for gpu in gpus)
        rows.append({"config": config, "problem": run.problem.name, "job": job,
                     "sim_cycles": run.metrics.get("gpu_sim_cycle"), "sim_ms": sim_ms, "gpu_ms": gpu_ms,
                     "time_error_%": 100 * (sim_ms / gpu_ms - 1) if models else math.nan})
    return pd.DataFrame(rows, columns=["config", "problem", "job", "sim_cycles", "sim_ms", "gpu_ms", "time_error_%"])


def _layers_of(jobs, source: str):
    """Per config and layer of `jobs` (two or more), the Spearman of simulated against GPU time (the Pearson of
    their ranks)."""
    import pandas as pd

    rows = [{"config": config, "layer": layer, "variants": len(sub), "source": source,
             "spearman": sub["sim_ms"].rank().corr(sub["gpu_ms"].rank())}
            for (config, layer), sub in jobs.groupby(["config", "problem"], sort=True) if len(sub) >= 2]
    return pd.DataFrame(rows, columns=["config", "layer", "variants", "spearman", "source"])


def _runs(folder: Path) -> list:
    """The runs of a results folder: its store, or, for a folder of kept runs (no store), each runs/<id>/ imported
    into a store made for this read (the records then name their files in the kept folder)."""
    if (folder / "simflow.db").is_file() or not any(folder.glob("runs/*/result.json")):
        return api.find_runs(results=folder)
    with tempfile.TemporaryDirectory(prefix="simflow-fidelity-") as store:
        api.import_runs(*sorted(folder.glob("runs/*")), results=store)
        return api.find_runs(results=store)


def _keep(runs: list, into: Path) -> tuple[int, list[str]]:
    """Copy each passed simulator and GPU run's result.json (and job.json; of a gpgpusim.config, its clock line),
    and each sampled estimate's probe with its config, into `into`/runs/<id>/; runs kept already stay as they are.
    Returns the runs kept and those whose folder is nowhere (named, never passed over in silence)."""
    wanted = {}
    for run in runs:
        if run.status != "passed" or run.backend not in ("gpgpusim", "gpu", "gpu-ncu"):
            continue
        wanted[run.run_id] = Path(run.artifacts.get("run_dir", ""))
        if probe := (run.estimate or {}).get("probe"):
            wanted[probe] = wanted[run.run_id].parent / probe
    kept, missing = 0, []
    names = ("result.json", "job.json", "gpgpusim.config")
    for run_id, folder in wanted.items():
        target = into / "runs" / run_id
        if target.is_dir():
            continue
        if not (folder / "result.json").is_file():
            missing.append(run_id)
            continue
        partial = target.with_name(run_id + ".part")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        for name in names:
            if name == "gpgpusim.config" and (folder / name).is_file():  # its clock, never the config itself
                clocks = [line for line in (folder / name).read_text().splitlines()
                          if line.startswith("-gpgpu_clock_domains")]
                (partial / name).write_text("# kept by benchmarks/fidelity.py --keep: the one option the time error "
                                            "reads, not the config\n" + "".join(f"{c}\n" for c in clocks[:1]))
            elif (folder / name).is_file():
                shutil.copy2(folder / name, partial / name)
        partial.rename(target)  # whole or not at all
        kept += 1
    return kept, missing


if __name__ == "__main__":
    sys.exit(main())
