"""One settings object (issue 59): read from the environment once, flags put over it, handed to sweep workers;
no other module reads the environment and nothing writes it."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_backends import ECHO

from simflow import settings
from simflow.errors import UserError
from simflow.job import Job
from simflow.kernels.problems import get_problem
from simflow.registry import backend_names, register
from simflow.results.store import Store
from simflow.run.sweep import run_sweep
from simflow.run.sweep_file import load_sweep
from simflow.sim.catalogue import USER_STATS

SOURCE = Path(__file__).resolve().parents[1] / "simflow"
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "variants"


def test_every_setting_from_the_environment():
    found = settings.Settings.from_environment({
        "SIMFLOW_RESULTS": "/r", "SIMFLOW_CACHE": "/c", "SIMFLOW_VARIANTS": "/v1:/v2", "SIMFLOW_STATS": "/s.toml",
        "SIMFLOW_BACKENDS": "echo=echo_backend:EchoBackend;bad;x=no-colon", "SIMFLOW_ENGINE": "podman",
        "SIMFLOW_ENGINE_OPTIONS": "--ulimit nofile=1024:1024", "SIMFLOW_NCU": "/n/ncu", "GPGPUSIM_ROOT": "/g",
        "CUDA_DEVICE": "1", "CUDA_HOME": "/cuda", "SIMFLOW_CUDA11": "/cuda11", "XDG_CONFIG_HOME": "/x",
        "COLUMNS": "80", "NO_COLOR": "1"})
    assert found.results_dir == Path("/r") and found.cache_dir == Path("/c")
    assert found.variants == ("/v1", "/v2") and found.stats == ("/s.toml",)
    assert found.backends == (("echo", "echo_backend:EchoBackend"),)  # entries without 'name=module:Class' dropped
    assert (found.engine, found.engine_options, found.ncu, found.simulator) == (
        "podman", "--ulimit nofile=1024:1024", "/n/ncu", "/g")
    assert found.cuda_device == "1" and found.toolkits == ("/cuda11", "/cuda")  # SIMFLOW_CUDA11 first
    assert found.user_config == Path("/x/simflow/config.toml") and found.columns == 80 and found.no_color
    bare = settings.Settings.from_environment({"HOME": "/home/u"})
    assert bare.results_dir == Path("simflow-results") and bare.cache_dir.name == "simflow"
    assert bare.columns == 0 and not bare.no_color and bare.backends == () and bare.cuda_device == "0"


def test_only_the_settings_module_reads_the_environment_and_nothing_writes_it():
    reads, writes = [], []
    for path in sorted(SOURCE.rglob("*.py")):
        text = path.read_text()
        where = str(path.relative_to(SOURCE))
        if path.name != "settings.py" and re.search(r"os\.environ|os\.getenv|getenv\(", text):
            reads.append(where)
        if re.search(r"os\.environ\[[^]]+\]\s*=|os\.environ\.(update|setdefault|pop)|os\.putenv|del os\.environ",
                     text):
            writes.append(where)
    assert reads == [] and writes == []


def test_flags_go_over_the_environment_and_the_process_keeps_them(monkeypatch, tmp_path):
    monkeypatch.setenv("SIMFLOW_RESULTS", str(tmp_path / "from-env"))
    assert settings.current().results_dir == tmp_path / "from-env"
    settings.with_(results=str(tmp_path / "from-flag"))
    monkeypatch.setenv("SIMFLOW_RESULTS", str(tmp_path / "changed-later"))  # read once: a later change is not seen
    from simflow.resources import results_dir

    assert results_dir() == tmp_path / "from-flag"
    assert settings.child_environment(EXTRA="1")["SIMFLOW_RESULTS"] == str(tmp_path / "changed-later")


SEEN = '''
from echo_backend import EchoBackend
from simflow import settings
from simflow.errors import UserError
from simflow.kernels.variants import VARIANTS
from simflow.sim.catalogue import USER_STATS


class SeenBackend(EchoBackend):
    """Reports what its worker process knows: the user's stats and variants, and its settings."""

    name = "seen"
    default_metrics = ("user_stats", "rows_known")
    speed_metric = ""

    def run(self, job, folder, kernel=None):
        result = super().run(job, folder, kernel)
        result.add("user_stats", len(USER_STATS))
        result.add("rows_known", int("rows" in VARIANTS))
        result.environment["cache"] = str(settings.current().cache_dir)
        return result
