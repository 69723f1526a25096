"""Writing an output never destroys what it replaces (issue 57): a regular file is replaced atomically keeping
its mode; a symlink's target is written and the link kept; a device or a FIFO is written in place. The device
is one made in a temporary folder (a node like /dev/null's), never the real /dev/null."""

import os
import stat
import threading

import pytest
from conftest import ROOT, simflow

from simflow.results.folders import write_text

LOG = ROOT / "examples" / "accelsim-fork_qv100_batch3x3_global.log.gz"


def test_a_regular_file_is_replaced_and_keeps_its_mode(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    target.chmod(0o640)
    write_text(target, "new")
    assert target.read_text() == "new" and stat.S_IMODE(target.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]  # nothing temporary left


def test_a_symlink_keeps_being_a_link_and_its_target_gets_the_text(tmp_path):
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    proc = simflow("parse", str(LOG), "--format", "csv", "-o", str(link))
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and "gpu_sim_cycle" in real.read_text()


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_device_is_written_in_place_never_replaced(tmp_path):
    null = tmp_path / "null"
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # the same device as /dev/null, in a folder of ours
    proc = simflow("parse", str(LOG), "--format", "csv", "-o", str(null))
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISCHR(null.stat().st_mode) and os.major(null.stat().st_rdev) == 1  # still the device
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]


def test_a_fifo_is_written_in_place(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    write_text(fifo, "through the pipe\n")
    reader.join(timeout=10)
    assert got == ["through the pipe\n"] and stat.S_ISFIFO(fifo.stat().st_mode)


def test_csv_without_pandas_is_the_text_pandas_writes():
    """`simflow parse -f csv` writes its CSV without pandas (memory on a 1 GB log): the same text as render()."""
    import math
    from pathlib import Path

    import pandas as pd

    from simflow import api
    from simflow.tables import csv_text, render

    data = Path(__file__).parent / "data"
    cases = [rows for p in sorted(data.glob("*qv100*.log.gz")) if (rows := api.parse_rows(str(p))[0])]
    assert len(cases) >= 6
    cases.append([{"a": 1, "b": 2.5, "c": "x,y", "d": True, "e": None, "f": 3.0},
                  {"a": math.nan, "b": 1e-05, "c": 'say "hi"', "d": False, "e": 7, "f": 14121600.0, "g": [1, 2]}])
    for rows in cases:
        assert csv_text(rows) == render(pd.DataFrame(rows), "csv")
