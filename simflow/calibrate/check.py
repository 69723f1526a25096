"""`simflow calibrate --check`: calibrate's own microbenchmarks run in GPGPU-Sim on a config, beside what the GPU
measured. An overlay sets latencies and clocks option by option; whether the simulated machine then shows the
measured L1, L2 and DRAM latencies and L2 bandwidth end to end (interconnect, queues and slices included), the
FMA and PTX integer rates the initiation intervals were derived for, and the shared-memory load rate with and
without bank conflicts, alone and among FMAs (which no option sets: the simulated pipes against the GPU's), is
what this run says.

The program is cuda_templates/calibrate.cu's kernels with calibrate_sim.cu's host code, built with CUDA 11.x;
its simulator log is kept.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .. import processes
from ..errors import ToolError, UserError
from ..kernels.toolkits import Toolkit, cuda_install_path
from ..resources import cache_dir, templates_dir
from ..results.folders import write_text
from ..sim.config import SimConfig, config_key, write_run_config
from ..sim.log import parse_text
from ..sim.simulator import Simulator, environment
from ..sim.standalone import build_program

TIMEOUT_S = 3600
QUIET_STATS = 100_000
READ_BYTES = 8 << 20  # the simulated L2 read: 8 MiB, once to fill the L2, once timed
LATENCIES = ("l1_latency_cycles", "shared_latency_cycles", "l2_latency_cycles", "dram_latency_cycles")
# figure, the stream kernel that gives it and its first launch of the two, under the line that counts its operations
# (cal_shared's launches: conflict-free, then 4-way conflicting; cal_shared_fma's: conflict-free, then 2-way)
RATES = (("fma_per_sm_per_cycle", "cal_fma", 0, "stream_ops"),
         ("int_add_per_sm_per_cycle", "cal_int_add", 0, "stream_ops"),
         ("int_mad_per_sm_per_cycle", "cal_int_mad", 0, "stream_ops"),
         ("shared_load_per_sm_per_cycle", "cal_shared", 0, "shared_ops"),
         ("shared_load_4way_per_sm_per_cycle", "cal_shared", 2, "shared_ops"),
         ("shared_fma_load_per_sm_per_cycle", "cal_shared_fma", 0, "mix_loads"),
         ("shared_fma_load_2way_per_sm_per_cycle", "cal_shared_fma", 2, "mix_loads"))
_LINE = re.compile(r"^simflow-calibrate: (\w+) (\S+)\s*$", re.M)


@dataclass(frozen=True)
class Figure:
    name: str
    unit: str
    measured: float | None  # the GPU's (NAME.measured.json), None where there is none
    simulated: float

    @property
    def ratio(self) -> float | None:
        return self.simulated / self.measured if self.measured else None


@dataclass(frozen=True)
class Check:
    config: str
    figures: list[Figure]
    log: Path
    build: str = ""  # the simulator's build string, as its log gives it
    folded: tuple[Path, ...] = ()  # with --fold: NAME.check.json and the overlay written again

    def as_dict(self) -> dict:
        return {"config": self.config, "log": str(self.log), "build": self.build,
                "folded": [str(p) for p in self.folded],
                "figures": [{"figure": f.name, "unit": f.unit, "measured": f.measured, "simulated": f.simulated,
                             "ratio": f.ratio} for f in self.figures]}


# GPGPU-Sim aborts on %clock64 (the accel-sim fork at 667834cf): the chases time with the 32-bit %clock instead
SIM_TIMER = ("__device__ __forceinline__ long long sim_clock()\n"
             "{ unsigned t; asm volatile(\"mov.u32 %0, %%clock;\" : \"=r\"(t)); return t; }\n"
             "#define CAL_TIMER() sim_clock()\n")


def program_source() -> str:
    """calibrate.cu's kernels, their timer the simulator's, then the simulator's host program."""
    return SIM_TIMER + (templates_dir() / "calibrate.cu").read_text() + "\n" + \
        (templates_dir() / "calibrate_sim.cu").read_text()


def measured_beside(config: SimConfig) -> dict:
    """The figures `simflow calibrate` recorded with this config (NAME.measured.json beside NAME.toml); {} if none."""
    if config.path is None:
        return {}
    path = config.path.with_name(f"{config.path.stem}.measured.json")
    try:
        return json.loads(path.read_text())
    except OSError:
        return {}
    except ValueError as exc:
        raise UserError(f"cannot read {path}: {exc}") from None


def core_mhz(options: dict[str, str]) -> float:
    """The core clock of gpgpu_clock_domains (core:interconnect:L2:DRAM, MHz)."""
    try:
        return float(options["gpgpu_clock_domains"].split(":")[0])
    except (KeyError, ValueError, IndexError):
        raise ToolError("the simulator log gives no gpgpu_clock_domains: cannot turn cycles into GB/s") from None


