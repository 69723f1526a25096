"""Comparisons are like with like (issue 56): runs of different problems, or of a problem nobody named, are never
set against each other without --force, and then the output says the figures are not comparable. Real logs: two
of simflow's batch3x3 kernels (examples/) and a user's saxpy program (tests/data)."""

import json
from pathlib import Path

import pytest
from conftest import ROOT, simflow

EXAMPLES = ROOT / "examples"
GLOBAL = EXAMPLES / "accelsim-fork_qv100_batch3x3_global.log.gz"
SHARED = EXAMPLES / "accelsim-fork_qv100_batch3x3_shared.log.gz"
SAXPY = Path(__file__).parent / "data" / "accelsim-fork_qv100_saxpy-scale-x3.log.gz"
ABORTED = Path(__file__).parent / "data" / "gpgpusim-dev_bad-config_assert-abort.log.gz"


def _import(env, log, *labels):
    proc = simflow("import-log", str(log), *(x for label in labels for x in ("-l", label)), env=env)
    assert proc.returncode in (0, 2), proc.stderr
    return proc


@pytest.fixture(scope="module")
def two_problems(tmp_path_factory):
    """global and shared of one problem (N4K4), and saxpy labelled as another; shared and saxpy both 'both'."""
    env = {"SIMFLOW_RESULTS": str(tmp_path_factory.mktemp("like"))}
    _import(env, GLOBAL, "problem=N4K4", "variant=global")
    _import(env, SHARED, "problem=N4K4", "variant=both")
    _import(env, SAXPY, "problem=saxpy", "variant=both")
    return env


def test_compare_makes_one_table_per_problem_with_the_baseline_in_each(two_problems):
    proc = simflow("compare", "--by", "variant", "--baseline", "variant=both", "--json", env=two_problems)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    titles = [t["title"] for t in data["tables"]]
    assert len(titles) == 2 and "N4K4" in titles[0] and "saxpy" in titles[1]
    assert [len(t["rows"]) for t in data["tables"]] == [2, 1]
    assert all(t["title"].endswith("baseline variant=both") for t in data["tables"])
    assert "problems differ" in data["split"]


def test_report_sets_no_run_against_another_problems(two_problems, tmp_path):
    proc = simflow("report", "--by", "variant", "--baseline", "variant=both", "-d", str(tmp_path), env=two_problems)
    assert proc.returncode == 0, proc.stderr
    md = (tmp_path / "report.md").read_text()
    assert "2 tables: problems differ" in md
    verdicts = [line for line in md.splitlines() if line.startswith("**") and "->" in line]
    assert verdicts == [line for line in verdicts if "slower" in line or "faster" in line] and len(verdicts) == 1
    assert "saxpy" not in md.split("## ")[1]  # the N4K4 section never names saxpy


def test_joined_problems_say_so_and_labels_never_repeat_a_key(two_problems):
    proc = simflow("compare", "--by", "problem,variant", "--force", "--json", env=two_problems)
    assert proc.returncode == 0, proc.stderr
    table = json.loads(proc.stdout)
    assert "NOT LIKE WITH LIKE: different problems" in table["title"]
    for row in table["rows"]:
        keys = [part.partition("=")[0] for part in row["group"].split(",")]
        assert len(keys) == len(set(keys)), row["group"]
    diff = simflow("diff", "variant=global", "variant=both,problem=saxpy", "--force", env=two_problems)
    title = diff.stdout.splitlines()[0]
    assert title.count("variant=") == 2 and title.count("problem=") == 2  # once for A, once for B


@pytest.mark.parametrize("command", ["explain", "diff"])
def test_runs_of_different_problems_are_refused_naming_both(two_problems, command):
    refused = simflow(command, "variant=global", "variant=both,problem=saxpy", env=two_problems)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "problem differs (A: N4K4 (an imported log); B: saxpy (an imported log))" in refused.stderr
    assert "--force" in refused.stderr
    forced = simflow(command, "variant=global", "variant=both,problem=saxpy", "--force", env=two_problems)
    assert forced.returncode == 0, forced.stderr
    assert "not comparable: problem differs" in forced.stdout
    same = simflow(command, "variant=global", "variant=both,problem=N4K4", env=two_problems)
    assert same.returncode == 0, same.stderr


