"""`simflow check`, the main job: every variant rendered, compiled with each nvcc here, and run
on every backend present; backends that are absent are named with how to get them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import LimitError, ToolError, UserError
from ..job import Job
from ..kernels.problems import Problem
from ..kernels.toolkits import compile_kernel, find_toolkits
from ..kernels.variants import VARIANTS
from ..registry import backend_class, backend_names
from .jobs import run_job


@dataclass
class CheckReport:
    problem: Problem
    rows: list[dict] = field(default_factory=list)
    backends: dict[str, dict] = field(default_factory=dict)  # name -> available, detail, how_to_get
    toolkits: list[str] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)  # a row's result columns: each nvcc, then each backend run

    @property
    def ran(self) -> list[str]:
        """The backends the check ran every variant on."""
        return [c for c in self.columns if c in self.backends]

    @property
    def failed(self) -> list[str]:
        return [r["variant"] for r in self.rows if any(str(v).startswith("FAILED") for v in r.values())]

    def as_dict(self) -> dict:
        return {"problem": self.problem.as_dict(), "toolkits": self.toolkits,
                "backends": self.backends, "variants": self.rows}


def _arch_for(toolkit) -> str:
    return "sm_90" if toolkit.can_target("sm_90") else "sm_70"


def run_check(problem: Problem, results: Path, seed: int = 0, repeats: int = 10, progress=None) -> CheckReport:
    """Every variant on `problem`; each backend's runs keep their folders under `results` (not stored).
    `progress(report, row)` is called once the toolkits and backends are known (row None), then per variant."""
    report = CheckReport(problem)
    toolkits = find_toolkits()
    report.toolkits = [f"{tk.nvcc} (CUDA {tk.version_text})" for tk in toolkits]
    backends = []
    for name in backend_names():
        avail = backend_class(name).probe()
        report.backends[name] = {"available": avail.available, "detail": avail.detail,
                                 "how_to_get": avail.how_to_get}
        if avail.available and backend_class(name).in_check:
            backends.append(name)
    report.columns = [f"nvcc {tk.version_text} {_arch_for(tk)}" for tk in toolkits] + backends
    if progress:
        progress(report, None)
    for name, variant in VARIANTS.items():
        row: dict = {"variant": name}
        try:
            kernel = variant.render(problem)
        except UserError as exc:  # e.g. constant memory too small: a finding, not the end
            row["render"] = f"refused: {exc}"
            report.rows.append(row)
            if progress:
                progress(report, row)
            continue
        row["fingerprint"] = kernel.fingerprint()
        row["lines"] = kernel.source.count("\n")
        for tk in toolkits:
            col = f"nvcc {tk.version_text} {_arch_for(tk)}"
            try:
                arch = kernel.build_arch(_arch_for(tk))
            except LimitError as exc:
                row[col] = f"refused: {exc}"
                continue
            if not tk.can_target(arch):  # sm_90a with CUDA 11
                row[col] = f"skipped: CUDA {tk.version_text} cannot target {arch}"
                continue
            try:
                compiled = compile_kernel(kernel.source, arch, kernel.fingerprint((arch,)), toolkit=tk)
            except ToolError as exc:
                row[col] = f"FAILED: {exc.output.strip().splitlines()[-1] if exc.output else exc}"
                continue
            usage = compiled.resources.get(kernel.kernel_names[0], {})
            row[col] = (f"ok, {usage.get('registers', '?')} regs, "
                        f"{usage.get('spill_store_bytes', 0)} B spilled")
        for bname in backends:
            limit = backend_class(bname).check_max_flops
            if limit is not None and problem.flops > limit:
                row[bname] = (f"skipped: {problem.flops / 1e9:.2f} GFLOP is more than a check runs on {bname} "
                              f"({limit / 1e6:g} MFLOP); try --problem batch3x3")
                continue
            job = Job.make(name, {}, problem, bname, seed=seed, repeats=repeats)
            result = run_job(job, results)
            text = result.status
            if "time_ms" in result.metrics:
                text += f", {result.metrics['time_ms']:.4f} ms, {result.metrics['gflops']:.1f} GFLOP/s"
            if "gpu_sim_cycle" in result.metrics:
                text += f", {result.metrics['gpu_sim_cycle']:.0f} cycles, IPC {result.metrics['gpu_ipc']:.1f}"
            if result.reason:
                text += f" ({result.reason.splitlines()[0]})"
            row[bname] = text
        report.rows.append(row)
        if progress:
            progress(report, row)
    return report
