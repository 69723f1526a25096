"""The GPGPU-Sim backend: the rendered kernel in a standalone program, simulated in its own run folder.

A run has three steps, so that the middle one can happen in a container:

1. prepare (here): render the program, write the seeded inputs and `run.json` into a new folder;
2. execute (where the simulator is: natively, or `simflow sim-exec` inside the Docker image):
   build with CUDA 11.x, write the merged config, run the program under the simulator with a
   timeout, keep stdout+stderr compressed (`sim.log.gz`) and write `execution.json`;
3. finish (here): parse the log, check `y.bin` against the float64 reference with numpy,
   decide the status and write `result.json`.

Every file of the run stays in the folder; results are written atomically.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import platform
import shutil
import signal
import subprocess
import time
from pathlib import Path

import numpy as np

from .. import __version__, processes
from ..errors import LimitError, ToolError, UserError
from ..kernels import footprint
from ..kernels.limits import check_launches
from ..kernels.problems import Problem
from ..kernels.reference import Tolerance, check_output, make_inputs, output_shape
from ..kernels.toolkits import CUDA11_HELP, cuda_install_path
from ..kernels.variants import Kernel, show_value
from ..results.folders import keep_result, replace_with, write_csv, write_json
from ..sim import container
from ..sim import probe as simulator_probe
from ..sim.aerialvision import AERIALVISION_GLOB, parse_aerialvision
from ..sim.catalogue import SUMMARY, stat_of
from ..sim.config import DEFAULT_CONFIG, SimConfig, config_key, cta_limit, load_config, parse_options, write_run_config
from ..sim.log import parse_file
from ..sim.log_record import SIMULATED_DEVICE, add_log, keep_intervals
from ..sim.simulator import SIMULATOR_HELP, environment, find_simulator, missing_libraries
from ..sim.standalone import SIM_BUILD_OPTIONS, build_program, cuda11_toolkit, render_program
from .base import Availability, Backend, Finding, Job, RunResult, utc_timestamp

CONTAINER_GRACE_S = 120  # the container applies the timeout itself; the host waits this much longer
WATCHDOG_GRACE_S = 30  # the watchdog kills a simulator this long after the timeout simflow should have applied
BUILD_ALLOWANCE_S = 900  # the longest a run's build and first probes take before its simulation starts
# Scratch the simulator leaves in its working folder; removed after a run (the PTX and ptxas files stay).
# What GPGPU-Sim cannot run, by the features a rendering declares (Variant.features, 'name:value'): the first
# feature whose entry gives a reason is the refusal; '' runs (fp16 WMMA: whether a build computes it right is its
# probes' answer, Kernel.wmma_forms).
def _mma_sync(precision: str) -> str:
    if precision == "bf16":
        return ("GPGPU-Sim has no bf16: it runs sm_70 code (SM7_QV100), and bf16 tensor-core inputs (mma.sync "
                "m16n8k16 .bf16) need sm_80+; simulate precision=fp16 for the tensor-core path")
    return ("GPGPU-Sim runs sm_70 code (SM7_QV100), and this kernel needs ldmatrix (sm_75+) and mma.sync "
            f"m16n8k{16 if precision == 'fp16' else 8} with {precision} inputs (sm_80+)")


REFUSALS = {
    "io": lambda io: f"io={io}: the simulator's host program passes float32 tensors; simulate with io=float32",
    "streams": lambda n: (f"streams={n} times host-device copies overlapped with kernels, and GPGPU-Sim does not "
                          "time copies (cudaMemcpy is functional only, outside the simulated cycles); simulate with "
                          "streams=0"),
    "half2": lambda _: ("GPGPU-Sim's PTX lexer reads the .f16x2 type as .f16 (src/cuda-sim/ptx.l, marked TODO), so "
                        "a half2 FMA computes one of its two halves; measured with the accel-sim fork dev@667834cf: "
                        "relative error 0.71 on batch3x3 (fp32 passes at 6e-8)"),
    "wmma": lambda precision: {
        "tf32": ("TF32 WMMA (m16n16k8, sm_80+) is not in GPGPU-Sim's PTX parser, which knows wmma for f16 shapes "
                 "m16n16k16, m32n8k16, m8n32k16 only"),
        "bf16": ("GPGPU-Sim has no bf16: bf16 WMMA (m16n16k16 .bf16, sm_80+) is not in its PTX parser, which knows "
                 "wmma for f16 shapes only; simulate precision=fp16")}.get(precision, ""),
    "mma_sync": _mma_sync,
    "wgmma": lambda precision: ("GPGPU-Sim has no bf16 (tensor-core bf16 inputs are sm_80+); " if precision == "bf16"
                                else "") + ("GPGPU-Sim runs sm_70 code (SM7_QV100), and wgmma exists on sm_90a only; "
                                            "simulate wmma_nhwc or wmma (WMMA, sm_70) for the tensor-core path"),
    "stream_k": lambda _: ("stream_k starts as many blocks as the GPU holds at once, and the simulator's host program "
                           "starts every block of a launch's grid (one a k step of a tile: split-K by every k step, "
                           "not stream-K); simulate split=2, 4 or 8 instead"),
    "refused": lambda reason: reason,  # a user variant's own refusal for the simulator
}


def unsupported(features: tuple[str, ...]) -> str:
    """Why GPGPU-Sim cannot run a rendering of these features ('' when it can), known without any simulator build."""
    for feature in features:
        name, _, value = feature.partition(":")
        why = REFUSALS[name](value) if name in REFUSALS else (
            f"a kernel that uses {feature}: GPGPU-Sim's refusal table (REFUSALS in simflow.backends.gpgpusim) has no "
            "entry for it, so whether the simulator runs it is unknown; add one")
        if why:
            return why
    return ""


SCRATCH = ("_app_cuda_version_*", "_cuobjdump_list_ptx_*", "_tempfile_.txt")


def prepare(job: Job, kernel: Kernel, config: SimConfig, folder: Path) -> None:
    """Everything the execute step needs, in the run folder: sources, inputs, run.json (the job, and the merged
    config: a container has no overlay file of the host)."""
    problem = job.problem
    program = render_program(kernel, problem.B)
    (folder / "kernel.cu").write_text(kernel.source)
    (folder / "program.cu").write_text(program.source)
    x, w = make_inputs(problem, job.seed)
    x.tofile(folder / "x.bin")
    w.tofile(folder / "w.bin")
    write_json(folder / "run.json", {
        "simflow_version": __version__, "run_id": folder.name, "created": utc_timestamp(), "job": job.as_dict(),
        "precision": kernel.precision, "output": kernel.output, "kernels": kernel.kernel_names,
        "tolerance": dataclasses.asdict(kernel.check_tolerance), "fingerprint": kernel.fingerprint(),
        "program_fingerprint": program.fingerprint, "build_options": list(SIM_BUILD_OPTIONS),
        "config": config.as_dict(), "timeout_s": job.timeout_s, "wmma_forms": list(kernel.wmma_forms),
    })


def execute(folder: Path) -> dict:
    """Build, configure and simulate the prepared run in `folder`; returns (and writes) execution.json."""
    folder = folder.resolve()
    spec = json.loads((folder / "run.json").read_text())
    facts: dict = {"started": utc_timestamp(), "host": platform.node()}
    try:
        sim = find_simulator()
        toolkit = cuda11_toolkit()
        facts.update(simulator_root=str(sim.root), simulator_found_by=sim.found_by, cuda=toolkit.version_text,
                     nvcc=str(toolkit.nvcc))
        config = SimConfig(**spec["config"])
        written = write_run_config(config, folder, sim.root)
        facts.update(config=written.name, config_base=written.base, config_hash=written.hash,
                     config_options_new_to_base=list(written.added), instrumentation=written.instrumentation)
        env = environment(sim, cuda_install_path(toolkit))
    except UserError as exc:
        facts.update(finished=utc_timestamp(), setup_error=str(exc))
        write_json(folder / "execution.json", facts)
        return facts
    forms = spec.get("wmma_forms") or []
    try:  # what this build can do: probed once per build (the WMMA forms when the kernel uses one), then cached
        caps = simulator_probe.probe(sim, toolkit, wmma=bool(forms))
        facts.update(caps.summary())
        if refusal := simulator_probe.wmma_refusal(caps, forms):
            facts.update(finished=utc_timestamp(), refused=refusal)
            write_json(folder / "execution.json", facts)
            return facts
    except (UserError, ToolError) as exc:
        facts["simulator_probe_error"] = str(exc).splitlines()[0]
    try:
        started = time.monotonic()
        binary = build_program((folder / "program.cu").read_text(), spec["job"]["variant"], toolkit,
                               tuple(spec["build_options"]))
        facts["build_s"] = round(time.monotonic() - started, 3)  # about 0 when the compile cache had it
        shutil.copy2(binary, folder / "program")
    except ToolError as exc:
        (folder / "build.log").write_text(str(exc) + "\n")
        facts.update(finished=utc_timestamp(), build_error=str(exc).splitlines()[0])
        write_json(folder / "execution.json", facts)
        return facts

    timeout = float(spec["timeout_s"])
    start = time.monotonic()
    with open(folder / "sim.log", "wb") as log:
        cmd = processes.watchdog([str(folder / "program"), ".", "y.bin"], timeout + WATCHDOG_GRACE_S)
        proc = subprocess.Popen(cmd, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                preexec_fn=processes.die_with_parent_hook())
        facts["timed_out"] = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            processes.stop_group(proc)
            facts["timed_out"] = True
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM (see cli.main): the simulator goes too, the run is kept
            processes.stop_group(proc)
            facts["interrupted"] = processes.interruption()
    facts["wall_s"] = round(time.monotonic() - start, 3)
    facts["returncode"] = proc.returncode
    if proc.returncode < 0:
        facts["signal"] = signal.Signals(-proc.returncode).name
    try:
        _compress(folder / "sim.log")
    except OSError as exc:  # a full disk: the plain log is kept and read as it is
        facts["log_not_compressed"] = f"{exc.strerror}: {exc.filename}"
    for pattern in SCRATCH:
        for junk in folder.glob(pattern):
            junk.unlink(missing_ok=True)
    checkpoints = folder / "checkpoint_files"
    if checkpoints.is_dir() and not any(checkpoints.iterdir()):
        checkpoints.rmdir()
    facts["finished"] = utc_timestamp()
    write_json(folder / "execution.json", facts)
    return facts


def _log_path(folder: Path) -> Path:
    """The run's log: sim.log.gz, or the plain sim.log where it could not be compressed."""
    return folder / "sim.log.gz" if (folder / "sim.log.gz").is_file() or not (folder / "sim.log").is_file() \
        else folder / "sim.log"


