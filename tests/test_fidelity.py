"""The simulator against the GPU (simflow.analysis.fidelity): real simulator logs (global and shared on batch3x3,
SM7_QV100) and real Nsight Compute logs of the same jobs on an H200; GPU times are test data, chosen."""

import dataclasses
import math
from pathlib import Path

import pytest
from runs import gpu_record, sim_record
from test_ncu import hw_record

from simflow.analysis.fidelity import both_ways, correlate, disagreements, fidelity, models_gpu, simulated_mhz
from simflow.errors import UserError
from simflow.results.store import Store, StoredRun


def _store(tmp_path: Path, times: dict[str, float], second_config: bool = False, gpu: str = "NVIDIA H200"
           ) -> list[StoredRun]:
    with Store(tmp_path) as store:
        for variant in ("global", "shared"):
            sim = sim_record(tmp_path, variant)
            store.add(sim)
            if second_config:  # the same log, filed as a run of another config (test data)
                store.add(dataclasses.replace(sim, run_id=f"{sim.run_id}-h200",
                                              job=dataclasses.replace(sim.job, config_name="H200")))
            store.add(hw_record(variant))
            timed = gpu_record(f"gpu-{variant}", variant, times[variant])
            timed.environment["gpu"] = gpu
            store.add(timed)
        return store.runs()


def test_a_job_simulated_under_two_configs_is_joined_once_per_config(tmp_path):
    runs = _store(tmp_path, {"global": 0.005, "shared": 0.006}, second_config=True)
    _, pairs = both_ways(runs)
    assert sorted(key[0] for key in pairs) == ["H200", "H200", "SM7_QV100", "SM7_QV100"]
    table, points = correlate(runs, ["gpu_sim_cycle"])
    assert list(table["config"]) == ["H200", "SM7_QV100"] and list(table["n"]) == [2, 2]
    assert set(points["config"]) == {"H200", "SM7_QV100"} and len(points) == 4


def test_per_layer_ranks_time_error_and_counters(tmp_path):
    runs = _store(tmp_path, {"global": 0.005, "shared": 0.006}, gpu="a GPU modelled by SM7_QV100 (test data)")
    found = fidelity(runs, tmp_path)
    (layer,) = found.layers.to_dict("records")
    # global is faster both ways: 6693 vs 7277 cycles simulated, 0.005 vs 0.006 ms measured
    assert layer["same_order_%"] == 100 and layer["ordered_differently"] == "" and layer["variants"] == 2
    points = found.points.set_index("job")
    mhz = points["sim_mhz"].iloc[0]
    assert mhz == 1132.0  # SM7_QV100's core clock, as the log echoes its options
    glob = points.loc[[j for j in points.index if "variant=global" in j][0]]
    assert glob["time_error_%"] == pytest.approx(100 * (6693 / (1132 * 1e3) / 0.005 - 1))
    sim = next(r for r in runs if r.backend == "gpgpusim" and r.variant == "global")
    hw = next(r for r in runs if r.backend == "gpu-ncu" and r.variant == "global")
    assert glob["insn_ratio"] == pytest.approx(sim.metrics["gpu_sim_insn"] / hw.metrics["gpu_sim_insn"])
    assert glob["insn_ratio"] != 1 and 0.5 < glob["insn_ratio"] < 1.5  # PTX and SASS counts differ
    assert layer["median_abs_time_error_%"] == pytest.approx(
        sorted(abs(e) for e in found.points["time_error_%"])[0] / 2 + sorted(
            abs(e) for e in found.points["time_error_%"])[1] / 2)
    counters = found.counters.set_index("counter")
    insn = counters.loc["thread instructions"]
    assert insn["n"] == 2 and 0.5 < insn["median_ratio"] < 1.5
    (summary,) = found.summary.to_dict("records")
    assert summary["thread_insn_ratio"] == insn["median_ratio"] and summary["jobs"] == 2


