"""simflow report: one page and its markdown twin from one model (Jinja2), SVG figures embedded, explain's
verdict per comparison, kernels one by one, the timeline with the launch latency shaded; and the page as a
person sees it, in a real headless Chromium at 1280 px (no sideways scroll, every legend and label inside its
figure), photographed into tests/artifacts/."""

import csv
import json
import math
import re
from pathlib import Path

import pytest
from browser import measure, screenshot
from conftest import ROOT, simflow
from runs import gpu_record, sim_record

from simflow.analysis.report import short_labels, write_report
from simflow.errors import UserError
from simflow.results.store import Store

DATA = Path(__file__).parent / "data"
ARTIFACTS = Path(__file__).parent / "artifacts"  # screenshots a person can look at (not committed)


def test_report_of_simulator_and_gpu_runs(tmp_path):
    with Store(tmp_path) as store:
        store.add(sim_record(tmp_path, "global"))
        store.add(sim_record(tmp_path, "shared"))
        store.add(gpu_record("g-global", "global", 0.020))
        store.add(gpu_record("g-shared", "shared", 0.016))
        runs = store.runs()
    out = tmp_path / "report"
    paths = write_report(runs, out, by=["variant"], baseline="global")
    page, md = (out / "index.html").read_text(), (out / "report.md").read_text()
    assert paths[:2] == [out / "index.html", out / "report.md"]
    for figure in paths[2:]:  # each figure a file for the markdown, and the same SVG inside the page
        text = figure.read_text()
        assert figure.suffix == ".svg" and text.startswith("<svg") and text.strip() in page
        assert f"({figure.name})" in md
    assert "http" not in re.sub(r'xmlns="http://www.w3.org/2000/svg"', "", page)  # nothing fetched: offline
    assert "<h2>gpgpusim on batch3x3" in page and "<h2>gpu on batch3x3" in page
    assert "<th>gpu_sim_cycle (cycles)</th>" in page and "<th>time_ms (ms)</th>" in page  # units in the headers
    assert '<td class="num worse">7277 (x1.087)</td>' in page  # shared's cycles over global's: 4 digits, coloured
    assert '<td class="num better">1.25</td>' in page  # its GPU speed-up
    assert "| variant=shared |" in md and "GPU and simulator side by side" in md
    assert "| variant=shared | 1.250 | 0.920 |" in md  # 0.020/0.016 on the GPU, 6693/7277 cycles simulated
    # explain's account of the baseline against each group, ending in its verdict, in both forms
    assert "Why the cycles differ (simflow explain)" in md
    assert "**variant=global -> variant=shared:** B is 8.7 % slower than A (+584 cycles): mostly more scoreboard" in md
    assert "<b>variant=global -&gt; variant=shared:</b> B is 8.7 % slower" in page


def test_labels_name_only_what_varies():
    assert short_labels(["variant=global,tile=16", "variant=shared,tile=16"]) == {
        "variant=global,tile=16": "variant=global", "variant=shared,tile=16": "variant=shared"}
    assert short_labels(["app=a,variant=a,pad_row=", "app=b,variant=b,pad_row="]) == {
        "app=a,variant=a,pad_row=": "app=a", "app=b,variant=b,pad_row=": "app=b"}  # a copy and an empty value
    assert short_labels(["variant=global"]) == {"variant=global": "variant=global"}


def test_empty_selection_says_so(tmp_path):
    with pytest.raises(UserError, match="no stored run matches"):
        write_report([], tmp_path, by=["variant"])


def test_gpu_and_simulator_are_paired_on_every_parameter(tmp_path):
    """A GPU tile=32 run is never set beside a simulator tile=16 run of the same variant."""
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
    """IPC, occupancy and L1D hit rate from each run's intervals.csv, the launch latency shaded, beside the
    runs' totals; a run whose intervals are gone is named."""
    sampled = DATA / "accelsim-fork_qv100_batch3x3_shared_sampled.log.gz"
    with Store(tmp_path) as store:
        store.add(sim_record(tmp_path, "global"))  # an older log: no progress samples, no intervals
        shared = sim_record(tmp_path, "shared", log=sampled)
        store.add(shared)
        runs = store.runs()
    intervals = Path(shared.artifacts["intervals"])
    assert intervals.read_text().splitlines()[0] == ("kernel,launch,cycle_start,cycle_end,ipc,occupancy,"
                                                     "l1d_accesses,l1d_hit_rate")
    out = tmp_path / "report"
    paths = write_report(runs, out, by=["variant"], baseline="global")
    over = out / "gpgpusim-0-over-cycles.svg"
    assert over in paths
    figure = over.read_text()
    assert "kernel launch latency (5000 cycles: no instruction runs)" in figure  # shaded, and in the legend
    rows = list(csv.DictReader(intervals.open()))
    values = sum(math.isfinite(float(r[c])) for r in rows for c in ("ipc", "occupancy", "l1d_hit_rate"))
    assert len(rows) == 15 and figure.count("<circle") == values  # a hover point per value drawn, 3 panels
    assert figure.count('data-series="s') == 2  # the run, and the shade: each can be hidden
    md = (out / "report.md").read_text()
    assert "over simulated cycles" in md and f"| variant=shared | {shared.run_id} | 15 | 7277 |" in md
    intervals.unlink()
    write_report(runs, out, by=["variant"], baseline="global")
    assert f"No intervals for: {shared.run_id} ({intervals} is gone)." in (out / "report.md").read_text()