def _compress(path: Path) -> None:
    """path -> path.gz (streamed, atomic), then the plain file goes; if the gzip cannot be written (a full disk),
    the plain log stays and the OSError says so."""
    def write(tmp: Path) -> None:
        with open(path, "rb") as src, gzip.open(tmp, "wb", compresslevel=6) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)

    replace_with(path.with_name(path.name + ".gz"), write)
    path.unlink()


def execute_in_container(folder: Path, image: str, engine_cmd: str) -> None:
    """Run the execute step in a container; the container writes execution.json into the folder."""
    spec = json.loads((folder / "run.json").read_text())
    name = f"simflow-{spec['run_id']}"
    container.reap(engine_cmd)  # containers of a simflow that was killed outright
    cmd = container.run_command(engine_cmd, image, folder, name, container.host_cache())
    (folder / "docker.cmd").write_text(" ".join(cmd) + "\n")
    try:
        code = container.run(cmd, name, folder / "docker.log", float(spec["timeout_s"]) + CONTAINER_GRACE_S)
        interrupted = False
    except KeyboardInterrupt:
        code, interrupted = None, True
    facts = json.loads((folder / "execution.json").read_text()) if (folder / "execution.json").is_file() else None
    if facts is None:
        output = (folder / "docker.log").read_text(errors="replace").strip()[-2000:]
        if interrupted:
            facts = {"finished": utc_timestamp(), "interrupted": processes.interruption()}
        else:
            what = "did not finish in time and was stopped" if code is None else f"exited with {code}"
            facts = {"finished": utc_timestamp(),
                     "setup_error": f"the container ({' '.join(cmd)}) {what} without running the simulator: {output}"}
    if interrupted:
        facts["interrupted"] = processes.interruption()
    facts["docker_image"] = image
    facts["container_engine"] = engine_cmd
    write_json(folder / "execution.json", facts)


