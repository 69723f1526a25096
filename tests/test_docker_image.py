"""The simflow image, made by `simflow image build` around the simulator build simflow finds here, and
used for real (marked `docker`; it also needs that build, so `gpgpusim`).

The image is built once per session from this checkout (the engine's layer cache makes an unchanged
rebuild take seconds). No registry is reachable here: the debian:bookworm-slim base must exist locally
(docs/containers.md). SIMFLOW_TEST_IMAGE names the tag.
"""

import json
import os
import platform
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import sigint_default, simflow
from hardware import ENGINE, NEEDS

from simflow.results.store import Store

ROOT = Path(__file__).resolve().parents[1]
IMAGE = os.environ.get("SIMFLOW_TEST_IMAGE", "simflow-gpgpusim:test")
TIMING = ("sim_wall_s", "job_wall_s", "gpgpu_simulation_time", "gpgpu_simulation_rate_insn",
          "gpgpu_simulation_rate_cycle", "gpgpu_silicon_slowdown")  # wall-clock figures

pytestmark = [pytest.mark.docker, pytest.mark.gpgpusim]


def engine(*args, timeout=120):
    return subprocess.run([ENGINE, *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def image():
    if engine("image", "inspect", "debian:bookworm-slim").returncode != 0:
        pytest.skip("no debian:bookworm-slim base image in the engine and simflow's tests pull nothing; "
                    "make it as docs/containers.md says")
    proc = simflow("image", "build", "--tag", IMAGE, "--engine", ENGINE, timeout=3600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    assert f"built {IMAGE}" in proc.stdout
    return IMAGE


def sim_json(tmp_path, *args, env=None):
    proc = simflow("sim", *args, "--json", "--results", str(tmp_path), env={"SIMFLOW_ENGINE": ENGINE, **(env or {})})
    assert proc.stdout, proc.stderr
    return proc, json.loads(proc.stdout)


def same_build(a: str, b: str) -> bool:
    """Build strings name the commit abbreviated to a length that depends on the clone (a shallow one
    gives 7 digits): gpgpu-sim_git-commit-667834cf_modified_0.0 and ...-667834c_modified_0.0 are one."""
    pattern = re.compile(r"git-commit-([0-9a-f]+)")
    ca, cb = pattern.search(a), pattern.search(b)
    if not (ca and cb):
        return a == b
    short = min(len(ca[1]), len(cb[1]))
    return ca[1][:short] == cb[1][:short] and pattern.sub("", a) == pattern.sub("", b)


def no_container_left(run_id: str) -> bool:
    return engine("ps", "--all", "--quiet", "--filter", f"name=simflow-{run_id}").stdout.strip() == ""


def test_the_image_answers_doctor(image):
    proc = engine("run", "--rm", "--pull", "never", "--network", "none", image, timeout=300)  # its default command
    assert proc.returncode == 0, proc.stderr
    assert ("[ok] GPGPU-Sim: GPGPU-Sim at /opt/gpgpu-sim (from usual place), CUDA 11.8 (/opt/cuda-11.8/bin/nvcc)"
            in proc.stdout)
    assert "[ok] CUDA 11.x (for GPGPU-Sim)" in proc.stdout
    assert "[ok] log parser: reads logs with its scanner in C" in proc.stdout  # the image's cc built it
    assert " of 48 forms correct" not in proc.stdout  # the default answers at once: doctor --no-probe (issue 57)
    probed = engine("run", "--rm", "--pull", "never", "--network", "none", image, "simflow", "doctor", timeout=900)
    assert probed.returncode == 0, probed.stderr
    assert "[ok] GPGPU-Sim at /opt/gpgpu-sim: " in probed.stdout and " of 48 forms correct" in probed.stdout


def test_global_and_shared_pass_in_the_container_and_reuse_the_compile_cache(image, tmp_path):
    for variant in ("global", "shared"):
        proc, out = sim_json(tmp_path, variant, "--problem", "batch3x3", "--docker", image)
        assert proc.returncode == 0 and out["status"] == "passed", proc.stderr + json.dumps(out)[-2000:]
        assert out["environment"]["docker_image"] == image and out["metrics"]["gpu_tot_issued_cta"] == 16
        assert no_container_left(out["run_id"])
    first = json.loads((Path(out["artifacts"]["run_dir"]) / "execution.json").read_text())
    proc, again = sim_json(tmp_path, "shared", "--problem", "batch3x3", "--docker", image)
    second = json.loads((Path(again["artifacts"]["run_dir"]) / "execution.json").read_text())
    assert again["status"] == "passed"
    assert first["build_s"] > 0.5 > second["build_s"], (first["build_s"], second["build_s"])  # the host cache


def test_a_users_variant_and_stats_in_the_container(image, tmp_path):
    """examples/variants/rows and a user stat file reach the container's run: the host renders, the
    container simulates what was rendered, the host parses with the user's stats."""
    stats = tmp_path / "mine.toml"
    stats.write_text("[stats.partition_util]\nregex = '^partiton_level_parallism_util = +([0-9.]+)'\n"
                     "kind = \"per_kernel\"\nbetter = \"higher\"\n")
    variants = Path(__file__).resolve().parents[1] / "examples" / "variants"
    proc, out = sim_json(tmp_path, "rows", "--problem", "batch3x3", "--docker", image, "--variants", str(variants),
                         "--stats", str(stats))
    assert proc.returncode == 0 and out["status"] == "passed", proc.stderr + json.dumps(out)[-2000:]
    assert out["metrics"]["bad_elements"] == 0 and out["metrics"]["partition_util"] > 0
    assert no_container_left(out["run_id"])


@pytest.mark.skipif(not NEEDS["gpgpusim"][0], reason=f"no native simulator to compare with: {NEEDS['gpgpusim'][1]}")
def test_container_stats_equal_a_native_build_of_the_same_commit(image, tmp_path):
    for variant in ("global", "shared"):
        _, native = sim_json(tmp_path, variant, "--problem", "batch3x3")
        _, boxed = sim_json(tmp_path, variant, "--problem", "batch3x3", "--docker", image)
        if not same_build(native["environment"]["simulator_build"], boxed["environment"]["simulator_build"]):
            pytest.skip(f"different simulator builds: native {native['environment']['simulator_build']}, "
                        f"image {boxed['environment']['simulator_build']}")
        assert native["status"] == boxed["status"] == "passed"
        stats = {k: v for k, v in native["metrics"].items() if k not in TIMING}
        assert stats == {k: v for k, v in boxed["metrics"].items() if k not in TIMING}
        assert native["environment"]["config_hash"] == boxed["environment"]["config_hash"]


def test_a_sweep_in_the_container_with_two_workers(image, tmp_path):
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(f'name = "boxed"\nbackends = ["gpgpusim"]\nconfigs = ["SM7_QV100_small"]\n'
                     f'problems = ["batch3x3"]\ndocker = "{image}"\n'
                     '[[variants]]\nname = "global"\ntile = [8, 16]\n[[variants]]\nname = "shared"\ntile = [8, 16]\n')
    proc = simflow("sweep", str(sweep), "-j", "2", "--json", "--results", str(tmp_path),
                   env={"SIMFLOW_ENGINE": ENGINE})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert len(report["run"]) == 4 and not report["failed"] and not report["errors"]
    with Store(tmp_path) as store:
        runs = store.runs()
    assert {r.status for r in runs} == {"passed"} and {r.runner for r in runs} == {f"docker:{image}"}


def test_a_missing_image_is_a_clear_error_and_nothing_is_pulled(tmp_path):
    before = engine("images", "--quiet").stdout
    proc = simflow("sim", "global", "--docker", "simflow-no-such-image:1", "--results", str(tmp_path),
                   env={"SIMFLOW_ENGINE": ENGINE})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "no image 'simflow-no-such-image:1'" in proc.stderr and "never pulls" in proc.stderr
    assert engine("images", "--quiet").stdout == before
    assert not (tmp_path / "runs").exists()


def _started_container(proc: subprocess.Popen, tmp_path: Path) -> str:
    """The run id of the container that `proc` started, once it runs."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        names = engine("ps", "--format", "{{.Names}}", "--filter", "name=simflow-").stdout.split()
        folders = {p.name for p in (tmp_path / "runs").glob("*")} if (tmp_path / "runs").is_dir() else set()
        mine = [n.removeprefix("simflow-") for n in names if n.removeprefix("simflow-") in folders]
        if mine:
            return mine[0]
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.5)
    raise AssertionError("no container started in 120 s")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_and_sigterm_stop_the_container_and_keep_the_run(image, tmp_path, sig):
    env = {**os.environ, "SIMFLOW_ENGINE": ENGINE, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "simflow", "sim", "global", "--problem", "fmnist-conv1", "--batch",
                             "4", "--docker", image, "--results", str(tmp_path)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=sigint_default)
    run_id = _started_container(proc, tmp_path)
    time.sleep(3)  # the simulator is running by now
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert f"run {run_id} is kept as 'interrupted'" in err
    assert no_container_left(run_id)
    with Store(tmp_path) as store:
        (run,) = store.runs()
    assert run.status == "interrupted" and run.id == run_id


def test_a_kill_9_of_simflow_leaves_no_container_simulating(image, tmp_path):
    """The engine's client dies with simflow and stops the container; a container left anyway (its owner gone)
    is removed by the next container run."""
    env = {**os.environ, "SIMFLOW_ENGINE": ENGINE, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "simflow", "sim", "global", "--problem", "fmnist-conv1", "--batch",
                             "4", "--docker", image, "--results", str(tmp_path)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    run_id = _started_container(proc, tmp_path)
    time.sleep(3)
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 60
    while not no_container_left(run_id) and time.monotonic() < deadline:
        time.sleep(1)
    assert no_container_left(run_id)
    with Store(tmp_path, read_only=True) as store:  # the run is listed, as interrupted, though never stored
        (run,) = store.runs()
    assert (run.id, run.status, run.stored) == (run_id, "interrupted", False)
    # A container whose owner was killed before its client could stop it: the next run reaps it.
    orphan = engine("run", "--detach", "--init", "--pull", "never", "--network", "none", "--name", "simflow-orphan",
                    "--label", f"simflow.owner={platform.node()}:999999:1", image, "sleep", "600")
    assert orphan.returncode == 0, orphan.stderr
    proc, out = sim_json(tmp_path, "global", "--problem", "batch3x3", "--docker", image)
    assert out["status"] == "passed" and no_container_left("orphan")


def test_a_timeout_stops_the_container(image, tmp_path):
    proc, out = sim_json(tmp_path, "global", "--problem", "fmnist-conv1", "--batch", "4", "--docker", image,
                         "--timeout", "5")
    assert proc.returncode == 2 and out["status"] == "timed_out"
    assert no_container_left(out["run_id"])