def test_a_multi_kernel_run_is_shown_kernel_by_kernel(tmp_path):
    env = {"SIMFLOW_RESULTS": str(tmp_path)}
    logs = [DATA / "accelsim-fork_qv100_global-then-shared.log.gz", DATA / "accelsim-fork_qv100_saxpy-scale-x3.log.gz"]
    assert simflow("import-log", *map(str, logs), "-l", "config=qv100", env=env).returncode == 0
    proc = simflow("report", "--by", "app", "-d", str(tmp_path / "r"), env=env)
    assert proc.returncode == 0, proc.stderr
    md = (tmp_path / "r" / "report.md").read_text()
    kernels = md.split("### Kernel by kernel")[1]
    assert "| metric | conv2d_global | conv2d_shared |" in kernels  # demangled, as the terminal shows them
    assert re.search(r"\| gpu_sim_cycle \(cycles\) \| 6,?\d{3} \| 7,?\d{3} \|", kernels)


def _page_checks(page: Path, name: str) -> dict:
    for width in (800, 1920):  # a narrow and a wide window: still no sideways scroll, nothing outside or overlapping
        seen = measure(page, width)
        assert seen["scrollWidth"] <= width and not seen["outside"] and not seen["overlaps"], (width, seen)
    seen = measure(page, 1280)
    assert seen["width"] == 1280 and seen["scrollWidth"] <= 1280, seen  # no sideways scroll at 1280 px
    assert seen["figures"] > 0 and not seen["outside"], seen["outside"]  # labels and legends inside their figure
    assert not seen["overlaps"], seen["overlaps"]  # no tick, label or legend entry drawn over another
    assert seen["hover"] >= seen["figures"]  # every figure has hover values
    ARTIFACTS.mkdir(exist_ok=True)
    shot = screenshot(page, ARTIFACTS / f"{name}.png")
    assert shot.stat().st_size > 20_000
    return seen


@pytest.mark.chromium
def test_the_page_probe_sees_one_label_drawn_over_another(tmp_path):
    page = tmp_path / "two.html"
    page.write_text('<html><body><svg class="figure" aria-label="t" width="300" height="100">'
                    '<text x="10" y="20">IPC panel label</text><text x="30" y="22">legend entry</text>'
                    '<text x="10" y="60">apart</text></svg></body></html>')
    assert measure(page, 800)["overlaps"] == ["t: IPC panel label / legend entry"]


@pytest.mark.chromium
def test_the_report_of_imported_multi_kernel_logs_in_chromium(tmp_path):
    env = {"SIMFLOW_RESULTS": str(tmp_path)}
    logs = [DATA / "accelsim-fork_qv100_global-then-shared.log.gz", DATA / "accelsim-fork_qv100_saxpy-scale-x3.log.gz",
            DATA / "accelsim-fork_qv100_batch3x3_shared_sampled.log.gz",
            DATA / "accelsim-fork_qv100_batch3x3_im2col-gemm_sampled.log.gz"]
    assert simflow("import-log", *map(str, logs), "-l", "config=qv100", env=env).returncode == 0
    proc = simflow("report", "--by", "app", "-d", str(tmp_path / "r"), env=env)
    assert proc.returncode == 0, proc.stderr
    seen = _page_checks(tmp_path / "r" / "index.html", "report-imported-logs")
    assert seen["legends"] >= 2  # the timeline's entries (toggles)