def finish(folder: Path) -> RunResult:
    """Read what the execute step left and decide the run's status: the run's record (the caller keeps it)."""
    spec = json.loads((folder / "run.json").read_text())
    job = Job.from_dict(spec["job"])
    result = RunResult.of(job, "passed", spec["fingerprint"], kernels=list(spec["kernels"]), run_id=spec["run_id"],
                          created=spec["created"])
    result.artifacts = {"run_dir": str(folder), "kernel_source": str(folder / "kernel.cu"),
                        "program_source": str(folder / "program.cu")}
    path = folder / "execution.json"
    facts = json.loads(path.read_text()) if path.is_file() else {}
    recorded = ("config_base", "config_hash", "cuda", "docker_image", "container_engine", "host")
    for key, value in facts.items():  # the simulator_* facts: where it was found, what the build can do
        if value and (key in recorded or key.startswith("simulator_")):
            result.environment[key] = str(value)
    if not facts:
        result.status, result.reason = "crashed", f"the execute step left no {path.name} (killed before the end?)"
    elif facts.get("interrupted"):
        result.status = "interrupted"
        by = facts["interrupted"] if isinstance(facts["interrupted"], str) else "by Ctrl-C or SIGTERM"  # older: True
        result.reason = f"stopped {by} after {facts.get('wall_s', 0):g} s; files kept in {folder}"
        if _log_path(folder).is_file():
            result.artifacts["log"] = str(_log_path(folder))
    elif "setup_error" in facts:  # the simulator never started (a broken image, a missing toolkit in it)
        result.status, result.reason = "aborted", f"the simulator did not start: {facts['setup_error']}"
    elif "refused" in facts:  # what this build's model gets wrong, from its probes
        result.status, result.reason = "refused", facts["refused"]
    elif "build_error" in facts:
        result.status, result.reason = "compile_error", facts["build_error"]
        result.artifacts["build_log"] = str(folder / "build.log")
    else:
        _judge(folder, spec, facts, job.problem, result)
    return result


