"""diff, compare and show, as a user reads them, from stored records of real simulator logs
(examples/: simflow's global and shared kernels on batch3x3, SM7_QV100). Run ids, times and
paths are replaced by placeholders; the rest must match tests/golden/ to the character.
SIMFLOW_UPDATE_GOLDEN=1 rewrites the files (then read the diff before committing it)."""

import os
import re
from pathlib import Path

import pytest
from conftest import simflow
from runs import sim_record

from simflow.results.store import Store

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    folder = tmp_path_factory.mktemp("golden")
    with Store(folder) as store:
        ids = {v: store.add(sim_record(folder, v)) for v in ("global", "shared")}
    return folder, ids


def _normalise(text: str, folder: Path, ids: dict) -> str:
    for variant, run_id in ids.items():
        text = text.replace(run_id, f"<{variant} run>")
    text = text.replace(str(folder), "<results>")
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z", "<time>", text)
    text = re.sub(r"simflow \d+\.\d+\.\d+", "simflow <version>", text)
    text = re.sub(r"(sim_wall_s|job_wall_s|gpgpu_simulation_\w+|gpgpu_silicon_slowdown)( +)\S+", r"\1\2<wall>", text)
    return re.sub(r"host=[^,\n]+", "host=<host>", text)


@pytest.mark.parametrize("name,args", [
    ("diff.txt", ["diff", "variant=global", "variant=shared"]),
    ("compare.md", ["compare", "--by", "variant", "--baseline", "global", "-f", "markdown"]),
    ("show.txt", ["show", "variant=shared"]),
    ("show-all.txt", ["show", "variant=shared", "--all"]),
])
def test_output_matches_the_golden_file(results, name, args):
    folder, ids = results
    proc = simflow(*args, env={"SIMFLOW_RESULTS": str(folder)})
    assert proc.returncode == 0, proc.stderr
    got = _normalise(proc.stdout, folder, ids)
    path = GOLDEN / name
    if os.environ.get("SIMFLOW_UPDATE_GOLDEN"):
        path.write_text(got)
    assert got == path.read_text()
