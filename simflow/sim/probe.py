"""What a GPGPU-Sim build can do, learnt by running small probe programs on it (never by reading or
changing its source).

One program (cuda_templates/simulator_probe.cu.j2), built once with CUDA 11.x, holds every probe; each
probe runs in its own simulator process on SM7_QV100_small, so one that crashes the simulator (the
accel-sim fork at 667834cf on any wmma.mma.sync) costs only its own answer. The answers:

- flavour: accel-sim fork or upstream, from what the log prints;
- occupancy: whether `gpu_occupancy` is a number ("printed") or -nan, in which case simflow's
  `sampled_occupancy` (from the progress samples) stands for it;
- bank conflicts: which counter the build fills for a 32-way shared-memory conflict
  (`gpgpu_n_shmem_bkconflict` on the fork, `gpgpu_stall_shd_mem[s_mem][bk_conf]` upstream);
- WMMA: for each form (shape, layouts of A and B, accumulator type), one 16x16x16-sized product checked
  element by element on the host: correct, wrong (how many), crashed (the signal) or refused.

Answers are cached per build (its path and its runtime library's size and time; the build string is
recorded from the log), so a build is probed once; rebuilding it probes again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .. import processes
from ..errors import UserError
from ..kernels.toolkits import Toolkit, cuda_install_path
from ..kernels.variant_types import template_environment
from ..resources import cache_dir
from .config import load_config, write_run_config
from .log import SimLog, parse_text
from .simulator import Simulator, environment
from .standalone import build_program

PROBE_VERSION = 2  # bump when a probe or its reading changes: cached answers are then probed again
PROBE_CONFIG = "SM7_QV100_small"
PROBE_TIMEOUT_S = 300
BANK_BLOCKS, BANK_ROUNDS = 16, 64
SHAPES = ((16, 16, 16), (32, 8, 16), (8, 32, 16))
LAYOUTS = ("row", "col")
ACCUMULATORS = {"f32": "float", "f16": "half"}
SPACES = ("global", "shared")  # where the fragments are loaded from and stored to


@dataclass(frozen=True)
class WmmaForm:
    m: int
    n: int
    k: int
    a: str  # "row" or "col": the layout of A in memory
    b: str
    acc: str  # "f32" or "f16"
    space: str  # "global" or "shared": the state space of load_matrix_sync and store_matrix_sync

    @property
    def name(self) -> str:
        return f"wmma_m{self.m}n{self.n}k{self.k}_{self.a}_{self.b}_{self.acc}_{self.space}"

    @property
    def acc_type(self) -> str:
        return ACCUMULATORS[self.acc]

    def describe(self) -> str:
        return f"m{self.m}n{self.n}k{self.k} A {self.a} B {self.b} {self.acc} {self.space}"


WMMA_FORMS = tuple(WmmaForm(m, n, k, a, b, acc, space) for space in SPACES for (m, n, k) in SHAPES
                   for a in LAYOUTS for b in LAYOUTS for acc in ACCUMULATORS)
FORMS = {form.name: form for form in WMMA_FORMS}
WMMA_GLOBAL_FORM = "wmma_m16n16k16_row_row_f32_global"  # what `wmma fragments=global` uses


@dataclass
class Capabilities:
    root: str
    build: str = ""
    version: str = ""
    flavour: str = ""
    occupancy: str = ""  # "printed", or "sampled" (gpu_occupancy is -nan: sampled_occupancy stands for it)
    bank_conflict_counter: str = ""  # the counter a 32-way shared-memory conflict fills ("" if none did)
    banks_probe: str = ""  # what the bank/occupancy probe itself said: PASS, or why not
    wmma: dict[str, str] = field(default_factory=dict)  # form name -> "correct" | "wrong: ..." | "crashed: ..."

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def wmma_correct(self) -> list[str]:
        return [name for name, said in self.wmma.items() if said == "correct"]

    def summary(self) -> dict[str, str]:
        """The facts a run records (environment values are strings)."""
        facts = {"simulator_flavour": self.flavour, "simulator_occupancy": self.occupancy,
                 "simulator_bank_conflict_counter": self.bank_conflict_counter or "none"}
        if self.wmma:
            right = self.wmma_correct
            facts["simulator_wmma"] = (f"{len(right)} of {len(self.wmma)} forms correct"
                                       + (f": {', '.join(right)}" if right else ""))
        return facts


def wmma_refusal(caps: Capabilities, forms: list[str] | tuple[str, ...]) -> str:
    """Why this build cannot run a kernel that uses these WMMA forms ('' when its model computes each correctly)."""
    bad = [(name, caps.wmma.get(name, "not probed")) for name in forms if caps.wmma.get(name) != "correct"]
    if not bad:
        return ""
    said = "; ".join(f"{FORMS[name].describe() if name in FORMS else name}: {outcome}" for name, outcome in bad)
    right = caps.wmma_correct
    if WMMA_GLOBAL_FORM in right:
        advice = "wmma fragments=global uses a form it computes correctly"
    elif right:
        advice = f"the forms it computes correctly: {', '.join(FORMS[name].describe() for name in right)}"
    else:
        advice = "it computes no WMMA form correctly: simulate a variant without tensor cores"
    return (f"this GPGPU-Sim build ({caps.flavour or 'unknown'} at {caps.root}) gets the WMMA form this kernel uses "
            f"wrong in simflow's probe ({said}; 'simflow doctor' lists every form); {advice}")


def _cache_path(sim: Simulator) -> Path:
    stat = sim.library.stat()
    key = f"{sim.root}|{sim.library}|{stat.st_size}|{stat.st_mtime_ns}|{PROBE_VERSION}"
    return cache_dir() / "simulator-probes" / f"{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


def cached(sim: Simulator) -> Capabilities | None:
    path = _cache_path(sim)
    try:
        return Capabilities(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def _save(sim: Simulator, caps: Capabilities) -> None:
    path = _cache_path(sim)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(caps.as_dict(), indent=1))
    os.replace(tmp, path)


def probe_source(wmma: bool = True) -> str:
    """The probe program: the bank-conflict probe, and the WMMA forms when `wmma` (48 instantiations that take
    nvcc most of a minute, so the program a plain run needs leaves them out)."""
    return template_environment().get_template("simulator_probe.cu.j2").render(
        bank_blocks=BANK_BLOCKS, bank_rounds=BANK_ROUNDS, wmma_forms=WMMA_FORMS if wmma else ())


@dataclass(frozen=True)
class ProbeRun:
    name: str
    log: SimLog
    line: str  # the program's simflow-probe line ("" if it never printed one)
    returncode: int


def _run_probe(name: str, binary: Path, sim: Simulator, env: dict[str, str], workdir: Path) -> ProbeRun:
    folder = workdir / name
    folder.mkdir()
    write_run_config(load_config(PROBE_CONFIG), folder, sim.root)
    shutil.copy2(binary, folder / "probe")
    try:
        # under coreutils' timeout too: a probe never outlives a killed simflow by more than its time
        proc = subprocess.run(processes.watchdog([str(folder / "probe"), name], PROBE_TIMEOUT_S), cwd=folder, env=env,
                              capture_output=True, timeout=PROBE_TIMEOUT_S + 30, stdin=subprocess.DEVNULL)
        text, code = (proc.stdout + proc.stderr).decode(errors="replace"), proc.returncode
    except subprocess.TimeoutExpired as exc:
        text, code = ((exc.stdout or b"") + (exc.stderr or b"")).decode(errors="replace"), -signal.SIGKILL
    line = next((ln.strip() for ln in text.splitlines() if ln.startswith("simflow-probe:")), "")
    return ProbeRun(name, parse_text(text), line, code)


def _outcome(run: ProbeRun) -> str:
    """One probe's answer in words: correct, wrong (the program's own count), crashed or refused."""
    if run.line.endswith(" PASS") and run.log.status == "complete":
        return "correct"
    if " FAIL " in run.line and "cuda error" not in run.line:
        return "wrong: " + run.line.split(" FAIL ", 1)[1]
    if run.returncode < 0:
        return f"crashed: {signal.Signals(-run.returncode).name}"
    if run.log.status in ("aborted", "incomplete", "not_simulated"):
        return f"{run.log.status}: {run.log.reason}"
    return f"failed: {run.line or f'exit code {run.returncode}'}"


def probe(sim: Simulator, toolkit: Toolkit, wmma: bool = True, refresh: bool = False, jobs: int = 2) -> Capabilities:
    """The build's capabilities, from the cache or by running the probes (the WMMA ones when `wmma`)."""
    caps = None if refresh else cached(sim)
    if caps is not None and (caps.wmma or not wmma):
        return caps
    env = environment(sim, cuda_install_path(toolkit))
    with tempfile.TemporaryDirectory(prefix="simflow-probe-") as tmp:
        workdir = Path(tmp)
        if caps is None:
            banks = build_program(probe_source(wmma=False), "simulator-probe", toolkit)
            caps = _basic(sim, _run_probe("banks", banks, sim, env, workdir))
        if wmma:
            binary = build_program(probe_source(), "simulator-probe-wmma", toolkit)
            with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
                runs = list(pool.map(lambda form: _run_probe(form.name, binary, sim, env, workdir), WMMA_FORMS))
            caps.wmma = {run.name: _outcome(run) for run in runs}
    _save(sim, caps)
    return caps


def _basic(sim: Simulator, run: ProbeRun) -> Capabilities:
    log = run.log
    caps = Capabilities(root=str(sim.root), build=log.build, version=log.simulator_version, flavour=log.flavour)
    caps.banks_probe = _outcome(run)
    if caps.banks_probe != "correct" or not log.kernels:
        raise UserError(f"GPGPU-Sim at {sim.root} did not run simflow's bank-conflict probe: {caps.banks_probe}. "
                        "Check the build by its own README (its regression tests) before simulating with it")
    metrics = log.kernels[0].metrics
    occupancy = metrics.get("gpu_occupancy")
    caps.occupancy = "printed" if occupancy is not None and occupancy == occupancy else "sampled"
    for counter in ("gpgpu_n_shmem_bkconflict", "gpgpu_stall_shd_mem[s_mem][bk_conf]"):
        if metrics.get(counter, 0) > 0:
            caps.bank_conflict_counter = counter
            break
    return caps
