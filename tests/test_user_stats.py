"""User-defined stats (TOML): read from real logs, and merged into parse, import-log, diff, compare, report."""

import json
from pathlib import Path

import pytest
from conftest import simflow

from simflow.errors import UserError
from simflow.results.metrics import better
from simflow.sim.catalogue import USER_STATS, iter_catalogue, load_user_stats, stat_of
from simflow.sim.log import parse_file

DATA = Path(__file__).parent / "data"
TWO = DATA / "gpgpusim-dev_qv100_global-then-shared.log.gz"
SHARED_ONLY = DATA / "gpgpusim-dev_qv100_shared-only.log.gz"
STATS = """
[stats.partition_util]
regex = '^partiton_level_parallism_util = +([0-9.]+)'
kind = "per_kernel"
meaning = "memory partitions busy per cycle while any is busy"
better = "higher"

[stats.l1d_sector_misses]
regex = 'Total_core_cache_stats_breakdown\\[GLOBAL_ACC_R\\]\\[SECTOR_MISS\\] = (\\d+)'
kind = "cumulative"
unit = "sectors"
meaning = "global loads that missed a sector of a present L1D line"
better = "lower"

[stats.not_in_these_logs]
regex = 'no_such_stat = (\\d+)'
kind = "process"
"""


@pytest.fixture
def stats_file(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(STATS)
    yield path
    USER_STATS.clear()


def test_user_stats_are_read_per_kernel_and_differenced(stats_file):
    load_user_stats([stats_file])
    first, second = parse_file(TWO).kernels
    assert first.metrics["partition_util"] == 4.0816 and second.metrics["partition_util"] == 5.1948  # as printed
    alone = parse_file(SHARED_ONLY).kernels[0].metrics
    assert second.metrics["l1d_sector_misses"] == alone["l1d_sector_misses"] > 0  # cumulative: differenced
    assert stat_of("l1d_sector_misses").unit == "sectors" and better("partition_util") == "higher"
    log = parse_file(TWO)
    assert any("not_in_these_logs" in note and "never matched" in note for note in log.notes)
    listed = {row["name"]: row for row in iter_catalogue()}
    assert listed["partition_util"]["defined_in"] == str(stats_file) and listed["gpu_ipc"]["defined_in"] == "simflow"


@pytest.mark.parametrize("text,message", [
    ('[stats.gpu_ipc]\nregex = "x(1)"\nkind = "process"\n', "'gpu_ipc' is a built-in stat"),
    ('[stats.Total_core_cache_fail_stats_breakdown[X]]\n', "not valid TOML"),
    ('[stats.a]\nregex = "x"\nkind = "process"\n', "has 0 capture groups; it needs exactly one"),
    ('[stats.a]\nregex = "(x"\nkind = "process"\n', "does not compile"),
    ('[stats.a]\nregex = "(x)"\nkind = "sometimes"\n', "kind must be one of per_kernel, cumulative, process"),
    ('[stats.a]\nregex = "(x)"\nkind = "process"\nbetter = "up"\n', 'better must be "lower", "higher"'),
    ('[stats.a]\nregex = "(x)"\nkind = "process"\nunits = "s"\n', "unknown key.*units"),
    ('[stat.a]\nregex = "(x)"\n', r"\[stats.NAME\] table \(found stat\)"),
    ('[stats.a]\nregex = "(x)"\nkind = "process"\n\n[stats.a]\n', "not valid TOML.*line 5"),
])
def test_mistakes_name_the_file_and_the_stat(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(UserError, match=message) as caught:
        load_user_stats([path])
    assert str(path) in str(caught.value)
    USER_STATS.clear()


def test_a_name_defined_in_two_files_is_refused(tmp_path, stats_file):
    other = tmp_path / "other.toml"
    other.write_text('[stats.partition_util]\nregex = "(x)"\nkind = "process"\n')
    with pytest.raises(UserError, match=f"defined already in {stats_file}"):
        load_user_stats([stats_file, other])
    with pytest.raises(UserError, match="no stats file"):
        load_user_stats([tmp_path / "missing.toml"])


def test_user_stats_through_import_log_diff_compare_and_report(tmp_path, stats_file):
    env = {"SIMFLOW_RESULTS": str(tmp_path / "results")}
    for log in (TWO, SHARED_ONLY):
        proc = simflow("import-log", str(log), "--stats", str(stats_file), "-l", "config=qv100", "-l", "problem=N4K4",
                       env=env)
        assert proc.returncode == 0, proc.stderr
    parsed = simflow("parse", str(TWO), "--json", env={"SIMFLOW_STATS": str(stats_file)})
    assert json.loads(parsed.stdout)["per_kernel"][0]["partition_util"] == 4.0816
    # without the file, diff still shows the stored values but cannot say which way is better
    a, b = "app=gpgpusim-dev_qv100_global-then-shared", "app=gpgpusim-dev_qv100_shared-only"
    blind = simflow("diff", a, b, "--metrics", "partition_util", "-f", "json", env=env)
    assert json.loads(blind.stdout)["rows"][1]["mark"] == "changed"
    told = simflow("diff", a, b, "--metrics", "partition_util", "-f", "json",
                   env={**env, "SIMFLOW_STATS": str(stats_file)})
    row = json.loads(told.stdout)["rows"][1]
    assert row["better"] == "higher" and row["mark"] in ("better", "worse")
    compare = simflow("compare", "--by", "app", "--metrics", "partition_util,l1d_sector_misses", "-f", "json",
                      "--stats", str(stats_file), env=env)
    assert compare.returncode == 0, compare.stderr
    assert all("l1d_sector_misses" in r for r in json.loads(compare.stdout)["rows"])
    report = simflow("report", "--by", "app", "--metrics", "partition_util", "-d", str(tmp_path / "report"),
                     "--stats", str(stats_file), env=env)
    assert report.returncode == 0, report.stderr
    assert (tmp_path / "report" / "gpgpusim-0-partition_util.svg").is_file()
