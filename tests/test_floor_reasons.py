"""benchmarks/floor_reasons.py on real H200 profiles (tests/data/ncu-h200_*): its line for a layer is what the
counters say, its shares add up, and its limit follows the rules its docstring states."""

import importlib.util
import math
import sys
from pathlib import Path

import pytest
from test_hw_explain import profile

from simflow.backends import ncu
from simflow.kernels.problems import get_problem

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "floor_reasons.py"


@pytest.fixture(scope="module")
def floor_reasons():
    spec = importlib.util.spec_from_file_location("benchmark_floor_reasons", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def test_a_suite_label_gives_the_variant_and_its_parameters(floor_reasons):
    assert floor_reasons.parse_config("wgmma_nhwc:io=bfloat16,tile_n=192,persistent=True,precision=bf16") == (
        "wgmma_nhwc", {"io": "bfloat16", "tile_n": "192", "persistent": "True", "precision": "bf16"})
    assert floor_reasons.parse_config("implicit_gemm_async: [float32]") == ("implicit_gemm_async", {})


@pytest.mark.parametrize("variant, preset, params", [("wgmma_nhwc", "resnet50-3x3-64-64-56", {}),
                                                     ("wgmma_nhwc", "vgg16-conv3_2", {"precision": "tf32"}),
                                                     ("winograd", "vgg16-conv3_2", {})])
def test_a_profiles_line_is_its_counters(floor_reasons, variant, preset, params):
    run = profile(variant, preset, params)
    problem = get_problem(preset)
    line = floor_reasons.reasons(run, problem, problem.min_bytes("float32"), 4200.0)
    evidence = {what: value for _, what, value, _, _ in ncu.evidence(run.metrics)}
    assert line["tensor pipe %"] == round(evidence["tensor pipe active"], 1)
    assert line["waves"] == round(evidence["waves of blocks per SM"], 2)
    issued, lost = ncu.issue_slots(run.metrics)
    shares = [float(part.rsplit(" ", 2)[-2]) for part in line["slots lost to"].split(", ")]
    assert len(shares) == 2 and shares[0] >= shares[1]
    assert line["issued % of slots"] + sum(100 * v / (issued + sum(lost.values())) for v in lost.values()) == \
        pytest.approx(100, abs=0.1)
    assert line["ncu us"] > 0 and line["DRAM MB"] > 0 and line["compulsory MB"] > 0
    # the launches beside the GEMM: x and w copies (10.56 and 2.98 of 50.05 us on resnet50-3x3-64-64-56; 28.03 and
    # 3.58 of 215.9 on vgg16-conv3_2), Winograd's transforms
    assert line["other launches %"] == {"resnet50-3x3-64-64-56": 27.0, "vgg16-conv3_2": 14.6 if variant == "wgmma_nhwc"
                                        else 18.6}[preset]
    l2 = evidence.get("L2 sector throughput", math.nan)  # not in profiles made before simflow asked for it
    waves = evidence["waves of blocks per SM"]
    assert line["limit"] == floor_reasons.limit(evidence["tensor pipe active"], line["issued % of slots"],
                                                line["DRAM % of copy rate"], l2, waves, lost)


def test_the_limit_is_the_first_rule_that_holds(floor_reasons):
    lost = {"long_scoreboard": 5.0, "barrier": 9.0}
    nan = math.nan
    assert floor_reasons.limit(75, 90, 90, 90, 1.1, lost) == "tensor pipe"
    assert floor_reasons.limit(30, 72, 90, 90, 1.1, lost) == "issue"
    assert floor_reasons.limit(30, 20, 70, 90, 1.1, lost) == "DRAM"
    assert floor_reasons.limit(30, 20, 10, 65, 0.76, lost) == "L2"  # before the empty slots
    assert floor_reasons.limit(30, 20, 10, 55, 1.0, lost) == "latency: barrier"  # L2 under 60 %
    assert floor_reasons.limit(30, 20, 10, nan, 1.4, lost) == "few blocks (30 % of slots empty)"  # 1.4 of 2 waves
    assert floor_reasons.limit(30, 20, 10, nan, 0.76, lost) == "few blocks (24 % of slots empty)"
    assert floor_reasons.limit(30, 20, 10, nan, 0.85, lost) == "latency: barrier"  # 15 % empty
    assert floor_reasons.limit(30, 20, 10, nan, 1.9, lost) == "latency: barrier"  # its last wave 90 % full
    assert floor_reasons.limit(30, 20, 10, nan, 1.0, lost) == "latency: barrier"  # one whole wave: no tail
    assert floor_reasons.limit(nan, nan, nan, nan, 5.0, {}) == "latency: ?"
