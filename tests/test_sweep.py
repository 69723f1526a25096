"""Sweep files (checked before anything runs), expansion, the cache, local and Dask executors, and
(marked gpgpusim) a real sweep resumed after kill -9."""

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cases import REAL
from conftest import simflow
from runs import sim_record

from simflow.errors import UserError
from simflow.job import RUN_OPTIONS, job_options
from simflow.results.store import Store
from simflow.run.sweep import plan, run_sweep
from simflow.run.sweep_file import load_sweep

ROOT = Path(__file__).resolve().parents[1]

GRID = """name = "grid"
backends = ["gpgpusim"]
configs = ["SM7_QV100"]
problems = ["batch3x3"]

[[variants]]
name = "global"

[[variants]]
name = "shared"
tile = [8, 16, 16]
unroll = ["none", "both"]
"""


def write(tmp_path, text, name="sweep.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_expansion_and_duplicates(tmp_path):
    sweep = load_sweep(write(tmp_path, GRID))
    assert sweep.name == "grid" and len(sweep.jobs) == 1 + 2 * 2 and sweep.duplicates == 2
    assert {j.backend for j in sweep.jobs} == {"gpgpusim"} and {j.config for j in sweep.jobs} == {"SM7_QV100"}
    shared = [dict(j.params) for j in sweep.jobs if j.variant == "shared"]
    assert {(p["tile"], p["unroll"]) for p in shared} == {(8, "none"), (8, "both"), (16, "none"), (16, "both")}
    both = load_sweep(write(tmp_path, GRID.replace('["gpgpusim"]', '["gpgpusim", "gpu"]')
                            .replace('["SM7_QV100"]', '["SM7_QV100", "SM7_QV100_small"]')))
    assert len(both.jobs) == 5 * 2 + 5  # configs only multiply the simulator's jobs


@pytest.mark.parametrize("change,where,message", [
    (('name = "grid"', 'name = "grid"\nbackend = "gpu"'), 2, "unknown key 'backend'; valid keys: name, backends"),
    (('name = "global"', 'name = "globl"'), 7, "unknown variant 'globl'; valid variants: global, constant"),
    (('unroll = ["none", "both"]', 'unrol = ["none"]'), 12, "variant shared has no parameter 'unrol'; valid"),
    (('tile = [8, 16, 16]', 'tile = [8, 12]'), 11, "parameter tile takes one of 8, 16, 32, got 12"),
    (('["gpgpusim"]', '["gpgpusim", "cpu"]'), 2, "unknown backend 'cpu'; valid backends: gpu, gpgpusim"),
    (('["SM7_QV100"]', '["SM8"]'), 3, "unknown simulator config 'SM8'; valid configs: H200, SM7_QV100"),
    (('["batch3x3"]', '["batch9x9"]'), 4, "unknown problem 'batch9x9'; presets: fmnist-conv1"),
])
def test_mistakes_name_the_line_and_the_choices(tmp_path, change, where, message):
    path = write(tmp_path, GRID.replace(*change))
    with pytest.raises(UserError) as info:
        load_sweep(path)
    assert str(info.value).startswith(f"{path}:{where}: ") and message in str(info.value)


def test_problem_tables(tmp_path):
    sweep = load_sweep(write(tmp_path, GRID.replace('["batch3x3"]', '["batch3x3", {preset = "fmnist-conv1", '
                                                                    'batch = 1}, {shape = "2,1,4,9,9,3"}]')))
    assert sorted({(j.problem.name, j.problem.B) for j in sweep.jobs}) == [("batch3x3", 4), ("custom", 2),
                                                                          ("fmnist-conv1", 1)]
    with pytest.raises(UserError, match=r"sweep.toml:4: a problem table takes preset or shape"):
        load_sweep(write(tmp_path, GRID.replace('["batch3x3"]', '[{preset = "batch3x3", shape = "1,1,1,4,4,3"}]')))


def test_other_mistakes(tmp_path):
    with pytest.raises(UserError, match=r"no \[\[variants\]\] table"):
        load_sweep(write(tmp_path, 'backends = ["gpu"]\n'))
    with pytest.raises(UserError, match="not valid TOML"):
        load_sweep(write(tmp_path, "backends = [\n"))
    with pytest.raises(UserError, match="seed must be a number"):
        load_sweep(write(tmp_path, 'seed = "x"\n' + GRID))
    with pytest.raises(UserError, match="no sweep file"):
        load_sweep(tmp_path / "absent.toml")


def test_the_store_answers_jobs_already_run(tmp_path):
    with Store(tmp_path) as store:
        store.add(sim_record(tmp_path, "global"))
        sweep = load_sweep(write(tmp_path, GRID))
        planned = plan(sweep, store)
        todo, cached = planned.todo, planned.cached
        assert len(cached) == 1 and len(todo) == 4 and all(j.variant == "shared" for j in todo)


# Refusals are real records made without any simulator; jobs that need one fail with the reason.
MIXED = """name = "mixed"
backends = ["gpgpusim"]
problems = ["1,1024,4,16,16,5,2"]
docker = "simflow-gpgpusim:absent"

[[variants]]
name = "shared_weights"
tile = [16, 32]

[[variants]]
name = "global"
"""


@pytest.mark.parametrize("executor", ["local", "dask"])
def test_executors_record_every_outcome_and_resume(tmp_path, monkeypatch, executor):
    monkeypatch.setenv("PATH", str(tmp_path / "no-docker-here"))  # the global job cannot start
    sweep = load_sweep(write(tmp_path, MIXED))
    with Store(tmp_path) as store:
        report = run_sweep(sweep, store, workers=2, executor=executor, quiet=True)
        assert len(report.stored) == 2 and len(report.failed) == 2  # both shared_weights refused
        assert all("refused" in why and "shared memory per block" in why for _, why in report.failed)
        assert len(report.errors) == 1 and "docker command, which is not on PATH" in report.errors[0][1]
        again = run_sweep(sweep, store, workers=2, executor=executor, quiet=True)
        assert sorted(again.cached) == sorted(report.stored) and again.stored == []  # nothing run twice
        assert len(store.ids()) == 2


@pytest.mark.parametrize("executor", ["local", "dask"])
def test_jobs_a_job_feeds_as_it_ends_run_in_the_same_sweep_once_each(tmp_path, monkeypatch, executor):
    """`then`: what may start once a job has ended (a sampled simulation's samples after their probe) is planned
    against the store and run in the same sweep, each job once however often it is fed; a job the store answers
    feeds its own at once."""
    if executor == "dask":
        pytest.importorskip("distributed")
    monkeypatch.setenv("PATH", str(tmp_path / "no-docker-here"))  # every global job fails fast, as an error
    sweep = load_sweep(write(tmp_path, MIXED))
    first = next(j for j in sweep.jobs if j.variant == "global")
    later = [dataclasses.replace(first, problem=first.problem.with_batch(b)) for b in (2, 3)]
    fed, ended = {first: later + [first], later[0]: [later[1]]}, []

    def then(job):
        ended.append(job)
        return fed.get(job, [])

    with Store(tmp_path) as store:
        report = run_sweep(sweep, store, workers=2, executor=executor, quiet=True, then=then)
        assert len(report.errors) == 3 and {j.problem.B for j in ended if j.variant == "global"} == {1, 2, 3}
        assert len(ended) == 2 + 3 and len(report.failed) == 2  # the refusals too; each job ran once
        ended.clear()
        again = run_sweep(sweep, store, workers=2, executor=executor, quiet=True, then=then)
        assert len(again.cached) == 2 and len(again.errors) == 3 and len(ended) == 5


def test_no_fed_job_starts_after_an_interruption(tmp_path, monkeypatch):
    """Ctrl-C or SIGTERM while a sweep runs: the runs in flight are recorded, and what any job fed is not started (a
    sampled simulation starts no sample after its probes were stopped)."""
    from simflow.run import sweep as sweep_module
    from simflow.run.jobs import JobOutcome

    started = []

    def interrupted_after_one(feed, *_):  # the local executor's shape: one job ends, then Ctrl-C with one in flight
        queue = feed.queues[False]
        started.extend([queue.popleft(), queue.popleft()])
        yield JobOutcome(started[0], error="ended")
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            yield JobOutcome(started[1], error="interrupted")
            raise

    monkeypatch.setattr(sweep_module, "_local", interrupted_after_one)
    sweep = load_sweep(write(tmp_path, GRID))
    fed = []

    def then(job):
        fed.append(dataclasses.replace(job, problem=job.problem.with_batch(7)))
        return fed[-1:]

    with Store(tmp_path) as store:
        report = run_sweep(sweep, store, workers=2, quiet=True, then=then)
    assert report.interrupted and [why for _, why in report.errors] == ["ended", "interrupted"]
    assert fed and not set(fed) & set(started) and len(started) == 2


def test_cli_dry_run_and_json(tmp_path):
    path = write(tmp_path, GRID)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SIMFLOW_RESULTS": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "simflow", "sweep", str(path), "--dry-run"], capture_output=True,
                          text=True, env=env)
    assert proc.returncode == 0 and "5 jobs, 2 duplicates removed, 0 stored already, 5 to run" in proc.stdout
    bad = write(tmp_path, GRID.replace("tile = [8, 16, 16]", "tile = [7]"), "bad.toml")
    proc = subprocess.run([sys.executable, "-m", "simflow", "sweep", str(bad)], capture_output=True, text=True,
                          env=env)
    assert proc.returncode == 1 and f"{bad}:11:" in proc.stderr and not (tmp_path / "runs").exists()


