"""Finding the user's GPGPU-Sim build: the search order, config files, and what each place lacks."""

import os
import shutil
import subprocess

import pytest
from fakes import fake_build

from simflow import settings
from simflow.errors import UserError
from simflow.settings import read_file
from simflow.sim import simulator
from simflow.sim.simulator import candidates, find_simulator, missing_libraries, simulator_at


@pytest.fixture
def nowhere(tmp_path, monkeypatch):
    """No variable, no config file, usual places that do not exist: a clean slate to add to."""
    monkeypatch.delenv("GPGPUSIM_ROOT", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(simulator, "USUAL_PLACES", (str(tmp_path / "opt-gpgpu-sim"), str(tmp_path / "home-sim")))
    return tmp_path


def test_nothing_found_says_where_it_looked_and_how_to_build_one(nowhere):
    with pytest.raises(UserError) as info:
        find_simulator()
    text = str(info.value)
    assert "GPGPUSIM_ROOT: not set" in text and "config.toml: no such file" in text
    assert f"{nowhere / 'opt-gpgpu-sim'}: no such folder" in text
    assert "by its own README" in text and "--docker" in text


def test_a_usual_place_is_found_without_any_variable(nowhere):
    fake_build(nowhere / "home-sim")
    sim = find_simulator()
    assert sim.root == (nowhere / "home-sim").resolve() and sim.found_by == "usual place"
    assert sim.library == sim.root / "lib/gcc-12.2.0/cuda-11080/release/libcudart.so"
    assert any("opt-gpgpu-sim: no such folder" in said for said in sim.passed_over)


def test_the_order_is_variable_then_project_then_user_config_then_usual_places(nowhere, monkeypatch):
    for name in ("env", "project", "user", "opt-gpgpu-sim"):
        fake_build(nowhere / name)
    (nowhere / "xdg" / "simflow").mkdir(parents=True)
    (nowhere / "xdg" / "simflow" / "config.toml").write_text(f'simulator = "{nowhere / "user"}"\n')
    work = nowhere / "work" / "deeper"
    work.mkdir(parents=True)
    (nowhere / "work" / "simflow.toml").write_text('simulator = "../project"\n')  # relative to the file
    monkeypatch.chdir(work)
    settings.with_(simulator=str(nowhere / "env"))  # GPGPUSIM_ROOT
    assert find_simulator().found_by == "GPGPUSIM_ROOT"
    settings.with_(simulator="")
    sim = find_simulator()
    assert sim.root == (nowhere / "project").resolve() and sim.found_by.endswith("work/simflow.toml")
    (nowhere / "work" / "simflow.toml").unlink()
    assert find_simulator().root == (nowhere / "user").resolve()
    (nowhere / "xdg" / "simflow" / "config.toml").write_text("# no simulator named here\n")
    sim = find_simulator()
    assert sim.root == (nowhere / "opt-gpgpu-sim").resolve() and "names no simulator" in " ".join(sim.passed_over)


@pytest.mark.parametrize("break_it,problem", [
    (lambda r: os.remove(r / "setup_environment"), "no setup_environment"),
    (lambda r: (r / "configs" / "tested-cfgs" / "SM7_QV100" / "gpgpusim.config").unlink()
     or os.rename(r / "configs", r / "cfg"), "no configs/tested-cfgs"),
    (lambda r: os.remove(r / "lib/gcc-12.2.0/cuda-11080/release/libcudart.so.11.0")
     or os.remove(r / "lib/gcc-12.2.0/cuda-11080/release/libcudart.so"), "not built"),
])
def test_a_place_the_user_named_that_holds_no_build_is_an_error_not_passed_over(nowhere, monkeypatch, break_it,
                                                                                 problem):
    fake_build(nowhere / "opt-gpgpu-sim")  # a good build later in the order must not be used instead
    named = fake_build(nowhere / "named")
    break_it(named)
    monkeypatch.setenv("GPGPUSIM_ROOT", str(named))
    with pytest.raises(UserError, match=f"GPGPU-Sim at {named} \\(from GPGPUSIM_ROOT\\) cannot be used: {problem}"):
        find_simulator()
    looked = {c.source: c for c in candidates()}
    assert looked["GPGPUSIM_ROOT"].problem.startswith(problem) and not looked["GPGPUSIM_ROOT"].usable


def test_an_unbuilt_usual_place_is_passed_over_with_its_reason(nowhere):
    unbuilt = fake_build(nowhere / "opt-gpgpu-sim")
    for lib in (unbuilt / "lib").rglob("libcudart.so*"):
        lib.unlink()
    fake_build(nowhere / "home-sim")
    sim = find_simulator()
    assert sim.root.name == "home-sim"
    assert any("opt-gpgpu-sim: not built" in said for said in sim.passed_over)


def test_config_file_mistakes_name_the_file_and_the_valid_keys(tmp_path):
    path = tmp_path / "simflow.toml"
    path.write_text('simulater = "/opt/gpgpu-sim"\n')
    with pytest.raises(UserError, match="simflow.toml: unknown key\\(s\\) simulater; valid keys: simulator, results"):
        read_file(path)
    path.write_text("simulator = 3\n")
    with pytest.raises(UserError, match="simulator must be the path of a GPGPU-Sim folder"):
        read_file(path)
    path.write_text("simulator = \n")
    with pytest.raises(UserError, match="not valid TOML"):
        read_file(path)


def test_a_folder_named_on_the_command_line_must_hold_a_build(tmp_path):
    with pytest.raises(UserError, match="cannot be used: no such folder"):
        simulator_at(tmp_path / "absent")
    assert simulator_at(fake_build(tmp_path / "sim")).found_by == "--simulator"


@pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("ldd") is None, reason="needs gcc and ldd")
def test_a_build_that_needs_libraries_this_system_lacks_is_named(tmp_path):
    """What a build made on a newer release looks like from here: its libcudart.so needs a library that is
    not on this system (the image's last build step refuses such a build through this)."""
    root = fake_build(tmp_path / "sim")
    library = root / "lib/gcc-12.2.0/cuda-11080/release/libcudart.so"
    (tmp_path / "dep.c").write_text("int simflow_dep(void) { return 1; }\n")
    (tmp_path / "cudart.c").write_text("int simflow_dep(void);\nint cudart(void) { return simflow_dep(); }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(tmp_path / "libsimflowdep.so"), str(tmp_path / "dep.c")],
                   check=True)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(library), str(tmp_path / "cudart.c"), f"-L{tmp_path}",
                    "-lsimflowdep"], check=True)
    (tmp_path / "libsimflowdep.so").unlink()
    lacking = missing_libraries(simulator_at(root))
    assert len(lacking) == 1 and lacking[0].startswith("libsimflowdep.so => not found")
