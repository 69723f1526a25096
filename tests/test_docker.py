"""The Docker image's parts that run without Docker: its scripts, and the Dockerfile's references.
(The image itself is built and run only where a Docker engine exists; the real entry-script run is
in test_gpgpusim_backend, marked gpgpusim.)"""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCKER = ROOT / "docker"


def test_scripts_parse():
    for script in ("entrypoint.sh", "install-gpgpusim.sh"):
        assert subprocess.run(["bash", "-n", str(DOCKER / script)]).returncode == 0


def test_dockerfile_refers_to_files_that_exist_and_pins_the_simulator():
    text = (DOCKER / "Dockerfile").read_text()
    for line in re.findall(r"^COPY (.+)$", text, flags=re.M):
        *sources, _target = line.split()
        for source in sources:
            assert (ROOT / source).exists(), source
    commit = re.search(r"^ARG GPGPUSIM_COMMIT=([0-9a-f]+)$", text, flags=re.M)[1]
    assert len(commit) == 40
    assert "ARG GPGPUSIM_REPO=https://github.com/accel-sim/gpgpu-sim_distribution.git" in text
    assert 'ENTRYPOINT ["simflow-entrypoint"]' in text and "ENV GPGPUSIM_ROOT=/opt/gpgpu-sim" in text
    assert "install-gpgpusim.sh \"$GPGPUSIM_REPO\" \"$GPGPUSIM_COMMIT\" /opt/gpgpu-sim" in text
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert ".git" in ignored and ".venv" in ignored and "simflow-results" in ignored


def test_install_script_usage():
    proc = subprocess.run(["bash", str(DOCKER / "install-gpgpusim.sh")], capture_output=True, text=True)
    assert proc.returncode == 2 and "usage:" in proc.stderr


def run_entry(tmp_path, setup_body, *command, root=True):
    sim = tmp_path / "sim"
    sim.mkdir(exist_ok=True)
    (sim / "setup_environment").write_text(setup_body)
    env = {"PATH": "/usr/bin:/bin", "CUDA_INSTALL_PATH": str(tmp_path)}
    if root:
        env["GPGPUSIM_ROOT"] = str(sim)
    return subprocess.run([str(DOCKER / "entrypoint.sh"), *command], capture_output=True, text=True, env=env)


def test_entry_point_runs_the_command_after_the_setup(tmp_path):
    proc = run_entry(tmp_path, "export GPGPUSIM_SETUP_ENVIRONMENT_WAS_RUN=1 MARK=$1\n", "sh", "-c", 'echo "$MARK"')
    assert proc.returncode == 0 and proc.stdout == "release\n"


def test_entry_point_failures_are_clear(tmp_path):
    proc = run_entry(tmp_path, "echo 'ERROR ** nvcc not found'; return 1\n", "true")
    assert proc.returncode == 1 and "setup_environment failed" in proc.stderr and "nvcc not found" in proc.stderr
    proc = run_entry(tmp_path, "", "true", root=False)
    assert proc.returncode != 0 and "set GPGPUSIM_ROOT to the GPGPU-Sim folder" in proc.stderr


# A tree with the three defects install-gpgpusim.sh fixes, in the shape the simulators' files have
# (lines written here for the test, not copied from either simulator).
_MAKEFILE = """$(OUTPUT_DIR)/ptx_parser_decode.def: $(OUTPUT_DIR)/ptx.tab.c
\tcat $(OUTPUT_DIR)/ptx.tab.h | grep "=" | sed -E 's/^ +//' | sed 's/[=,]//g' \
| sed -E 's/([_A-Za-z0-9]+) +(-?[0-9]+)/\\1 \\1/' | sed 's/^/DEF(/' | sed 's/ /,"/' | sed 's/$$/")/' \
> $(OUTPUT_DIR)/ptx_parser_decode.def
"""
_API = """unsigned CUDARTAPI __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim,
                                               size_t sharedMem = 0) {
  cudaConfigureCallInternal(gridDim, blockDim, sharedMem, stream);
}
"""
_GPUSIM = """    for (unsigned i = 0; i < n; i++) {
      step(i);
      // Update core icnt/cache stats for AccelWattch
      if (m_config.g_power_simulation_enabled) {
        m_cluster[i]->get_icnt_stats(a, b);
        m_cluster[i]->get_current_occupancy(
            gpu_occupancy.aggregate_warp_slot_filled,
            gpu_occupancy.aggregate_theoretical_warp_slots);
      }
    }
"""


def _tree(root: Path) -> Path:
    for rel, text in (("src/cuda-sim/Makefile", _MAKEFILE), ("libcuda/cuda_runtime_api.cc", _API),
                      ("src/gpgpu-sim/gpu-sim.cc", _GPUSIM)):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _patch(tree: Path):
    return subprocess.run(["bash", str(DOCKER / "install-gpgpusim.sh"), "--patch-only", str(tree)],
                          capture_output=True, text=True)


def test_install_script_applies_each_fix_once_and_only_where_needed(tmp_path):
    tree = _tree(tmp_path / "sim")
    proc = _patch(tree)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:3] == ["parser-tokens src/cuda-sim/Makefile",
                                           "push-config libcuda/cuda_runtime_api.cc",
                                           "occupancy src/gpgpu-sim/gpu-sim.cc"]
    make = (tree / "src/cuda-sim/Makefile").read_text()
    assert 'sed -E "s:[[:space:]]*/[*].*[*]/::"' in make and 'YY(error|EOF|EMPTY|UNDEF),/d"' in make
    api = (tree / "libcuda/cuda_runtime_api.cc").read_text()
    assert "stream);\n  return 0;\n}" in api
    gpusim = (tree / "src/gpgpu-sim/gpu-sim.cc").read_text()
    before_if = gpusim.split("if (m_config.g_power_simulation_enabled)")[0]
    assert "get_current_occupancy(" in before_if and gpusim.count("get_current_occupancy(") == 1
    patched = {p: p.read_text() for p in tree.rglob("*") if p.is_file()}
    again = _patch(tree)  # a fixed tree needs nothing
    assert again.returncode == 0 and again.stdout == ""
    assert {p: p.read_text() for p in tree.rglob("*") if p.is_file()} == patched


def test_the_generated_token_list_is_what_the_parser_needs(tmp_path):
    """Run the patched Makefile line on a bison-3.8-style header: no comment strings, no YY tokens."""
    tree = _tree(tmp_path / "sim")
    _patch(tree)
    out = tmp_path / "out"
    out.mkdir()
    (out / "ptx.tab.h").write_text('    YYEMPTY = -2,\n    YYEOF = 0,                     /* "end of file"  */\n'
                                   '    STRING = 258,                  /* STRING  */\n')
    lines = (tree / "src/cuda-sim/Makefile").read_text().splitlines()
    recipe = " ".join(lines[1:3]).replace("$(OUTPUT_DIR)", str(out)).replace("$$", "$")
    subprocess.run(["bash", "-c", recipe], check=True)
    assert (out / "ptx_parser_decode.def").read_text().split() == ['DEF(STRING,"STRING")']


def test_install_script_refuses_an_existing_prefix(tmp_path):
    proc = subprocess.run(["bash", str(DOCKER / "install-gpgpusim.sh"), "repo", "abc", str(tmp_path)],
                          capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "CUDA_INSTALL_PATH": "/x"})
    assert proc.returncode == 1 and "exists already; remove it or choose another PREFIX" in proc.stderr