def test_slurm_needs_dask_jobqueue_and_says_so(tmp_path):
    pytest.importorskip("distributed")
    try:
        import dask_jobqueue  # noqa: F401
        pytest.skip("dask-jobqueue is installed here")
    except ImportError:
        pass
    sweep = load_sweep(write(tmp_path, MIXED))
    with Store(tmp_path) as store, pytest.raises(UserError, match=r"pip install 'simflow\[cluster\]'"):
        run_sweep(sweep, store, executor="slurm", quiet=True)


# ---- the real simulator -------------------------------------------------------------------------



@pytest.mark.gpgpusim
def test_a_sweep_killed_in_the_middle_resumes_without_losing_or_repeating(tmp_path):
    path = write(tmp_path, REAL)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SIMFLOW_RESULTS": str(tmp_path)}
    cmd = [sys.executable, "-m", "simflow", "sweep", str(path), "-j", "2"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # kill -9 once some runs are stored and others are running
        time.sleep(0.5)
        if (tmp_path / "simflow.db").exists():
            with Store(tmp_path) as store:
                if 1 <= len(store.ids()) < 6:
                    break
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    with Store(tmp_path) as store:
        before = store.ids()
    assert 1 <= len(before) < 6
    done = subprocess.run([*cmd, "--json"], env=env, capture_output=True, text=True, timeout=600)
    report = json.loads(done.stdout)
    assert sorted(report["cached"]) == sorted(before)  # nothing lost, nothing run twice
    assert len(report["cached"]) + len(report["run"]) == 6 and report["failed"] == []
    with Store(tmp_path) as store:
        listed = store.runs()
        runs = [r for r in listed if r.stored]
        keys = [(r.fingerprint, r.config_key) for r in runs]
        assert len(runs) == 6 and len(set(keys)) == 6 and all(r.status == "passed" for r in runs)
        # the runs the kill stopped are listed too, as interrupted and not stored: nothing lost
        assert all(r.status == "interrupted" for r in listed if not r.stored)


@pytest.mark.gpgpusim
def test_a_sweep_killed_outright_leaves_runs_that_say_so_and_no_leak_warning(tmp_path):
    """kill -9 of the sweep alone (issue 57): its workers get their death signal and keep their runs as
    interrupted, saying the sweep ended, not that a user pressed Ctrl-C; no "leaked semaphore" warning follows."""
    path = write(tmp_path, REAL)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SIMFLOW_RESULTS": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "simflow", "sweep", str(path), "-j", "2"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list(tmp_path.glob("runs/*/sim.log")):  # a simulator is running
        time.sleep(0.2)
    os.kill(proc.pid, signal.SIGKILL)
    out = proc.stdout.read().decode(errors="replace")  # its end: every process that holds the pipe is gone
    proc.wait()
    assert "leaked" not in out, out
    with Store(tmp_path) as store:
        stopped = [r for r in store.runs() if r.status == "interrupted"]
    assert stopped and all("stopped because its sweep ended (killed outright)" in r.reason for r in stopped), \
        [r.reason for r in stopped]


def test_refused_combinations_are_skipped_with_their_line(tmp_path, monkeypatch):
    """wmma refuses batch3x3's 4 output channels at render time: named with its line, the rest runs."""
    monkeypatch.setenv("PATH", str(tmp_path / "no-engine-here"))
    path = write(tmp_path, 'problems = ["batch3x3"]\ndocker = "simflow-gpgpusim:absent"\n\n'
                           '[[variants]]\nname = "shared_weights"\ntile = 32\n\n'
                           '[[variants]]\nname = "wmma"\n')  # wmma's table starts at line 8
    sweep = load_sweep(path)
    with Store(tmp_path) as store:
        planned = plan(sweep, store)
        assert len(planned.refused) == 1 and planned.refused[0][0].variant == "wmma"
        assert sweep.where(planned.refused[0][0]) == f"{path}:8"
        assert "output channels M for WMMA fragments" in planned.refused[0][1]
        report = run_sweep(sweep, store, workers=1, quiet=True)
    assert report.refused and report.refused[0][0].startswith(f"{path}:8 wmma")
    with Store(tmp_path) as store:  # the refusal is a stored record, once however often the sweep runs
        run_sweep(sweep, store, workers=1, quiet=True)
        refused = [r for r in store.runs() if r.variant == "wmma"]
    assert len(refused) == 1 and refused[0].status == "refused" and "WMMA fragments" in refused[0].reason
    # a missing engine: one error text for every job it stopped
    assert len(report.grouped_errors()) == 1


def test_a_sweep_of_only_refusals_or_of_nothing_is_an_error(tmp_path):
    only = write(tmp_path, '[[variants]]\nname = "wmma"\n')
    with Store(tmp_path) as store, pytest.raises(UserError, match=r"every job of .* is refused; the first, .*:1"):
        plan(load_sweep(only), store)
    empty = tmp_path / "empty.toml"
    empty.write_text('[[variants]]\nname = "shared"\ntile = []\n')
    with pytest.raises(UserError, match=r"the sweep expands to no job \(shared.tile is an empty list\)"):
        load_sweep(empty)


def test_badly_typed_or_encoded_sweep_files(tmp_path):
    latin = tmp_path / "latin.toml"
    latin.write_bytes('name = "caf\xe9"\n'.encode("latin-1"))
    with pytest.raises(UserError, match="not UTF-8 text"):
        load_sweep(latin)
    odd = tmp_path / "odd.toml"
    odd.write_text('variants = ["shared"]\n')
    with pytest.raises(UserError, match="no \\[\\[variants\\]\\] table"):
        load_sweep(odd)
    typed = tmp_path / "typed.toml"
    typed.write_text('[[variants]]\nname = "shared"\ntile = {a = 1}\n')
    with pytest.raises(UserError, match="typed.toml"):
        load_sweep(typed)


@pytest.mark.parametrize("bad", ["timeout = 0", "timeout = -5", "repeats = 0", "warmup = -1"])
def test_non_positive_settings_are_refused_with_their_line(tmp_path, bad):
    path = write(tmp_path, f'name = "x"\n{bad}\n[[variants]]\nname = "global"\n')
    with pytest.raises(UserError, match=f"{path}:2: .* must be (more than 0|0 or more|1 or more)"):
        load_sweep(path)


@pytest.mark.gpgpusim
def test_a_sweep_on_a_terminal_names_each_job_as_it_ends(tmp_path):
    """One bar; above it each finished job with its status and figure, a failure with its reason as it happens
    (here a config whose option the simulator rejects), and an ETA from the jobs' own durations."""
    import shutil

    if not shutil.which("script"):
        pytest.skip("needs util-linux 'script' for a pseudo-terminal")
    bad = tmp_path / "bad.toml"
    bad.write_text('base = "SM7_QV100"\n[options]\ngpgpu_no_such_option = "1"\n')
    path = write(tmp_path, f'name = "tty"\nbackends = ["gpgpusim"]\nconfigs = ["SM7_QV100", "{bad}"]\n'
                           'problems = ["batch3x3"]\n[[variants]]\nname = "global"\n[[variants]]\nname = "shared"\n')
    typescript = tmp_path / "typescript"
    command = f"stty rows 40 cols 150; {sys.executable} -m simflow sweep {path} -j 2 --results {tmp_path / 'r'}"
    subprocess.run(["script", "-qfec", command, str(typescript)], capture_output=True, timeout=900,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", typescript.read_text(errors="replace")).replace("\r", "\n")
    assert re.search(r"passed\s+global .*SM7_QV100.*: [\d.]+ gpu_sim_cycle", text), text[-3000:]
    assert re.search(r"aborted\s+shared .*\n\s+the simulator aborted: .*Unknown Option", text), text[-3000:]
    assert "about " in text and " left" in text and "4/4" in text
    plain = simflow("sweep", str(path), "--results", str(tmp_path / "r"))  # not a terminal: no bar, no job lines
    assert "[" not in plain.stderr.replace("[gpgpusim", "") and "passed " not in plain.stderr


def test_every_run_option_is_a_sweep_key_an_option_and_an_api_keyword(tmp_path):
    """Issue 59: a run option is declared once (simflow.job.RUN_OPTIONS); the sweep file, the command line and the
    API take it from there, checked alike."""
    values = {"seed": 7, "warmup": 1, "repeats": 2, "sample_check": True, "docker": "img", "engine": "podman",
              "timeout": 5.5}
    assert set(values) == {o.flag for o in RUN_OPTIONS}  # a new option gets a value here
    lines = "\n".join(f"{k} = {json.dumps(v)}" for k, v in values.items())
    text = f'name = "x"\nbackends = ["gpgpusim"]\n{lines}\n[[variants]]\nname = "global"\n'
    job = load_sweep(write(tmp_path, text)).jobs[0]
    assert {o.flag: getattr(job, o.field) for o in RUN_OPTIONS} == values
    usage = simflow("run", "--help").stdout
    assert all(f"--{o.flag.replace('_', '-')}" in usage for o in RUN_OPTIONS)
    with pytest.raises(UserError, match=r"sweep.toml:2: engine must be one of docker, podman, got 'x'"):
        load_sweep(write(tmp_path, 'name = "x"\nengine = "x"\n[[variants]]\nname = "global"\n'))
    with pytest.raises(UserError, match="unknown run option retries; valid: seed, warmup"):
        job_options({"retries": 2})
    assert job_options({"docker": "img", "timeout_s": 3}) == {"docker_image": "img", "timeout_s": 3}
