"""Logs simflow never made: `simflow import-log` stores them as gpgpusim runs (labels as parameters) that
runs, diff, compare, explain and report take; `simflow parse` reads several at once and aggregates."""

import csv
import gzip
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, simflow

from simflow.errors import UserError
from simflow.results.store import Store
from simflow.sim.catalogue import aggregate
from simflow.sim.log import parse_file
from simflow.sim.log_import import config_identity, import_log, parse_labels

DATA = Path(__file__).parent / "data"
SAXPY = DATA / "accelsim-fork_qv100_saxpy-scale-x3.log.gz"  # a user's program: 2 kernels, 3 launches each
UPSTREAM_TWO = DATA / "gpgpusim-dev_qv100_global-then-shared.log.gz"
FORK_TWO = DATA / "accelsim-fork_qv100_global-then-shared.log.gz"
ABORTED = DATA / "gpgpusim-dev_bad-config_assert-abort.log.gz"


def test_an_imported_log_is_a_run_with_its_labels_and_its_log(tmp_path):
    result = import_log(SAXPY, {"app": "saxpy", "suite": "mine"}, None, tmp_path)
    assert result.status == "passed" and "no output was checked" in result.reason
    assert result.backend == "gpgpusim" and result.variant == "saxpy" and result.problem.imported
    assert result.params == {"app": "saxpy", "suite": "mine", "config": "as-logged"}
    assert result.kernels == ["_Z5saxpyifPKfPf", "_Z5scaleifPf"]
    # per launch (a name launched three times: <name>#<uid>.) and the run's totals, unprefixed
    log = parse_file(SAXPY)
    launches = [k.metrics for k in log.kernels]
    assert result.metrics["_Z5saxpyifPKfPf#1.gpu_sim_cycle"] == launches[0]["gpu_sim_cycle"]
    assert result.metrics["gpu_sim_cycle"] == sum(m["gpu_sim_cycle"] for m in launches)
    assert result.metrics["gpu_ipc"] == pytest.approx(sum(m["gpu_sim_insn"] for m in launches)
                                                      / result.metrics["gpu_sim_cycle"])
    assert result.metrics["kernel_launch_latency"] == 5000 and result.environment["simulator_flavour"]
    kept = Path(result.artifacts["log"])
    assert kept.read_bytes() == SAXPY.read_bytes() and kept.parent == Path(result.artifacts["run_dir"])
    assert json.loads((kept.parent / "result.json").read_text())["run_id"] == result.run_id


def test_a_plain_log_is_kept_gzipped_and_a_failed_one_keeps_its_status(tmp_path):
    plain = tmp_path / "app.log"
    plain.write_bytes(gzip.decompress(ABORTED.read_bytes()))
    result = import_log(plain, {}, "mycfg", tmp_path / "results")
    assert result.status == "aborted" and "Assertion" in result.reason
    assert result.params == {"app": "app", "config": "mycfg"} and result.environment["config"] == "mycfg"
    assert gzip.decompress(Path(result.artifacts["log"]).read_bytes()) == plain.read_bytes()
    with pytest.raises(UserError, match="no such log file"):
        import_log(tmp_path / "nope.log", {}, None, tmp_path)
    with pytest.raises(UserError, match="KEY=VALUE"):
        parse_labels(["app"])


def test_config_identity_comes_from_the_printed_options():
    fork, upstream = parse_file(FORK_TWO), parse_file(UPSTREAM_TWO)
    assert config_identity(fork.options) != config_identity(upstream.options)  # two builds print different sets
    sampled = parse_file(DATA / "accelsim-fork_qv100_batch3x3_shared_sampled.log.gz")
    plain = parse_file(DATA / "accelsim-fork_qv100_batch3x3_global_max-insn-stop.log.gz")
    assert sampled.options["trace_enabled"] == "1" and plain.options.get("trace_enabled", "0") == "0"
    # simflow's instrumentation only prints: the same identity as a log without it, once the limit is set alike
    assert config_identity({**sampled.options, "gpgpu_max_insn": "0"}) == config_identity(
        {**plain.options, "gpgpu_max_insn": "0"})


