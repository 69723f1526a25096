"""simflow.sampling: the linear estimate from three sampled batches and its bound (the simulator's side is
validated by benchmarks/sampling.py)."""

import pytest

from simflow.sampling import extrapolate


def _metrics(batch: int, wave_cycles: float = 1000.0, fill: float = 0.0) -> dict:
    # cycles: launch latency + whole waves (4 images a wave) + a fill cost paid by the first wave only
    return {"gpu_sim_cycle": 5000 + wave_cycles * batch / 4 + fill, "gpu_sim_insn": 3000.0 * batch + 100,
            "L1D_total_cache_misses": 7.0 * batch}


def test_counts_that_add_up_over_blocks_are_exact():
    points = [(b, _metrics(b)) for b in (4, 8, 12)]
    est = extrapolate(points, 400, wave_images=4)
    assert est["gpu_sim_insn"].value == 3000 * 400 + 100 and est["gpu_sim_insn"].bound == 0
    assert est["L1D_total_cache_misses"].value == 2800
    assert est["gpu_sim_cycle"].value == 5000 + 1000 * 100
    assert est["gpu_sim_cycle"].bound == 0.5 * 1000  # half a wave: the last one may be part full
    assert est["gpu_ipc"].value == pytest.approx((3000 * 400 + 100) / 105000)
    assert "gpgpu_n_shmem_insn" not in est  # not in the samples: no estimate


def test_a_layer_still_filling_gets_a_wider_bound_that_covers_the_truth():
    """The first sample pays a fill cost the others do not: the slopes disagree, and that disagreement,
    carried to the real batch, bounds the error."""
    points = [(4, _metrics(4, fill=600)), (8, _metrics(8, fill=150)), (12, _metrics(12, fill=0))]
    est = extrapolate(points, 400, wave_images=4)["gpu_sim_cycle"]
    truth = _metrics(400)["gpu_sim_cycle"]
    assert est.bound > 500 and abs(est.value - truth) <= est.bound


def test_samples_must_be_three_increasing_batches_under_the_real_one():
    with pytest.raises(ValueError, match="three sampled batches"):
        extrapolate([(4, _metrics(4)), (8, _metrics(8))], 100, 4)
    with pytest.raises(ValueError, match="three sampled batches"):
        extrapolate([(8, _metrics(8)), (4, _metrics(4)), (12, _metrics(12))], 100, 4)
    with pytest.raises(ValueError, match="three sampled batches"):
        extrapolate([(4, _metrics(4)), (8, _metrics(8)), (12, _metrics(12))], 10, 4)
