"""AerialVision's file (visualizer_enabled = 1 in a config overlay): the simulator's own per-interval
trace, read into rows for the interval plots."""

from __future__ import annotations

import math
from pathlib import Path

from .log_text import _Damage, _open_text, _readable_lines

AERIALVISION_GLOB = "gpgpusim_visualizer__*.log.gz"  # where the simulator writes it (it ignores the path option)


def parse_aerialvision(path: str | Path) -> list[dict]:
    """The AerialVision file (visualizer_enabled = 1 in a config overlay), one row per interval of
    gpgpu_runtime_stat cycles: the kernel (1, 2, ... in launch order), cycles within it, IPC, issue
    slots per SM (the 'WarpDivergenceBreakdown': the simulator averages over all SMs and rounds down)
    and L2 hits and misses. Slots and L2 counts are what happened since the previous print, so a
    kernel's first interval also holds the previous kernel's last cycles. A damaged file gives the
    intervals before the damage."""
    rows: list[dict] = []
    current: dict[str, list[str]] = {}
    kernel, before_cycle, before_insn, before_total = 0, 0, 0, None
    damage = _Damage()
    with _open_text(Path(path)) as handle:
        for line in _readable_lines(handle, damage):
            key, _, rest = line.partition(":")
            if key in _AV_KEYS:
                current[key] = rest.split()
            if key != "globaltotinsncount":
                continue
            try:
                cycle, insn, total = (int(current[k][0]) for k in ("globalcyclecount", "globalinsncount", key))
                slots = [int(v) for v in current.get("WarpDivergenceBreakdown", [])]
            except (KeyError, IndexError, ValueError):
                current = {}
                continue
            if total != before_total or cycle < before_cycle:  # the next kernel: its counters start again
                kernel, before_cycle, before_insn, before_total = kernel + 1, 0, 0, total
            row = {"kernel": kernel, "cycle_start": before_cycle, "cycle_end": cycle,
                   "ipc": (insn - before_insn) / (cycle - before_cycle) if cycle > before_cycle else math.nan}
            if len(slots) >= 4:
                row.update({"slots_idle": slots[0], "slots_scoreboard": slots[1], "slots_stall": slots[2],
                            "slots_issued": sum(slots[3:]), "slots_issued_partial": sum(slots[3:-1])})
            for name, av in (("l2_read_hits", "Ltworeadhit"), ("l2_read_misses", "Ltworeadmiss"),
                             ("l2_write_hits", "Ltwowritehit"), ("l2_write_misses", "Ltwowritemiss")):
                row[name] = int(current[av][0]) if current.get(av) else math.nan
            rows.append(row)
            before_cycle, before_insn, current = cycle, insn, {}
    return rows


_AV_KEYS = {"globalcyclecount", "globalinsncount", "globaltotinsncount", "WarpDivergenceBreakdown",
            "Ltworeadhit", "Ltworeadmiss", "Ltwowritehit", "Ltwowritemiss"}