def test_a_log_imported_without_its_problem_is_compared_with_nothing(tmp_path):
    env = {"SIMFLOW_RESULTS": str(tmp_path)}
    proc = simflow("import-log", str(GLOBAL), str(SHARED), env=env)
    assert proc.returncode == 0 and "no problem= label" in proc.stderr
    data = json.loads(simflow("compare", "--by", "app", "--json", env=env).stdout)
    assert [len(t["rows"]) for t in data["tables"]] == [1, 1]
    assert "2 run(s) of unknown problem, each alone" in data["split"] and "-l problem=NAME" in data["split"]
    a, b = "app=accelsim-fork_qv100_batch3x3_global", "app=accelsim-fork_qv100_batch3x3_shared"
    refused = simflow("explain", a, b, env=env)
    assert refused.returncode == 1 and "problem unknown (A: a log imported without -l problem=NAME" in refused.stderr
    forced = simflow("explain", a, b, "--force", env=env)
    assert forced.returncode == 0 and "not comparable: problem unknown" in forced.stdout
    joined = json.loads(simflow("compare", "--by", "app", "--force", "--json", env=env).stdout)
    assert "NOT LIKE WITH LIKE: unknown problems" in joined["title"]


def test_the_same_log_imported_again_is_stored_once(tmp_path):
    env = {"SIMFLOW_RESULTS": str(tmp_path)}
    first = simflow("import-log", str(SAXPY), "-l", "problem=saxpy", "--json", env=env)
    again = simflow("import-log", str(SAXPY), "-l", "problem=saxpy", "--json", env=env)
    assert again.returncode == 0 and "is stored already, as run" in again.stderr
    assert json.loads(again.stdout)[0]["id"] == json.loads(first.stdout)[0]["id"]
    assert json.loads(again.stdout)[0]["stored"] is False
    assert len(json.loads(simflow("runs", "--json", env=env).stdout)) == 1
    forced = simflow("import-log", str(SAXPY), "-l", "problem=other", "--again", "--json", env=env)
    assert json.loads(forced.stdout)[0]["stored"] is True
    assert len(json.loads(simflow("runs", "--json", env=env).stdout)) == 2


def test_report_all_statuses_lists_the_runs_that_did_not_pass(tmp_path):
    env = {"SIMFLOW_RESULTS": str(tmp_path)}
    _import(env, GLOBAL, "problem=N4K4")
    _import(env, ABORTED, "problem=N4K4")
    plain = simflow("report", "-d", str(tmp_path / "plain"), env=env)
    assert plain.returncode == 0, plain.stderr
    hint = (tmp_path / "plain" / "report.md").read_text()
    assert "--all-statuses shows them" in hint and "Runs that did not pass" not in hint
    every = simflow("report", "--all-statuses", "-d", str(tmp_path / "every"), env=env)  # the hint, followed
    assert every.returncode == 0, every.stderr
    md = (tmp_path / "every" / "report.md").read_text()
    assert "Runs that did not pass (1)" in md and "aborted" in md and "assert" in md.lower()


def test_every_hint_the_split_gives_works(two_problems):
    """The line that says why there are several tables names the option that joins them: it must."""
    split = json.loads(simflow("compare", "--by", "variant", "--json", env=two_problems).stdout)["split"]
    hint = split.split("(")[-1].split(" puts them")[0]  # '--by problem'
    assert hint == "--by problem"
    joined = simflow("compare", *hint.split(), "--json", env=two_problems)
    assert joined.returncode == 0 and "tables" not in json.loads(joined.stdout)
    assert "NOT LIKE WITH LIKE: different problems" in json.loads(joined.stdout)["title"]
