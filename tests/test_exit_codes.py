"""The exit codes every --help states, on the paths where a tool is missing (issue 56): 3 when the simulator,
CUDA 11, PyCUDA or ncu is not here, 1 when the user named a wrong place, 0 otherwise. The simulator's search is
pointed at empty places (no real build is touched or hidden)."""

import pytest

from simflow import cli
from simflow.errors import MissingTool, ToolError, UserError
from simflow.sim import simulator


@pytest.fixture
def no_simulator(monkeypatch, tmp_path):
    monkeypatch.delenv("GPGPUSIM_ROOT", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("SIMFLOW_RESULTS", str(tmp_path / "results"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(simulator, "USUAL_PLACES", (str(tmp_path / "nowhere"),))


def test_a_missing_tool_is_both_a_user_error_and_a_tool_error():
    assert issubclass(MissingTool, UserError) and issubclass(MissingTool, ToolError)  # handlers keep working


@pytest.mark.parametrize("argv", [
    ["sim", "global", "--problem", "batch3x3"],
    ["tune", "global", "--backend", "gpgpusim", "--problem", "batch3x3", "--runs", "1"],
    ["doctor", "--no-probe", "--require", "gpgpusim"],
    ["calibrate", "--check", "H200"],
])
def test_no_simulator_exits_3_and_says_how_to_get_one(no_simulator, capsys, argv):
    assert cli.main(argv) == 3
    err = capsys.readouterr().err
    assert err.startswith("simflow: missing:") or "simflow: missing: required but absent: gpgpusim" in err
    assert "Traceback" not in err


def test_a_named_place_without_a_build_is_the_users_mistake(no_simulator, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("GPGPUSIM_ROOT", str(tmp_path / "typo"))
    assert cli.main(["sim", "global", "--problem", "batch3x3"]) == 1
    assert "(from GPGPUSIM_ROOT) cannot be used: no such folder" in capsys.readouterr().err


def test_no_ncu_exits_3(monkeypatch, tmp_path, capsys):
    from simflow.backends import ncu

    monkeypatch.setenv("SIMFLOW_NCU", str(tmp_path / "no-ncu"))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(ncu, "NCU_DEFAULT", str(tmp_path / "none"))
    with pytest.raises(MissingTool, match="ncu not found"):
        ncu.find_ncu()