def fold_into(config: SimConfig, found: Check, measured: dict) -> Check:
    """Keep the check beside the overlay (NAME.check.json) and write the overlay again from its measurements with
    the check folded in (simflow.calibrate.overlay.fold): each latency less what the simulated machine adds, the
    L2 clock over the share of its bandwidth the simulated interconnect gives."""
    from .overlay import check_record, write

    if config.path is None or not measured:
        raise UserError(f"--fold writes an overlay `simflow calibrate` made, from its measurements: {config.name} "
                        "has none beside it (give --from NAME.measured.json where they are elsewhere)")
    try:
        record = check_record(config_key(config), config.options, {f.name: f.simulated for f in found.figures},
                              time.strftime("%Y-%m-%d", time.gmtime()), found.build)
    except ValueError as exc:
        raise UserError(f"cannot fold the check into {config.path}: {exc}") from None
    folder, name = config.path.parent, config.path.stem
    kept = folder / f"{name}.check.json"
    write_text(kept, json.dumps(record, indent=2, sort_keys=True) + "\n")
    toml, _ = write(folder, name, measured, record)
    return Check(found.config, found.figures, found.log, found.build, (kept, toml))


def figures(text: str, measured: dict) -> list[Figure]:
    """What the simulated program printed and its log counted, beside the GPU's figures."""
    printed = {name: float(value) for name, value in _LINE.findall(text)}
    log = parse_text(text)
    missing = [name for name in (*LATENCIES, "l2_read_bytes") if name not in printed]
    reads = [k for k in log.kernels if k.kernel == "cal_read" and k.complete]
    if missing or len(reads) < 3:
        said = f"no {', '.join(missing)}" if missing else f"{len(reads)} complete cal_read launches of 3"
        raise ToolError(f"the simulated calibration did not finish ({said}; simulator: {log.status} {log.reason})")
    out = [Figure(name, "cycles", measured.get(name), printed[name]) for name in LATENCIES]
    cycles = reads[2].metrics["gpu_sim_cycle"] - reads[1].metrics["gpu_sim_cycle"]  # the extra reads' cycles
    gbs = printed["l2_read_bytes"] / (cycles / core_mhz(log.options)) / 1e3
    out.append(Figure("l2_bandwidth_gbs", "GB/s", measured.get("l2_bandwidth_gbs"), gbs))
    return out + _rates(printed, log, measured)


def _rates(printed: dict[str, float], log, measured: dict) -> list[Figure]:
    """The FMA, PTX integer and shared-memory load rates: a stream kernel's extra operations over the extra cycles
    of its second launch. The program runs them first, so a log cut short lacks the chases too; a log of an
    earlier program has the figures of the streams it ran (those whose operations line it printed)."""
    out = []
    for name, kernel, first, ops in RATES:
        if ops not in printed:
            continue
        runs = [k for k in log.kernels if k.kernel == kernel and k.complete]
        if len(runs) < first + 2:
            raise ToolError(f"the simulated calibration did not finish ({len(runs)} complete {kernel} launches "
                            f"of {first + 2})")
        cycles = runs[first + 1].metrics["gpu_sim_cycle"] - runs[first].metrics["gpu_sim_cycle"]
        out.append(Figure(name, "per SM a cycle", measured.get(name), printed[ops] / cycles))
    return out


def check(config: SimConfig, sim: Simulator, toolkit: Toolkit, measured: dict | None = None,
          fold: bool = False) -> Check:
    """Run the microbenchmarks under the simulator on `config`; the log is kept in simflow's cache. `fold`: then
    fold what it saw into the overlay (fold_into)."""
    measured = measured_beside(config) if measured is None else measured
    sms = int(config.options.get("gpgpu_n_clusters", 80)) * int(config.options.get("gpgpu_n_cores_per_cluster", 1))
    l2_bytes = int(measured.get("l2_bytes", 6 << 20))
    binary = build_program(program_source(), "calibrate-check", toolkit)
    runs = cache_dir() / "calibrate-check"
    runs.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=f"{config.name}-{time.strftime('%Y%m%d-%H%M%S')}-", dir=runs))
    # one progress line in QUIET_STATS cycles, no cache dumps (a lone thread's chase, the other SMs idle), and
    # copies from the host leave the simulated L2 empty, so a chain's first pass meets DRAM
    quiet = SimConfig(config.name, config.base, config.description,
                      {**config.options, "gpgpu_runtime_stat": f"{QUIET_STATS}:0", "gpgpu_perf_sim_memcpy": "0"},
                      config.path)
    write_run_config(quiet, folder, sim.root)
    env = environment(sim, cuda_install_path(toolkit))
    cmd = processes.watchdog([str(binary), str(sms), str(l2_bytes), str(READ_BYTES)], TIMEOUT_S)
    try:
        proc = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, timeout=TIMEOUT_S + 30,
                              stdin=subprocess.DEVNULL)
        text, code = (proc.stdout + proc.stderr).decode(errors="replace"), proc.returncode
    except subprocess.TimeoutExpired as exc:
        text, code = ((exc.stdout or b"") + (exc.stderr or b"")).decode(errors="replace"), -signal.SIGKILL
    log = folder / "sim.log"
    write_text(log, text)
    try:
        found = Check(config.name, figures(text, measured), log, parse_text(text).build)
    except ToolError as exc:
        raise ToolError(f"{exc}; exit code {code}; the log: {log}") from None
    return fold_into(config, found, measured) if fold else found
