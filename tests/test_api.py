"""simflow.api: docs/api.md's notebook example runs as written, and the functions return what they say."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

import simflow.api as sf
from simflow.errors import UserError
from simflow.kernels.problems import Problem

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"


def test_the_docs_example_runs_as_written(tmp_path):
    code = re.search(r"```python\n(.*?)```", (ROOT / "docs" / "api.md").read_text(), re.S)[1]
    script = tmp_path / "example.py"
    script.write_text(code)
    proc = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={"SIMFLOW_RESULTS": str(tmp_path / "results"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert "Launch(kernel='conv2d_shared', grid=(4, 4, 4), block=(8, 8, 1)" in proc.stdout
    assert "'delta': 584.0" in proc.stdout and "slots lost: W0_Scoreboard" in proc.stdout


def test_problem_of_takes_a_preset_a_shape_or_a_problem():
    assert sf.problem_of("batch3x3", batch=2).B == 2 and sf.problem_of("batch3x3").name == "batch3x3"
    assert sf.problem_of("2,3,4,16,16,3,1") == Problem(2, 3, 4, 16, 16, 3, 1, name="custom")
    given = Problem(1, 1, 1, 8, 8, 3)
    assert sf.problem_of(given) is given and sf.problem_of(given, batch=5).B == 5
    with pytest.raises(UserError, match="unknown problem 'nope'"):
        sf.problem_of("nope")


def test_the_store_as_dataframes(tmp_path):
    logs = [DATA / "gpgpusim-dev_qv100_global-then-shared.log.gz", DATA / "gpgpusim-dev_qv100_shared-only.log.gz"]
    stored = sf.import_logs(*logs, labels={"study": "api", "config": "qv100", "problem": "N4K4"},
                            results=tmp_path)
    frame = sf.runs("study=api", results=tmp_path)
    assert list(frame["id"]) == [r.run_id for r in stored]
    assert {"id", "variant", "backend", "status", "app", "param_config", "gpu_sim_cycle"} <= set(frame.columns)
    assert frame.loc[0, "gpu_sim_cycle"] == 6627 + 7222 and frame.loc[0, "config"] == "qv100"
    delta = sf.diff(stored[0].run_id, stored[1].run_id, metrics=["gpu_sim_cycle"], results=tmp_path)
    assert list(delta["metric"]) == ["status", "gpu_sim_cycle"] and delta.attrs["not_comparable"] == ""
    (table,) = sf.compare("study=api", by=["app"], results=tmp_path)
    assert table.attrs["baseline"].startswith("app=gpgpusim-dev_qv100_global-then-shared")
    assert len(table) == 2 and "speedup" in table
    why = sf.explain(stored[0].run_id, stored[1].run_id, results=tmp_path)
    assert sum(r["effect"] for r in why["issue_slots"]) == pytest.approx(why["cycles"]["delta"])
    parsed = sf.parse(*logs, aggregate=True)
    assert list(parsed["launches"]) == [1, 1, 1] and parsed.attrs["logs"][0]["status"] == "complete"
    with pytest.raises(UserError, match="no such log file"):
        sf.parse(tmp_path / "nope.log")
    with pytest.raises(UserError, match="no run matches"):
        sf.diff("variant=nope", stored[0].run_id, results=tmp_path)


@pytest.mark.gpgpusim
def test_sim_from_python(tmp_path):
    result = sf.sim("global", "batch3x3", params={"tile": 8}, results=tmp_path)
    assert result.status == "passed" and result.metrics["gpu_sim_cycle"] > 5000
    assert sf.runs(results=tmp_path).loc[0, "id"] == result.run_id


@pytest.mark.gpu
def test_run_from_python(tmp_path):
    result = sf.run("shared", "fmnist-conv2", params={"tile": 16}, results=tmp_path, store=False)
    assert result.status == "passed" and result.metrics["time_ms"] > 0
    assert not (tmp_path / "simflow.db").exists() or sf.runs(results=tmp_path).empty


def test_a_backend_option_it_does_not_take_is_refused_where_jobs_are_made():
    """Issue 59: not only the command line refuses a simulator config, image or sampling for the GPU backend."""
    from simflow.job import Job
    from simflow.kernels.problems import get_problem

    for option in ({"config": "SM7_QV100"}, {"docker_image": "simflow-gpgpusim"}, {"engine": "podman"}):
        with pytest.raises(UserError, match="backends with a simulator config \\(gpgpusim\\); backend gpu takes none"):
            Job.make("shared", {}, get_problem("batch3x3"), "gpu", **option)
    with pytest.raises(UserError, match="backends with sampled simulation \\(gpgpusim\\); backend gpu takes none"):
        sf.run("shared", "batch3x3", backend="gpu", sample="1,2,3")
