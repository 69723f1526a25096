"""simflow report: a self-contained page with tables and real PNG plots, and the GPU/simulator side by side."""

import base64
import re
from pathlib import Path

import pytest
from runs import gpu_record, sim_record

from simflow.analysis.report import write_report
from simflow.errors import UserError
from simflow.results.store import Store

PNG = b"\x89PNG\r\n\x1a\n"
DATA = Path(__file__).parent / "data"


def test_report_of_simulator_and_gpu_runs(tmp_path):
    pytest.importorskip("matplotlib")
    with Store(tmp_path) as store:
        store.add(sim_record(tmp_path, "global"))
        store.add(sim_record(tmp_path, "shared"))
        store.add(gpu_record("g-global", "global", 0.020))
        store.add(gpu_record("g-shared", "shared", 0.016))
        runs = store.runs()
    out = tmp_path / "report"
    paths = write_report(runs, out, by=["variant"], baseline="global")
    page = (out / "index.html").read_text()
    assert paths[:2] == [out / "index.html", out / "report.md"]
    for png in paths[2:]:
        assert png.read_bytes().startswith(PNG) and png.stat().st_size > 5000
    embedded = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(embedded) == len(paths) - 2 and all(base64.b64decode(e).startswith(PNG) for e in embedded)
    assert "<h2>gpgpusim on batch3x3" in page and "<h2>gpu on batch3x3" in page
    assert "GPU and simulator side by side" in page and "src=" in page and "http" not in page.replace(
        "http-equiv", "")
    md = (out / "report.md").read_text()
    assert "| variant=shared |" in md and "![gpu-vs-sim](gpu-vs-sim.png)" in md
    # shared over global: 0.020/0.016 on the GPU, 6693/7277 cycles in the simulator
    assert "| variant=shared | 1.250 | 0.920 |" in md


def test_empty_selection_says_so(tmp_path):
    pytest.importorskip("matplotlib")
    with pytest.raises(UserError, match="no stored run matches"):
        write_report([], tmp_path, by=["variant"])


def test_gpu_and_simulator_are_paired_on_every_parameter(tmp_path):
    """A GPU tile=32 run is never set beside a simulator tile=16 run of the same variant."""
    pytest.importorskip("matplotlib")
    with Store(tmp_path) as store:
        store.add(sim_record(tmp_path, "global"))
        store.add(sim_record(tmp_path, "shared"))
        store.add(gpu_record("g-global-32", "global", 0.030, {"tile": 32}))
        store.add(gpu_record("g-global-16", "global", 0.020))
        store.add(gpu_record("g-shared-16", "shared", 0.016))
        runs = store.runs()
    with pytest.raises(UserError, match="baseline 'global' matches several groups: variant=global,tile=32; "
                                        "variant=global,tile=16"):
        write_report(runs, tmp_path / "r", by=["variant"], baseline="global")
    write_report(runs, tmp_path / "r", by=["variant"], baseline="variant=global,tile=16")
    md = (tmp_path / "r" / "report.md").read_text()
    side = md.split("## GPU and simulator side by side")[1]
    assert "tile=32" not in side and "| variant=shared | 1.250 | 0.920 |" in side


def test_simulator_runs_over_simulated_cycles(tmp_path):
    """The report plots IPC, occupancy and L1D hit rate from each run's intervals.csv beside its totals."""
    pytest.importorskip("matplotlib")
    sampled = DATA / "accelsim-fork_qv100_batch3x3_shared_sampled.log.gz"
    with Store(tmp_path) as store:
        store.add(sim_record(tmp_path, "global"))  # an older log: no progress samples, no intervals
        shared = sim_record(tmp_path, "shared", log=sampled)
        store.add(shared)
        runs = store.runs()
    intervals = Path(shared.artifacts["intervals"])
    header = intervals.read_text().splitlines()[0]
    assert header == "kernel,launch,cycle_start,cycle_end,ipc,occupancy,l1d_accesses,l1d_hit_rate"
    out = tmp_path / "report"
    paths = write_report(runs, out, by=["variant"], baseline="global")
    over = out / "gpgpusim-0-over-cycles.png"
    assert over in paths and over.read_bytes().startswith(PNG)
    md = (out / "report.md").read_text()
    assert "over simulated cycles" in md and f"| variant=shared | {shared.run_id} | 15 | 7277 |" in md
    assert "variant=global | " in md.split("over simulated cycles")[0]  # the totals table shows only runs drawn
    intervals.unlink()
    write_report(runs, out, by=["variant"], baseline="global")
    assert f"No intervals for: {shared.run_id} ({intervals} is gone)." in (out / "report.md").read_text()
