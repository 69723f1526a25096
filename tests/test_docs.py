"""The README and docs/ as a user follows them: every command in a ```sh block runs, in order, in a fresh
folder (the repository's examples/ beside it, its own results folder), and must succeed. A block's info
string names what it needs (```sh gpgpusim, gpu, docker: skipped with the reason where absent); ```sh ci
blocks are .ci/run's own commands. README's length is kept to what a reader takes in."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from hardware import NEEDS

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```sh([^\n]*)\n(.*?)^```", re.S | re.M)


def blocks(page: Path) -> list[tuple[list[str], str]]:
    return [(info.split(), body) for info, body in BLOCK.findall(page.read_text())]


RUNNABLE = [(page, i) for page in PAGES for i, (needs, _) in enumerate(blocks(page)) if "ci" not in needs]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """Per page, one folder its blocks share (one block imports, the next compares), with `simflow` on PATH
    as this checkout."""
    made = {}

    def folder(page: Path) -> tuple[Path, dict]:
        if page not in made:
            where = tmp_path_factory.mktemp(page.stem)
            (where / "examples").symlink_to(ROOT / "examples")
            bin_dir = where / "bin"
            bin_dir.mkdir()
            (bin_dir / "simflow").write_text(f'#!/bin/sh\nexec {sys.executable} -m simflow "$@"\n')
            (bin_dir / "simflow").chmod(0o755)
            env = {**{k: v for k, v in os.environ.items() if k != "COLUMNS"}, "PATH": f"{bin_dir}:{os.environ['PATH']}",
                   "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
                   "SIMFLOW_RESULTS": str(where / "simflow-results")}
            made[page] = where, env
        return made[page]
    return folder


@pytest.mark.parametrize("page,index", RUNNABLE, ids=[f"{p.relative_to(ROOT)}#{i}" for p, i in RUNNABLE])
def test_every_command_shown_runs(page, index, folders):
    needs, body = blocks(page)[index]
    absent = [f"{need}: {NEEDS[need][1]}" for need in needs if not NEEDS[need][0]]
    if absent:
        pytest.skip("; ".join(absent))
    where, env = folders(page)
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", body], cwd=where, env=env, capture_output=True,
                          text=True, timeout=1500)
    assert proc.returncode == 0, f"{page.name} block {index}:\n{body}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr


def test_the_ci_blocks_are_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text()
    shown = [body.strip() for page in PAGES for needs, body in blocks(page) if "ci" in needs]
    assert len(shown) == 2  # the set-up: the main job and the tests
    main_job, tests = shown
    assert main_job.endswith(".venv/bin/simflow check")  # test_cli.py's test_check_is_the_main_job runs it
    for part in tests.split(" && ")[1:]:  # the install and the test command, exactly as .ci/run has them
        assert part in ci, part


def test_the_readme_is_short_and_every_docs_page_is_linked():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    for page in PAGES[1:]:
        assert f"(docs/{page.name})" in readme, page.name
    for needs, _ in (b for page in PAGES for b in blocks(page)):
        assert set(needs) <= {"ci", *NEEDS}, needs  # a block names only needs the tests know