def test_pairs_ordered_differently_are_named(tmp_path):
    runs = _store(tmp_path, {"global": 0.007, "shared": 0.006})  # the GPU's time has shared faster
    (layer,) = fidelity(runs, tmp_path).layers.to_dict("records")
    assert layer["same_order_%"] == 0 and "variant=global" in layer["ordered_differently"]
    assert "variant=shared" in layer["ordered_differently"]


def test_without_a_gpu_time_ranks_fall_back_to_the_counters_cycles(tmp_path):
    runs = [r for r in _store(tmp_path, {"global": 0.007, "shared": 0.006}) if r.backend != "gpu"]
    found = fidelity(runs, tmp_path)
    assert found.points["time_error_%"].isna().all()
    assert found.layers["same_order_%"].iloc[0] == 100  # ncu's cycles have global faster too


def test_the_clock_of_a_sampled_estimate_is_its_probes(tmp_path):
    sim = sim_record(tmp_path, "global")
    estimate_dir = tmp_path / "runs" / "estimate"
    estimate_dir.mkdir(parents=True)
    run = dataclasses.replace(sim, artifacts={"run_dir": str(estimate_dir)},
                              estimate={"probe": Path(sim.artifacts["run_dir"]).name})
    assert simulated_mhz(run, tmp_path) == 1132.0 and simulated_mhz(run) == 1132.0
    assert math.isnan(simulated_mhz(dataclasses.replace(run, estimate={})))


def test_nothing_run_both_ways_is_an_error_and_disagreements_are_per_config(tmp_path):
    with pytest.raises(UserError, match="simflow profile"):
        fidelity([], tmp_path)
    runs = _store(tmp_path, {"global": 0.005, "shared": 0.006}, second_config=True)
    assert disagreements(runs) == []


def test_time_is_compared_only_on_a_config_that_models_the_gpu_measured(tmp_path):
    """SM7_QV100 models a Volta: its cycles over its clock say nothing of an H200's time; its ranks still count."""
    found = fidelity(_store(tmp_path, {"global": 0.005, "shared": 0.006}), tmp_path)
    assert found.points["time_error_%"].isna().all() and found.layers["same_order_%"].iloc[0] == 100
    assert models_gpu("H200", "NVIDIA H200") and models_gpu("gpgpusim_configs/H200.toml", "NVIDIA H200")
    assert not models_gpu("SM7_QV100", "NVIDIA H200") and not models_gpu("H20", "NVIDIA H200")


def test_one_config_name_with_two_sets_of_options_is_two_configs(tmp_path):
    """H200 calibrated again: runs made before (old options) are not set beside runs made after as one config."""
    with Store(tmp_path) as store:
        for variant, key in (("global", "old0000000"), ("shared", "new1111111")):
            sim = sim_record(tmp_path, variant)
            store.add(dataclasses.replace(sim, job=dataclasses.replace(sim.job, config_name="H200", config_key=key)))
            store.add(hw_record(variant))
        runs = store.runs()
    _, pairs = both_ways(runs)
    assert sorted(key[0] for key in pairs) == ["H200 (options new11111)", "H200 (options old00000)"]
    assert models_gpu("H200 (options new11111)", "NVIDIA H200")
    table, _ = correlate(runs, ["gpu_sim_cycle"])
    assert list(table["n"]) == [1, 1]  # one job a config, never two configs' jobs correlated as one