'''


def test_a_sweep_worker_has_its_parents_stats_variants_backends_and_folders(tmp_path, monkeypatch):
    """A worker is a spawned process: before, these reached it only through variables written into the
    environment; the user's stats did not reach it at all."""
    import simflow.api as sf

    (tmp_path / "echo_backend.py").write_text(ECHO)
    (tmp_path / "seen_backend.py").write_text(SEEN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # the worker imports the module too
    stats = tmp_path / "mine.toml"
    stats.write_text("[stats.partition_util]\nregex = '^partiton_level_parallism_util = +([0-9.]+)'\n"
                     'kind = "per_kernel"\n')
    settings.with_(cache=str(tmp_path / "cache"))
    try:
        register("seen", "seen_backend:SeenBackend")
        sf.use_stats(stats)
        sf.use_variants(EXAMPLE)
        assert "seen" in backend_names()
        sweep = tmp_path / "s.toml"
        sweep.write_text('backends = ["seen"]\nproblems = ["batch3x3"]\n[[variants]]\nname = "rows"\n'
                         '[[variants]]\nname = "global"\n')
        with Store(tmp_path / "results") as store:
            report = run_sweep(load_sweep(sweep), store, workers=2, quiet=True)
            assert not report.errors and len(report.stored) == 2
            runs = store.runs()
        for run in runs:
            assert run.metrics["user_stats"] == 1 and run.metrics["rows_known"] == 1
            assert run.environment["cache"] == str(tmp_path / "cache")
    finally:
        USER_STATS.clear()
        settings.reset()
        from simflow.kernels.variants import reload_variants

        reload_variants()
        sys.modules.pop("seen_backend", None)
        sys.modules.pop("echo_backend", None)
    assert "seen" not in backend_names()  # registered in those settings only


def test_a_gpu_job_cannot_name_a_registered_backend_it_does_not_have():
    with pytest.raises(Exception, match="unknown backend 'nowhere'"):
        Job.make("global", {}, get_problem("batch3x3"), "nowhere")


def test_a_project_file_sets_what_the_environment_leaves_unset(tmp_path):
    project, home = tmp_path / "project", tmp_path / "config-home"
    (project / "deep").mkdir(parents=True)
    (project / "simflow.toml").write_text(
        'results = "runs"\nvariants = ["mine", "/abs/theirs"]\nstats = ["stats.toml"]\nengine = "podman"\n'
        'engine_options = "--ulimit nproc=4096"\nbackends = { echo = "echo_backend:Echo" }\ncache = "cache"\n')
    (home / "simflow").mkdir(parents=True)
    (home / "simflow" / "config.toml").write_text('results = "/home-results"\nncu = "/opt/ncu"\nengine = "docker"\n')
    got = settings.Settings.from_environment({"XDG_CONFIG_HOME": str(home)}, cwd=project / "deep")
    assert got.results == str(project / "runs") and got.cache == str(project / "cache")  # the file's folder
    assert got.variants == (str(project / "mine"), "/abs/theirs") and got.stats == (str(project / "stats.toml"),)
    assert (got.engine, got.engine_options) == ("podman", "--ulimit nproc=4096")  # the project's over the user's
    assert got.backends == (("echo", "echo_backend:Echo"),) and got.ncu == "/opt/ncu"  # the user's where unset
    env = {"XDG_CONFIG_HOME": str(home), "SIMFLOW_RESULTS": "/env-results", "SIMFLOW_VARIANTS": "/v1:/v2",
           "SIMFLOW_ENGINE": "docker"}
    got = settings.Settings.from_environment(env, cwd=project)
    assert (got.results, got.variants, got.engine) == ("/env-results", ("/v1", "/v2"), "docker")  # the environment's
    assert settings.Settings.from_environment({"XDG_CONFIG_HOME": str(tmp_path)}, cwd=tmp_path).results == \
        "simflow-results"  # no file: the defaults


@pytest.mark.parametrize("text, said", [
    ('result = "runs"\n', "unknown key(s) result; valid keys: simulator, results, cache, variants, stats"),
    ('variants = "mine"\n', "variants must be a list of folders of your variants"),
    ('backends = { echo = "no-colon" }\n', 'backends must be a table of backend = "module:Class"'),
    ('results = ""\n', "results must be a results folder"),
])
def test_a_config_file_mistake_names_the_file_the_key_and_what_it_takes(tmp_path, text, said):
    (tmp_path / "simflow.toml").write_text(text)
    with pytest.raises(UserError) as caught:
        settings.Settings.from_environment({"XDG_CONFIG_HOME": str(tmp_path / "none")}, cwd=tmp_path)
    assert str(caught.value).startswith(str(tmp_path / "simflow.toml")) and said in str(caught.value)


def test_the_command_line_says_a_config_file_mistake_in_one_line_and_uses_a_good_file(tmp_path):
    (tmp_path / "simflow.toml").write_text('result = "runs"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIMFLOW_")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    proc = subprocess.run([sys.executable, "-m", "simflow", "variants"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == (f"simflow: error: {tmp_path / 'simflow.toml'}: unknown key(s) result; valid keys: "
                                   f"{', '.join(settings.FILE_KEYS)}")
    (tmp_path / "simflow.toml").write_text('results = "runs"\n')
    proc = subprocess.run([sys.executable, "-m", "simflow", "runs"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert f"no results folder {tmp_path / 'runs'}" in proc.stderr  # the file's folder, not the default
