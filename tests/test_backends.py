"""Every registered backend keeps the contract; adding one is a module and one registry line."""

import json
import sys

import pytest
from conftest import simflow

from simflow.backends.base import Availability, Backend
from simflow.job import Job
from simflow.kernels.problems import get_problem
from simflow.registry import backend_class, backend_names, register
from simflow.results.metrics import default_metrics, speed_metric
from simflow.results.store import Store
from simflow.run.jobs import run_job
from simflow.run.sweep import run_sweep
from simflow.run.sweep_file import load_sweep


@pytest.mark.parametrize("name", backend_names())
def test_every_backend_declares_its_facts_and_probes_without_raising(name):
    cls = backend_class(name)
    assert issubclass(cls, Backend) and cls.name == name
    assert isinstance(cls.takes_config, bool) and isinstance(cls.serial, bool) and isinstance(cls.in_check, bool)
    assert cls.default_metrics and all(isinstance(m, str) for m in cls.default_metrics)
    assert cls.speed_metric == "" or cls.speed_metric in cls.default_metrics
    assert default_metrics(name) == list(cls.default_metrics) and speed_metric(name) == cls.speed_metric
    found = cls.probe()
    assert isinstance(found, Availability) and found.detail and (found.available or found.how_to_get)


ECHO = '''
from simflow.backends.base import Availability, Backend
from simflow.results.record import RunResult


class EchoBackend(Backend):
    """Answers with the kernel's source length: a backend with no hardware, for the test."""

    name = "echo"
    default_metrics = ("source_lines",)
    speed_metric = "source_lines"

    @classmethod
    def probe(cls):
        return Availability(True, "always here")

    def run(self, job, folder, kernel=None):
        kernel = kernel or job.kernel()
        result = RunResult.of(job, "passed", kernel.fingerprint(), kernels=kernel.kernel_names)
        result.add("source_lines", kernel.source.count("\\n"))
        return result
'''


@pytest.fixture
def echo(tmp_path, monkeypatch):
    (tmp_path / "echo_backend.py").write_text(ECHO)
    monkeypatch.syspath_prepend(str(tmp_path))
    from simflow import settings

    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # sweep workers import the module too
    before = settings.current()
    register("echo", "echo_backend:EchoBackend")  # the one line
    yield
    settings.use(before)
    sys.modules.pop("echo_backend", None)


def test_a_new_backend_is_one_module_and_one_registry_line(echo, tmp_path):
    """run_job, a sweep, compare, the command line's `run --backend` and `doctor` reach it with nothing else."""
    result = run_job(Job.make("shared", {}, get_problem("batch3x3"), "echo"), tmp_path)
    assert result.status == "passed" and result.metrics["source_lines"] > 10
    assert json.loads((tmp_path / "runs" / result.run_id / "result.json").read_text())["backend"] == "echo"
    sweep = tmp_path / "s.toml"
    sweep.write_text('backends = ["echo"]\n[[variants]]\nname = "global"\ntile = [8, 16]\n')
    with Store(tmp_path) as store:
        report = run_sweep(load_sweep(sweep), store, workers=1, quiet=True)
        assert len(report.stored) == 2 and not report.errors
        from simflow.analysis.compare import comparison

        table = comparison(store.runs(), ["variant"], baseline="tile=8").tables
    echo_table = next(t for t in table if t.backend == "echo")
    assert "source_lines" in echo_table.frame and "speedup" in echo_table.frame
    env = {"SIMFLOW_BACKENDS": "echo=echo_backend:EchoBackend", "SIMFLOW_RESULTS": str(tmp_path),
           "PYTHONPATH": str(tmp_path)}
    run = simflow("run", "global", "--backend", "echo", "--json", env=env)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["job"]["backend"] == "echo" and json.loads(run.stdout)["metrics"]["source_lines"] > 10
    text = simflow("run", "shared", "--backend", "echo", env=env)
    assert text.returncode == 0 and "backend echo: passed" in text.stdout and "source_lines" in text.stdout
    doctor = simflow("doctor", "--json", "--no-probe", "--require", "echo", env=env)
    assert doctor.returncode == 0, doctor.stderr
    assert {"component": "echo", "found": True, "detail": "always here", "how_to_get": ""} in json.loads(doctor.stdout)


# The echo backend, dying outright on tile=8 (as a worker killed for memory, or by a crash in native code, does).
CRASH = "import os\nimport signal\n" + ECHO.replace("class EchoBackend", "class CrashBackend").replace(
    'name = "echo"', 'name = "crash"').replace(
    "        kernel = kernel or job.kernel()",
    "        if job.params['tile'] == 8:\n            os.kill(os.getpid(), signal.SIGKILL)\n"
    "        kernel = kernel or job.kernel()")


def test_a_sweep_whose_worker_dies_outright_reports_that_job_and_runs_the_rest(tmp_path, monkeypatch):
    """Its pool broke and the sweep ended in a BrokenProcessPool traceback, the jobs after it never run (seen here:
    a worker crashed in native code during a long simulator sweep)."""
    from simflow import settings
    from simflow.run.sweep import WORKER_DIED

    (tmp_path / "crash_backend.py").write_text(CRASH)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # sweep workers import the module too
    before = settings.current()
    register("crash", "crash_backend:CrashBackend")
    try:
        sweep = tmp_path / "s.toml"
        sweep.write_text('backends = ["crash"]\n[[variants]]\nname = "global"\ntile = [8, 16, 32]\n')
        with Store(tmp_path) as store:
            report = run_sweep(load_sweep(sweep), store, workers=1, quiet=True)
            assert len(report.stored) == 2 and len(report.errors) == 1, (report.stored, report.errors)
            assert "tile=8" in report.errors[0][0] and report.errors[0][1] == WORKER_DIED
            assert sorted(run.params["tile"] for run in store.runs() if run.stored) == [16, 32]
    finally:
        settings.use(before)
        sys.modules.pop("crash_backend", None)