def test_imported_logs_through_the_cli(tmp_path):
    env = {"SIMFLOW_RESULTS": str(tmp_path)}
    proc = simflow("import-log", str(UPSTREAM_TWO), str(SAXPY), "--label", "suite=course", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert [r["labels"]["app"] for r in rows] == ["gpgpusim-dev_qv100_global-then-shared",
                                                  "accelsim-fork_qv100_saxpy-scale-x3"]
    proc = simflow("import-log", str(ABORTED), "-l", "app=broken", env=env)
    assert proc.returncode == 2 and "aborted" in proc.stdout
    listed = simflow("runs", "suite=course", "--json", env=env)
    assert len(json.loads(listed.stdout)) == 2
    # apps compared: one table when the configs are told apart by --by config or joined with --force
    compare = simflow("compare", "suite=course", "--by", "app,config", "--force", "-f", "json", env=env)
    assert compare.returncode == 0, compare.stderr
    groups = [r["group"] for r in json.loads(compare.stdout)["rows"]]
    assert len(groups) == 2 and all("app=" in g for g in groups)
    diff = simflow("diff", "app=gpgpusim-dev_qv100_global-then-shared", "app=accelsim-fork_qv100_saxpy-scale-x3",
                   "--force", "-f", "json", env=env)
    assert diff.returncode == 0, diff.stderr
    metrics = {r["metric"]: r for r in json.loads(diff.stdout)["rows"]}
    assert metrics["gpu_sim_cycle"]["A"] == 6627 + 7222
    explain = simflow("explain", "app=gpgpusim-dev_qv100_global-then-shared",
                      "app=accelsim-fork_qv100_saxpy-scale-x3", "--force", "-f", "json", env=env)
    assert explain.returncode == 0, explain.stderr
    data = json.loads(explain.stdout)
    assert sum(r["effect"] for r in data["issue_slots"]) == pytest.approx(data["cycles"]["delta"])
    assert data["cycles"]["launch_latency"] == [10000, 30000]  # 2 and 6 launches of 5000 cycles
    with Store(tmp_path) as store:
        described = {r.problem.describe() for r in store.runs()}
    assert described == {"unknown problem (a log imported without -l problem=NAME)"}


def test_report_of_imported_logs(tmp_path):
    env = {"SIMFLOW_RESULTS": str(tmp_path)}
    assert simflow("import-log", str(UPSTREAM_TWO), str(SAXPY), "-l", "config=qv100", env=env).returncode == 0
    proc = simflow("report", "--by", "app", "-d", str(tmp_path / "report"), env=env)
    assert proc.returncode == 0, proc.stderr
    md = (tmp_path / "report" / "report.md").read_text()
    # a conv kernel's log and saxpy's, neither labelled with its problem: two tables, never one against the other
    assert md.count("on unknown problem (a log imported without -l problem=NAME)") == 2
    assert "2 run(s) of unknown problem, each alone" in md and "app=accelsim-fork_qv100_saxpy-scale-x3" in md


def test_parse_several_logs_one_table(tmp_path):
    out = tmp_path / "table.csv"
    proc = simflow("parse", str(UPSTREAM_TWO), str(SAXPY), "--csv", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    logs = json.loads(proc.stdout)["logs"]
    assert [len(entry["per_kernel"]) for entry in logs] == [2, 6]
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 8 and rows[0]["log"] == str(UPSTREAM_TWO) and rows[-1]["kernel"] == "_Z5scaleifPf"
    text = simflow("parse", str(UPSTREAM_TWO), str(SAXPY)).stdout
    assert text.count("complete") >= 2 and " saxpy " in text and "_Z5saxpyifPKfPf" not in text  # demangled
    # one log: the shape other tools read, unchanged
    single = json.loads(simflow("parse", str(SAXPY), "--json").stdout)
    assert single["status"] == "complete" and len(single["per_kernel"]) == 6


def test_parse_aggregates_launches_of_one_name_and_says_so():
    proc = simflow("parse", str(SAXPY), "--aggregate", "--json")
    assert proc.returncode == 0
    said = "aggregated 6 launches into 2 kernels: _Z5saxpyifPKfPf (3 launches), _Z5scaleifPf (3 launches)"
    assert said in proc.stderr
    rows = {r["kernel"]: r for r in json.loads(proc.stdout)["per_kernel"]}
    launches = [k.metrics for k in parse_file(SAXPY).kernels if k.kernel == "_Z5saxpyifPKfPf"]
    saxpy = rows["_Z5saxpyifPKfPf"]
    assert saxpy["launches"] == 3 and saxpy["launch_uids"] == "1,3,5" and saxpy["regs"] > 0
    assert saxpy["gpu_sim_cycle"] == sum(m["gpu_sim_cycle"] for m in launches)
    cycles = [m["gpu_sim_cycle"] for m in launches]
    weighted = sum(m["gpu_occupancy"] * c for m, c in zip(launches, cycles, strict=True)) / sum(cycles)
    assert saxpy["gpu_occupancy"] == pytest.approx(weighted)
    assert saxpy["L1D_total_cache_miss_rate"] == pytest.approx(saxpy["L1D_total_cache_misses"]
                                                               / saxpy["L1D_total_cache_accesses"])
    assert saxpy["averagemflatency"] == launches[-1]["averagemflatency"]  # a whole-process figure


def test_aggregate_rules():
    merged = aggregate([{"gpu_sim_cycle": 100.0, "gpu_occupancy": 10.0, "L2_total_cache_accesses": 4.0,
                         "L2_total_cache_misses": 1.0, "maxmflatency": 200.0},
                        {"gpu_sim_cycle": 300.0, "gpu_occupancy": math.nan, "L2_total_cache_accesses": 4.0,
                         "L2_total_cache_misses": 3.0, "maxmflatency": 250.0}])
    assert merged["gpu_sim_cycle"] == 400 and merged["gpu_occupancy"] == 10  # a missing value is left out
    assert merged["L2_total_cache_miss_rate"] == 0.5 and merged["maxmflatency"] == 250


def test_import_log_keeps_the_timeline_of_any_log_with_progress_samples(tmp_path):
    """From standard input too: the report draws the over-cycles plot of logs simflow did not make."""
    sampled = DATA / "accelsim-fork_qv100_batch3x3_shared_sampled.log.gz"
    proc = subprocess.run(f"zcat {sampled} | {sys.executable} -m simflow import-log - --label app=mine --json "
                          f"--results {tmp_path}", shell=True, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    run_id = json.loads(proc.stdout)[0]["id"]
    with Store(tmp_path) as store:
        run = next(r for r in store.runs() if r.id == run_id)
    with open(run.artifacts["intervals"], newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(parse_file(sampled).intervals()) > 5 and run.params["app"] == "mine"
    assert run.environment["imported_from"] == "stdin"
    plain = import_log(SAXPY, {}, None, tmp_path)  # no progress samples: no timeline, nothing claimed
    assert "intervals" not in plain.artifacts and not (Path(plain.artifacts["run_dir"]) / "intervals.csv").exists()


def test_compare_says_why_imported_logs_make_separate_tables(tmp_path):
    env = {"SIMFLOW_RESULTS": str(tmp_path)}
    upstream = DATA / "gpgpusim-dev_qv100_global-only.log.gz"
    assert simflow("import-log", str(upstream), str(FORK_TWO), "-l", "problem=batch3x3", env=env).returncode == 0
    apart = simflow("compare", "--by", "app", "--json", env=env)
    data = json.loads(apart.stdout)
    assert len(data["tables"]) == 2 and data["split"] == apart.stderr.splitlines()[0]
    assert data["split"].startswith("2 tables: simulator configs differ (same name, other options: ")
    assert "-gpgpu_clock_domains" in data["split"]
    assert "--by config puts them in one table" in data["split"]
    together = json.loads(simflow("compare", "--by", "app,config", "--json", env=env).stdout)
    assert "tables" not in together and len(together["rows"]) == 2