def _judge(folder: Path, spec: dict, facts: dict, problem: Problem, result: RunResult) -> None:
    log_path = _log_path(folder)
    result.artifacts["log"] = str(log_path)
    log = parse_file(log_path)
    add_log(result, log)
    result.add("sim_wall_s", facts.get("wall_s", float("nan")), "s")
    keep_intervals(result, log, folder)
    for visualizer in sorted(folder.glob(AERIALVISION_GLOB))[-1:]:  # when an overlay turned it on
        result.artifacts["aerialvision"] = str(visualizer)
        rows = parse_aerialvision(visualizer)
        if rows:
            write_csv(folder / "aerialvision.csv", rows)
            result.artifacts["aerialvision_intervals"] = str(folder / "aerialvision.csv")
    program_fail = next((line for line in log.program_lines if line.startswith("simflow: FAIL")), "")

    if facts.get("timed_out"):
        result.status = "timed_out"
        result.reason = (f"the simulator ran past the timeout ({spec['timeout_s']:g} s) and was killed; "
                         f"raise --timeout or simulate a smaller problem; log kept at {log_path}")
    elif log.status == "aborted":
        result.status, result.reason = "aborted", f"the simulator aborted: {log.reason}"
    elif log.status == "stopped_at_limit":
        result.status, result.reason = "stopped_at_limit", log.reason
        config = folder / "gpgpusim.config"
        issued, last = cta_limit(dict(parse_options(config.read_text(errors="replace")))) if config.is_file() \
            else (0, 0)
        if issued and result.metrics.get("gpu_tot_issued_cta") == issued:  # a sample inside the launch
            before = f", after the {issued - last} of the launches before it" if issued > last else ""
            result.reason = (f"a sample: the launch's first {last} CTAs{before}, each run to its end (gpgpu_max_cta "
                             "and gpgpu_max_completed_cta); the simulator stops there, before the program checks y")
    elif log.status != "complete":
        code = facts.get("signal") or f"exit code {facts.get('returncode')}"
        result.status, result.reason = "crashed", f"{log.reason} ({code}); log kept at {log_path}"
    elif "cuda error" in program_fail or "cannot" in program_fail:
        result.status, result.reason = "launch_error", program_fail.removeprefix("simflow: FAIL ")
    elif spec["job"].get("launch"):  # a part of sampled simulation (sampling.launch_parts): run to its end
        result.status = "passed"
        result.reason = (f"one launch ({spec['job']['launch']}) of the variant's several, made alone for sampled "
                         "simulation and simulated whole; y is not the layer's output, so it was not checked")
    else:
        y_path = folder / "y.bin"
        y = np.fromfile(y_path, dtype=np.float32) if y_path.is_file() else np.empty(0, np.float32)
        op = spec.get("output", "conv")
        shape = output_shape(problem, op)
        if y.size != int(np.prod(shape)):
            result.status = "crashed"
            result.reason = f"the program wrote {y.size} of {int(np.prod(shape))} outputs to y.bin"
            return
        x, w = make_inputs(problem, spec["job"]["seed"])
        tolerance = Tolerance(**spec["tolerance"]) if "tolerance" in spec else None  # runs before it: the precision's
        result.judge(check_output(problem, x, w, y.reshape(shape), spec["precision"], op=op, tolerance=tolerance))