@pytest.mark.chromium
@pytest.mark.gpgpusim
def test_the_report_of_a_12_run_simulator_comparison_in_chromium(tmp_path):
    """Twelve real simulations of batch3x3 (four variants, three tiles or unrolls each) in one report."""
    sweep = tmp_path / "twelve.toml"
    sweep.write_text('name = "twelve"\nbackends = ["gpgpusim"]\nconfigs = ["SM7_QV100"]\nproblems = ["batch3x3"]\n'
                     '[[variants]]\nname = "global"\ntile = [8, 16, 32]\n[[variants]]\nname = "shared"\n'
                     'tile = [8, 16, 32]\n[[variants]]\nname = "shared_weights"\nunroll = ["none", "inner", "both"]\n'
                     '[[variants]]\nname = "constant"\nunroll = ["none", "inner", "both"]\n')
    env = {"SIMFLOW_RESULTS": str(tmp_path / "results")}
    proc = simflow("sweep", str(sweep), "--json", env=env, timeout=1800)
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["run"]) == 12
    proc = simflow("report", "--by", "variant", "--baseline", "variant=global,tile=16", "-d", str(tmp_path / "r"),
                   env=env)
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "r" / "index.html").read_text()
    assert page.count('<div class="explained">') == 11  # the baseline against each of the other eleven
    _page_checks(tmp_path / "r" / "index.html", "report-12-simulator-runs")


@pytest.mark.chromium
def test_the_summary_comes_first_and_fits_1280_px_with_contents_that_lead_somewhere(tmp_path):
    from browser import measure, screenshot

    env = {"SIMFLOW_RESULTS": str(tmp_path)}
    for log, labels in ((DATA / "accelsim-fork_qv100_global-then-shared.log.gz", ["problem=N4K4", "variant=both"]),
                        (DATA / "gpgpusim-dev_qv100_global-only.log.gz", ["problem=N4K4", "variant=global"]),
                        (DATA / "accelsim-fork_qv100_saxpy-scale-x3.log.gz", ["problem=saxpy"])):
        assert simflow("import-log", str(log), *(x for lab in labels for x in ("-l", lab)), env=env).returncode == 0
    assert simflow("report", "--by", "variant", "-d", str(tmp_path / "r"), env=env).returncode == 0
    page = tmp_path / "r" / "index.html"
    html = page.read_text()
    assert html.index('class="simflow summary"') < html.index("every metric (a row each)")  # the summary first
    for width in (800, 1280, 1920):
        seen = measure(page, width)
        assert seen["scrollWidth"] <= width and not seen["outside"], (width, seen["outside"])
        assert not seen["overlaps"], (width, seen["overlaps"])  # no label, tick or legend entry over another
        assert seen["links"] >= 3 and seen["anchors"] == seen["links"]  # every contents entry has its section
        if width >= 1280:
            assert max(seen["summaries"]) <= width  # the whole summary in view, no scrolling
        screenshot(page, tmp_path / f"report-{width}.png", width)


def test_each_comparison_shows_where_the_issue_slots_went(tmp_path):
    env = {"SIMFLOW_RESULTS": str(tmp_path)}
    logs = [ROOT / "examples" / f"accelsim-fork_qv100_batch3x3_{v}.log.gz" for v in ("global", "shared")]
    assert simflow("import-log", *map(str, logs), "-l", "problem=batch3x3", env=env).returncode == 0
    assert simflow("report", "--by", "app", "-d", str(tmp_path / "r"), env=env).returncode == 0
    figure = (tmp_path / "r" / "gpgpusim-0-issue-slots.svg").read_text()
    for part in ("issued", "W0_Scoreboard", "W0_Idle", "Stall"):
        assert f">{part}</text>" in figure  # a legend entry per term explain uses
    shares = [float(s) for s in re.findall(r"\(([\d.]+) %\)</title>", figure)]
    assert len(shares) == 8 and sum(shares) == pytest.approx(200, abs=0.5)  # two groups, each 100 %


def test_each_group_has_its_launch_and_config_with_the_options_that_differ(tmp_path):
    env = {"SIMFLOW_RESULTS": str(tmp_path)}
    fork = DATA / "accelsim-fork_qv100_global-then-shared.log.gz"
    upstream = DATA / "gpgpusim-dev_qv100_global-only.log.gz"
    assert simflow("import-log", str(fork), str(upstream), "-l", "problem=N4K4", env=env).returncode == 0
    assert simflow("report", "--by", "app,config", "-d", str(tmp_path / "r"), env=env).returncode == 0
    md = (tmp_path / "r" / "report.md").read_text()
    table = md[md.index("*launch and config"):].split("\n\n")[1]
    assert "| grid | block | regs/thread |" in table and "(the baseline)" in table
    assert "-gpgpu_clock_domains 1132.0:1132.0:1132.0:850.0 -> 1447.0" in table  # the other build's options
    assert re.search(r"\[sim\.log\.gz\]\(</[^>]*/sim\.log\.gz>\)", table)  # its log, linked
    page = (tmp_path / "r" / "index.html").read_text()
    links = re.findall(r'<a href="file://([^"]+)" title="[^"]+">sim\.log\.gz</a>', page)
    assert len(links) == 2 and all(Path(link).is_file() for link in links)  # the links open the kept logs
    assert "*kernel conv2d_global across the groups that launch it*" in md  # a two-kernel run and a one-kernel one