def test_the_tables_read_again_from_the_runs_kept_in_the_repository(tmp_path):
    """benchmarks/fidelity.py --keep copies each run's result.json (and a simulator run's gpgpusim.config, whose
    clock the time error needs) into a folder with no store; read from there, on a machine without the stores, the
    tables are the same."""
    import shutil
    import subprocess
    import sys

    from conftest import ROOT

    from simflow.results.folders import keep_result, new_run_folder

    store_dir = tmp_path / "store"
    with Store(store_dir) as store:
        for variant, ms in (("global", 0.005), ("shared", 0.006)):
            sim = sim_record(store_dir, variant)
            (Path(sim.artifacts["run_dir"]) / "gpgpusim.config").write_text(  # a config of several options
                "-gpgpu_n_clusters 80\n-gpgpu_clock_domains 1132.0:1132.0:1132.0:850.0\n-gpgpu_shader_cta 32\n")
            store.add(sim)
            for record in (hw_record(variant, run_id=None), gpu_record(f"gpu-{variant}", variant, ms)):
                record.environment.setdefault("gpu", "a GPU modelled by SM7_QV100 (test data)")
                record.run_id, folder = new_run_folder(variant, store_dir)
                record.artifacts = {"run_dir": str(folder)}
                keep_result(record, folder)
                store.add(record)
    script = [sys.executable, str(ROOT / "benchmarks" / "fidelity.py")]
    kept = tmp_path / "repo" / "runs-kept"
    first = subprocess.run([*script, str(store_dir), "-o", str(tmp_path / "a.md"), "--keep", str(kept)],
                           capture_output=True, text=True, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "kept 6 runs" in first.stdout and len(list(kept.glob("runs/*/result.json"))) == 6
    configs = list(kept.glob("runs/*/gpgpusim.config"))
    assert len(configs) == 2  # the clock line alone: a simulator's config is never kept in a repository
    assert all(c.read_text().splitlines()[1:] == ["-gpgpu_clock_domains 1132.0:1132.0:1132.0:850.0"] for c in configs)
    again = subprocess.run([*script, str(kept), "-o", str(tmp_path / "b.md")], capture_output=True, text=True,
                           cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    tables = [(tmp_path / name).read_text().split("## Per config", 1)[1] for name in ("a.md", "b.md")]
    assert tables[0] == tables[1] and "1132" in tables[1]  # the clock read from the kept config
    # --figures: the report's scatter per counter (hardware against simulator, the y = x line), of the configs asked
    plots = subprocess.run([*script, str(kept), "--figures", str(tmp_path / "fig"), "--figures-config", "SM7"],
                           capture_output=True, text=True, cwd=tmp_path)
    assert plots.returncode == 0, plots.stderr
    cycles = tmp_path / "fig" / "sim-vs-hardware-SM7_QV100-gpu_sim_cycle.svg"
    assert cycles.is_file() and "SM7_QV100, gpu_sim_cycle: Spearman" in cycles.read_text()
    assert 'stroke="#aaa"' in cycles.read_text()  # the diagonal
    written = sorted(p.name for p in (tmp_path / "fig").glob("*.svg"))
    assert f"wrote {len(written)} scatter plots" in plots.stdout and "sim-vs-hardware-SM7_QV100-gpu_sim_insn.svg" in (
        written)
    none = subprocess.run([*script, str(kept), "--figures", str(tmp_path / "fig2"), "--figures-config", "H100"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert "wrote 0 scatter plots" in none.stdout and not list((tmp_path / "fig2").glob("*.svg"))
    rerun = subprocess.run([*script, str(store_dir), "--keep", str(kept)], capture_output=True, text=True)
    assert "kept 0 runs" in rerun.stdout  # what is kept already stays as it is
    # a store made on another machine (the GPU's, unpacked here): its records name folders that are not here, so each
    # run is found under the folder read; a run whose folder is nowhere is named, not passed over in silence
    moved = store_dir.rename(tmp_path / "unpacked")
    gone = sorted(moved.glob("runs/*"))[-1]
    shutil.rmtree(gone)
    elsewhere = subprocess.run([*script, str(moved), "--keep", str(tmp_path / "kept2")], capture_output=True,
                               text=True)
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert "kept 5 runs" in elsewhere.stdout and f"1 run(s) not kept, their folders are not found: {gone.name}" in (
        elsewhere.stderr)
    # an earlier result file whose runs are gone: its layers join this run's, a layer in both counted as this run's
    earlier = (tmp_path / "a.md").read_text().replace("| batch3x3 |", "| vgg16-conv1_1 |")
    (tmp_path / "earlier.md").write_text(earlier.replace("| 2 | 1 | 100 |", "| 2 | -1 | 0 |"))
    both = subprocess.run([*script, str(kept), "-o", str(tmp_path / "c.md"), "--earlier",
                           str(tmp_path / "earlier.md")], capture_output=True, text=True, cwd=tmp_path)
    assert both.returncode == 0, both.stderr
    combined = (tmp_path / "c.md").read_text().split("## Per config, with the layers of", 1)[1]
    assert "| SM7_QV100 | 2 | 4 | 0 |" in combined  # two layers (1 and -1), four jobs
    assert "| SM7_QV100 | vgg16-conv1_1 | 2 | -1 | " in combined
    assert "| SM7_QV100 | batch3x3 | 2 | 1 | this run |" in combined


def test_simulator_jobs_without_gpu_runs_meet_the_earlier_files_gpu_times(tmp_path):
    """benchmarks/fidelity.py --earlier: a simulated job whose GPU run is gone (another session's machine) is set
    against the GPU time the earlier file gives the same job; a run read twice (its store and the kept folder)
    counts once, and a layer this run joined itself is left alone."""
    import importlib.util
    from types import SimpleNamespace

    import pandas as pd
    from conftest import ROOT

    spec = importlib.util.spec_from_file_location("fidelity_script", ROOT / "benchmarks" / "fidelity.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    with Store(tmp_path) as store:
        for variant in ("global", "shared"):
            sim = sim_record(tmp_path, variant)
            (Path(sim.artifacts["run_dir"]) / "gpgpusim.config").write_text("-gpgpu_clock_domains 1000.0:1000.0\n")
            store.add(dataclasses.replace(sim, job=dataclasses.replace(sim.job, config_name="H200")))
        timed = gpu_record("gpu-global", "global", 1.0)
        timed.environment["gpu"] = "NVIDIA H200"
        store.add(timed)
        runs = store.runs()
    sims = {r.variant: r for r in runs if r.backend == "gpgpusim"}
    jobs = {v: r.label(["variant", *r.params]) for v, r in sims.items()}
    earlier = pd.DataFrame({"problem": ["batch3x3", "batch3x3"], "job": [jobs["global"], jobs["shared"]],
                            "gpu_ms": ["0.5", "0.001"]})
    found = SimpleNamespace(points=pd.DataFrame(columns=["config", "problem", "job"]))
    rows = script._timed_before(runs + runs, found, earlier, set())
    assert sorted(rows["job"]) == sorted(jobs.values())  # each once
    assert set(rows["config"]) == {f"H200 (options {sims['global'].config_key[:8]})"}
    for _, row in rows.iterrows():
        cycles = sims["global" if row["job"] == jobs["global"] else "shared"].metrics["gpu_sim_cycle"]
        assert row["sim_ms"] == pytest.approx(cycles / 1e6)  # at the run's 1000 MHz
        assert row["time_error_%"] == pytest.approx(100 * (row["sim_ms"] / row["gpu_ms"] - 1))
    layer = script._layers_of(rows, "earlier")
    expected = 1.0 if sims["global"].metrics["gpu_sim_cycle"] > sims["shared"].metrics["gpu_sim_cycle"] else -1.0
    assert list(layer["variants"]) == [2] and layer["spearman"].iloc[0] == pytest.approx(expected)
    label = f"H200 (options {sims['global'].config_key[:8]})"
    assert script._timed_before(runs, found, earlier, {(label, "batch3x3")}).empty  # joined here already
    # a second calibration of H200 (other options) on the same layer: its rows go under its own options
    other = [dataclasses.replace(r, run_id=r.run_id + "b", config_key="0ther0pt0000") for r in runs
             if r.backend == "gpgpusim"]
    both = script._timed_before(runs + other, found, earlier, set())
    assert sorted(both["config"].value_counts().items()) == sorted([("H200 (options 0ther0pt)", 2), (label, 2)])