class GpgpusimBackend(Backend):
    name = "gpgpusim"
    takes_config = True
    default_metrics = ("gpu_sim_cycle", "gpu_ipc", "gpu_occupancy", "gpu_sim_insn", "L1D_total_cache_accesses",
                       "L1D_total_cache_misses", "gpgpu_n_shmem_insn", "gpgpu_n_shmem_bkconflict",
                       "L2_total_cache_accesses")
    speed_metric = "gpu_sim_cycle"
    speed_unit = "cycles"
    live_log = "sim.log"  # the simulator's progress samples, read as they come (`simflow sim` on a terminal)
    check_max_flops = 50e6  # a check simulates small problems only (batch3x3: 0.3 MFLOP, about 3 s a variant)
    default_config = DEFAULT_CONFIG
    title, short = "simulator", "sim"
    shown = ("regs", "smem", "dynamic_smem", "cta_per_core", "theoretical_occupancy", *SUMMARY)
    simulator_stats = True
    sampling = True

    @classmethod
    def direction(cls, metric: str) -> str | None:
        stat = stat_of(metric)  # the stat catalogue (and the user's stats) says
        return stat.better if stat is not None else None

    @classmethod
    def support(cls, variant) -> dict:
        """Whether GPGPU-Sim runs the variant with its defaults, and the parameter values it refuses (why), as
        known without a build; `needs_wmma_forms`: what a build's probe must have found correct (simflow doctor)."""
        defaults = variant.resolve({})
        default_why = unsupported(variant.features(defaults))
        refuses = []
        for p in variant.params:
            for choice in p.choices:
                why = unsupported(variant.features(variant.resolve({p.name: choice})))
                if why and why != default_why:
                    refuses.append({"param": p.name, "value": show_value(choice), "reason": why})
        return {"accepts_defaults": not default_why, "reason": default_why, "refuses": refuses,
                "needs_wmma_forms": list(variant.wmma_forms(defaults))}

    @classmethod
    def config_identity(cls, config: str) -> tuple[str, str]:
        loaded = load_config(config)
        return loaded.name, config_key(loaded)

    @classmethod
    def probe(cls) -> Availability:
        """Says every missing part at once: the simulator (see simflow.sim.simulator) and a CUDA 11.x toolkit."""
        missing, how = [], []
        try:
            sim = find_simulator()
        except UserError as exc:
            sim = None
            missing.append(str(exc).removesuffix(SIMULATOR_HELP).rstrip(". ;"))
            how.append(SIMULATOR_HELP)
        try:
            toolkit = cuda11_toolkit()
        except UserError as exc:
            toolkit = None
            missing.append(str(exc).split(" GPGPU-Sim needs")[0])
            how.append(CUDA11_HELP)
        if sim is not None and toolkit is not None:
            try:
                environment(sim, cuda_install_path(toolkit))
            except UserError as exc:
                missing.append(str(exc))
                how.append(SIMULATOR_HELP)
        if sim is not None and (lacking := missing_libraries(sim)):
            missing.append(f"the simulator's {sim.library} needs system libraries this system lacks: "
                           f"{'; '.join(lacking)}")
            how.append("build the simulator on this system's release (for an image: on Debian 12, its release)")
        if missing:
            return Availability(False, "; ".join(missing), "; ".join(how))
        return Availability(True, f"GPGPU-Sim at {sim.root} (from {sim.found_by}), CUDA {toolkit.version_text} "
                                  f"({toolkit.nvcc})")

    @classmethod
    def doctor(cls, probe_builds: bool = True, refresh: bool = False) -> list[Finding]:
        """The simulator: where simflow looked, each build's probed capabilities, and the container engines."""
        return [*simulator_findings(probe_builds, refresh), *engine_findings()]

    @classmethod
    def check(cls, job: Job) -> None:
        cls.require(job)

    @staticmethod
    def require(job: Job) -> str:
        """What this job needs, or a UserError saying what is missing and how to get it: the simulator and CUDA
        11.x natively; the engine and the image for a container (its command is returned)."""
        if not job.timeout_s > 0:
            raise UserError(f"the simulator's timeout must be more than 0 seconds, got {job.timeout_s:g}")
        if not job.docker_image:
            find_simulator()
            cuda11_toolkit()
            return ""
        engine = container.engine(job.engine or None)
        container.check_image(job.docker_image, engine)
        return engine

    @staticmethod
    def refusal(kernel: Kernel, batch: int) -> str:
        """Why the simulated V100 cannot run `kernel` ('' if it can): known without any tool."""
        if why := unsupported(kernel.features):
            return why
        try:
            check_launches(kernel.launches(batch), SIMULATED_DEVICE)
        except LimitError as exc:
            return f"on the simulated {SIMULATED_DEVICE.name}: {exc}"
        return ""

    @classmethod
    def refusal_of(cls, job: Job, kernel: Kernel) -> str:
        if refusal := cls.refusal(kernel, job.problem.B):
            return refusal
        try:
            footprint.check(kernel, job.problem, simulated=True)
        except LimitError as exc:
            return str(exc)
        return ""

    def run(self, job: Job, folder: Path, kernel: Kernel | None = None) -> RunResult:
        kernel = kernel or job.kernel()
        refusal = self.refusal_of(job, kernel)  # a refusal needs no simulator: it comes first
        if refusal:
            return RunResult.refusal(job, kernel, refusal)
        engine = self.require(job)  # before anything is written
        prepare(job, kernel, load_config(job.config), folder)
        # the record first, as running: a simflow killed outright leaves a run that is listed and importable
        grace = CONTAINER_GRACE_S if job.docker_image else WATCHDOG_GRACE_S
        keep_result(RunResult.running(job, kernel, folder.name, {
            "run_dir": str(folder), "kernel_source": str(folder / "kernel.cu"),
            "program_source": str(folder / "program.cu"), "log": str(folder / "sim.log")},
            job.timeout_s + grace + BUILD_ALLOWANCE_S), folder)
        if job.docker_image:
            execute_in_container(folder, job.docker_image, engine)
        else:
            execute(folder)
        return finish(folder)


