"""Size before work (issue 57): a layer larger than this machine's memory, or the simulated GPU's, or past a
grid limit, is refused by name with its figures before anything starts or "running" is said; input generation
and the reference hear SIGTERM within a second."""

import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import ROOT, simflow

from simflow.errors import LimitError
from simflow.kernels import footprint
from simflow.kernels.problems import parse_shape
from simflow.kernels.reference import conv2d_reference, make_inputs
from simflow.kernels.variants import render


def test_an_oversized_layer_is_refused_with_the_figures_before_running_is_said(tmp_path):
    """The issue's case: 10 GB of input on a 24 GB machine was run, growing 150 MB/s (a 50000 x 50000 image, now
    refused on its indexing first, below). No simulator or CUDA 11 is needed to refuse it."""
    out = simflow("sim", "global", "--shape", "64,64,64,512,512,3", "--results", str(tmp_path), "--json",
                  timeout=60)  # 4 GiB of input, its float64 reference 34 GiB
    assert "running" not in out.stderr, out.stderr
    record = json.loads(out.stdout)
    assert record["status"] == "refused"
    assert record["reason"].startswith("host memory") and "GiB" in record["reason"] and "--batch" in record["reason"]


def test_a_grid_past_its_limit_is_refused_before_running_is_said(tmp_path):
    out = simflow("sim", "global", "--shape", "1,1,1,99999999,99999999,3", "--results", str(tmp_path), "--json",
                  timeout=60)
    assert "running" not in out.stderr
    assert "grid dimension x" in json.loads(out.stdout)["reason"]


def test_the_simulated_gpus_memory_is_a_limit_of_its_own(monkeypatch):
    monkeypatch.setattr(footprint, "host_available", lambda: 1 << 50)  # a machine with memory to spare
    problem = parse_shape("64,64,64,1024,1024,3,1")  # 17 GB of input and as much output
    with pytest.raises(LimitError, match=r"device memory of the simulated GPU .* needs 32\.\d GiB, the limit is 32"):
        footprint.check(render("global", problem), problem, simulated=True)
    footprint.check(render("global", problem), problem, simulated=False)  # an H200 has 141 GB: its run checks


def test_host_memory_is_measured_against_what_is_available_now(monkeypatch):
    problem = parse_shape("16,3,64,224,224,3,1")
    kernel = render("global", problem)
    need = footprint.host_bytes(kernel, problem, simulated=True)
    assert need > 8 * 16 * 64 * 224 * 224  # the float64 output at least
    monkeypatch.setattr(footprint, "host_available", lambda: int(need / footprint.HOST_SHARE) + 1)
    footprint.check(kernel, problem, simulated=True)
    monkeypatch.setattr(footprint, "host_available", lambda: int(need / footprint.HOST_SHARE) - 1)
    with pytest.raises(LimitError, match="host memory"):
        footprint.check(kernel, problem, simulated=True)
    monkeypatch.setattr(footprint, "host_available", lambda: 0)  # unknown: no check
    footprint.check(kernel, problem, simulated=True)


def test_chunked_inputs_and_reference_are_the_values_they_were():
    """Inputs drawn in chunks are the one-draw values (seed figures stay exact); the reference computed by row
    blocks equals the whole-array contraction."""
    problem = parse_shape("2,3,5,23,19,3,1")
    rng = np.random.default_rng(7)
    x_old = rng.uniform(-1.0, 1.0, size=problem.input_shape).astype(np.float32)
    w_old = rng.uniform(-1.0, 1.0, size=problem.weight_shape).astype(np.float32)
    x, w = make_inputs(problem, 7)
    assert (x == x_old).all() and (w == w_old).all()
    import simflow.kernels.reference as reference

    whole = conv2d_reference(x, w, 1, 2)
    old, reference.REFERENCE_CHUNK = reference.REFERENCE_CHUNK, 100
    try:
        assert np.array_equal(conv2d_reference(x, w, 1, 2), whole)
    finally:
        reference.REFERENCE_CHUNK = old


SLOW = """
import sys, time
from simflow import processes
from simflow.kernels.problems import parse_shape
from simflow.kernels.reference import conv2d_reference, make_inputs
import numpy as np
processes.sigterm_as_ctrl_c()
problem = parse_shape("1,1,1,12000,12000,3")  # 144 M inputs: one draw of them took 1.5 s before chunks
print("start", flush=True)
try:
    if sys.argv[1] == "inputs":
        for seed in range(1000):
            make_inputs(problem, seed)
    else:
        x = np.ones((1, 1, 6000, 6000))
        for _ in range(1000):
            conv2d_reference(x, np.ones((1, 1, 3, 3)), 1)
except KeyboardInterrupt:
    print("stopped", flush=True)
"""


@pytest.mark.parametrize("phase", ["inputs", "reference"])
def test_sigterm_is_heard_within_a_second_in_each_phase(phase):
    proc = subprocess.Popen([sys.executable, "-c", SLOW, phase], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout.readline().strip() == "start"
    time.sleep(1.5)  # well inside the work
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    heard = proc.stdout.readline()  # the handler's line: when the signal was heard, not when the process has exited
    waited = time.monotonic() - sent
    proc.communicate(timeout=30)
    assert heard.strip() == "stopped" and waited < 1.0


def test_an_image_past_32_bit_indexing_is_refused_on_every_backend(monkeypatch):
    """global on one 50000 x 50000 image read past its output on an H200 (an illegal address: the plane's index is
    a 32-bit int), on a machine with memory for it. It is refused before anything runs."""
    monkeypatch.setattr(footprint, "host_available", lambda: 1 << 50)  # a machine with memory to spare
    problem = parse_shape("1,1,1,50000,50000,3")
    for simulated in (False, True):
        with pytest.raises(LimitError, match=r"elements of one image's input .*: needs 2,500,000,000, the limit is "
                                             r"2,147,483,647"):
            footprint.check(render("global", problem), problem, simulated=simulated)
    footprint.check(render("global", parse_shape("8,1,1,40000,40000,3")), parse_shape("8,1,1,40000,40000,3"),
                    simulated=False)  # 1.6e9 an image: the batch offset is 64-bit