# ---- what `simflow doctor` says of the simulator backend ----


def simulator_findings(probe_builds: bool = True, refresh: bool = False) -> list[Finding]:
    """Where simflow looked for GPGPU-Sim (which build it uses, why it passed over the others), and what each
    build present can do, from its probes (simflow.sim.probe; cached per build)."""
    from ..sim.probe import WMMA_FORMS, probe
    from ..sim.simulator import candidates

    avail = GpgpusimBackend.probe()
    found = [Finding("GPGPU-Sim", avail.available, avail.detail, avail.how_to_get)]
    try:
        chosen = find_simulator().root
    except UserError:
        chosen = None
    looked = candidates()
    used = next((c for c in looked if c.usable and c.path.resolve() == chosen), None)  # the first that names it
    lines = [("used: " if c is used else "") + c.describe() for c in looked]
    found.append(Finding("GPGPU-Sim search", chosen is not None, "; ".join(lines),
                         "" if chosen is not None else SIMULATOR_HELP))
    builds = {c.path.resolve(): c for c in looked if c.usable}
    if not probe_builds or not builds:
        return found
    try:
        toolkit = cuda11_toolkit()
    except UserError as exc:
        found.append(Finding("GPGPU-Sim capabilities", False, f"not probed: {exc}", CUDA11_HELP))
        return found
    for root, candidate in builds.items():
        sim = candidate.simulator()
        try:
            caps = probe(sim, toolkit, refresh=refresh)
        except (UserError, ToolError) as exc:
            found.append(Finding(f"GPGPU-Sim at {root}", False, f"probes failed: {str(exc).splitlines()[0]}",
                                 "rebuild it by its own README"))
            continue
        right = [form.describe() for form in WMMA_FORMS if caps.wmma.get(form.name) == "correct"]
        wrong = {said.split(":")[0] for said in caps.wmma.values() if said != "correct"}
        wmma = (f"WMMA: {len(right)} of {len(caps.wmma)} forms correct" + (f" ({', '.join(right)})" if right else "")
                + (f"; the others {', '.join(sorted(wrong))}" if wrong else ""))
        occupancy = ("gpu_occupancy printed" if caps.occupancy == "printed" else
                     "gpu_occupancy = -nan: sampled_occupancy (from the progress samples) stands for it")
        found.append(Finding(f"GPGPU-Sim at {root}", True,
                             f"{caps.flavour or 'unknown flavour'}, {caps.version} [build {caps.build}]; {occupancy}; "
                             f"bank conflicts in {caps.bank_conflict_counter or 'no counter'}; {wmma}"))
    return found


def engine_findings() -> list[Finding]:
    """Each container engine on PATH: whether its engine answers, and (podman) whether it can run --init."""
    from ..processes import run_quietly
    from ..sim.container import ENGINES, init_problem

    found = []
    for name in ENGINES:
        if not shutil.which(name):
            continue
        code, out = run_quietly([name, "version", "--format", "{{.Server.Version}}"], timeout=15)
        if code != 0:
            first = out.splitlines()[-1] if out else "no answer"
            found.append(Finding(name, False, f"client present, engine not reachable ({first})",
                                 "start its engine, or run the simulator natively"))
        elif why := init_problem(name):
            found.append(Finding(name, False, f"engine {out}, but {why}", "apt-get install catatonit"))
        else:
            found.append(Finding(name, True, f"engine {out}"))
    if not found:
        found.append(Finding("docker", False, "no docker or podman command on PATH",
                             "install Docker Engine or Podman to run the simulator in the simflow image "
                             "('simflow image build')"))
    return found
