"""`simflow explain A B`: where the cycle difference between two runs of one problem comes from.

Everything is computed from the runs' stats; nothing is written per variant. The account is an
exact decomposition of B's cycles minus A's (simulator names; a `gpu-ncu` pair carries them too):

    cycles    = L + E              L: launch latency (the config's, once per kernel launch)
    E         = I / IPC            I: thread instructions, IPC over the execution cycles E
    IPC       = t * w_per_slot * k t: threads per warp instruction, k: issue slots per cycle
    slots / w = 1 + sum_c lost_c   lost_c: slots lost to stall cause c per warp instruction

Each factor is changed from A's value to B's in that order and the cycles it moves are its effect,
so the effects add up to B - A exactly. Counts, rates and occupancy follow as evidence, each line
with its numbers. A run with several kernels is explained on its totals, or one kernel against another
(`kernel_view`): two kernels of one run, or the same kernel of two runs.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, replace

from ..errors import UserError
from ..registry import backend_class, backend_names, known_backend
from ..results.store import StoredRun
from ..sim.catalogue import aggregate, stat_of
from ..tables import render
from .compare import comparable, estimate_text, measuring

CAUSES = {  # issue-slot category -> what a lost slot means
    "issue_slots[W0_Scoreboard]": "waiting on a register not yet written (RAW dependence, mostly a load)",
    "issue_slots[W0_Idle]": "no valid instruction (warps done, at a barrier, or fetching)",
    "issue_slots[Stall]": "ready, but the pipeline or functional unit was busy",
}
INSTRUCTIONS = (  # (metric, what)
    ("gpgpu_n_tot_w_icount", "warp instructions"),
    ("gpgpu_n_shmem_insn", "shared-memory instructions (thread level)"),
    ("gpgpu_n_load_insn", "global load instructions (thread level)"),
    ("gpgpu_n_store_insn", "global store instructions (thread level)"),
    ("gpgpu_n_param_mem_insn", "kernel-parameter loads (thread level)"),
    ("issue_slots[issued_partial]", "warp instructions with fewer than 32 threads active"),
)
MEMORY = (
    ("gpgpu_n_shmem_bkconflict", "shared-memory bank conflicts"),
    ("gpgpu_stall_shd_mem[s_mem][bk_conf]", "memory-pipeline stall cycles: shared-memory bank conflicts"),
    ("gpgpu_stall_shd_mem[gl_mem][coal_stall]", "memory-pipeline stall cycles: global coalescing"),
    ("gpgpu_stall_shd_mem[gl_mem][resource_stall]", "memory-pipeline stall cycles: global memory resources"),
    ("gpgpu_stall_shd_mem[gl_mem][data_port_stall]", "memory-pipeline stall cycles: L1D data port"),
    ("gpu_reg_bank_conflict_stalls", "register bank conflict stalls"),
    ("L1D_total_cache_accesses", "L1D accesses"),
    ("L1D_total_cache_misses", "L1D misses"),
    ("L1D_total_cache_reservation_fails", "L1D accesses refused for lack of resources"),
    ("L2_total_cache_accesses", "L2 accesses"),
    ("L2_total_cache_misses", "L2 misses"),
    ("L2_cache_stats_breakdown[GLOBAL_ACC_R][MISS]", "L2 read misses (each a DRAM read)"),
    ("L2_cache_stats_breakdown[GLOBAL_ACC_W][MISS]", "L2 write misses (allocated in L2, no DRAM read)"),
    ("total dram reads", "DRAM reads"),
    ("total dram writes", "DRAM writes"),
    ("averagemflatency", "average memory fetch latency, cycles (whole process)"),
)
KERNEL_LEVEL = {"theoretical_occupancy"}  # per-kernel metrics the backend adds beside the simulator's stats


@dataclass
class Line:
    section: str  # "cycles", "IPC", "memory", "occupancy"
    what: str
    a: float
    b: float
    unit: str = ""
    effect: float = math.nan  # cycles of B - A this line accounts for (nan: evidence, not a term)
    detail: str = ""  # the numbers behind it, in words

    @property
    def change(self) -> float:
        return (self.b / self.a - 1) * 100 if self.a and not math.isnan(self.a) else math.nan


@dataclass
class Explanation:
    a: StoredRun
    b: StoredRun
    cycles: tuple[float, float]
    lines: list[Line] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    launch_latency: tuple[float, float] = (0.0, 0.0)
    kernels: tuple[str, str] = ("", "")  # the kernel of each run explained, when not the runs' totals

    @property
    def delta(self) -> float:
        return self.cycles[1] - self.cycles[0]

    def terms(self, section: str) -> list[Line]:
        """One decomposition's terms (they add up to B - A), largest effect first."""
        terms = [line for line in self.lines if line.section == section and not math.isnan(line.effect)]
        return sorted(terms, key=lambda line: -abs(line.effect))

    def ranked(self) -> list[Line]:
        """The finest decomposition there is: issue slots on the simulator, instructions and IPC otherwise."""
        return self.terms("slots") or self.terms("cycles")

    def evidence(self, section: str) -> list[Line]:
        lines = [line for line in self.lines if line.section == section and math.isnan(line.effect)]
        return sorted(lines, key=lambda line: -abs(_log_ratio(line.a, line.b)))


def _log_ratio(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b) or a == b:
        return 0.0
    if a <= 0 or b <= 0:
        return math.inf
    return math.log(b / a)


def totals(run: StoredRun) -> dict[str, float]:
    """A run's stats over all its kernels (simflow.sim.catalogue.aggregate of the `<kernel>.` ones, or the
    unprefixed ones of a one-kernel run), and its run-level metrics."""
    by_kernel: dict[str, dict[str, float]] = {}
    single: dict[str, float] = {}
    out: dict[str, float] = {}
    for name, value in run.metrics.items():
        prefix, _, base = name.rpartition(".")
        if stat_of(base) is None and base not in KERNEL_LEVEL:
            out[name] = float(value)
        elif prefix:
            by_kernel.setdefault(prefix, {})[base] = float(value)
        else:
            single[name] = float(value)
    out["kernel_launches"] = float(len(by_kernel) or 1)
    # kernels run one after another: the SMs with work at once are the largest kernel's, not the sum's
    ctas = [k.get("gpu_tot_issued_cta", math.nan) for k in by_kernel.values()] or [single.get("gpu_tot_issued_cta",
                                                                                            math.nan)]
    out["largest_kernel_ctas"] = max(ctas)
    return {**(aggregate(list(by_kernel.values())) if by_kernel else single), **out}


def kernels_of(run: StoredRun) -> list[str]:
    return list(run.kernels) or sorted({name.rpartition(".")[0] for name in run.metrics if "." in name})


def kernel_view(run: StoredRun, kernel: str) -> StoredRun:
    """One kernel of a run as a run of its own: that kernel's stats unprefixed, beside the run-level facts of
    the simulated GPU (launch latency, SMs), so it can be explained against any other kernel."""
    names = kernels_of(run)
    if kernel not in names:
        raise UserError(f"run {run.id} has no kernel {kernel!r}; its kernels: {', '.join(names) or 'none'}")
    if len(names) == 1:
        return replace(run, kernels=[kernel])
    prefix = kernel + "."
    metrics = {name.removeprefix(prefix): value for name, value in run.metrics.items()
               if name.startswith(prefix) or ("." not in name and (stat_of(name) is None and name not in KERNEL_LEVEL))}
    environment = {key.removeprefix(prefix): value for key, value in run.environment.items()
                   if key.startswith(prefix) or "." not in key}
    units = {name.removeprefix(prefix): unit for name, unit in run.units.items()
             if name.removeprefix(prefix) in metrics}
    return replace(run, metrics=metrics, environment=environment, units=units, kernels=[kernel])


def explain(a: StoredRun, b: StoredRun, force: bool = False, kernels: tuple[str, str] | None = None) -> Explanation:
    """B against A; `kernels` names one kernel of each to explain instead of the runs' totals."""
    if kernels is not None:
        a, b = kernel_view(a, kernels[0]), kernel_view(b, kernels[1])
    why = comparable(a, b)
    if kernels is not None and a.id == b.id:
        why = ""  # two kernels of one process: the same problem, config and build by construction
    if why and not force:
        raise UserError(f"runs {a.id} and {b.id} are not comparable: {why}; --force explains them anyway")
    if measuring(a.backend, b.backend):
        raise UserError(f"runs {a.id} ({a.backend}) and {b.id} ({b.backend}) ran on different machines, a modelled "
                        "GPU and a real one: their cycles do not decompose into one account. simflow diff sets their "
                        "aligned counters side by side; simflow correlate ranks variants run both ways")
    if a.backend != b.backend or not getattr(known_backend(a.backend), "simulator_stats", False):
        able = ", ".join(n for n in backend_names() if backend_class(n).simulator_stats)
        raise UserError(f"explain needs two simulator runs or two gpu-ncu runs (simflow profile): two runs of one "
                        f"backend whose metrics are the simulator's stats ({able}); got {a.backend} and {b.backend}: a "
                        f"plain GPU run has times, not the counters that explain them")
    ta, tb = totals(a), totals(b)
    missing = [n for n in ("gpu_sim_cycle", "gpu_sim_insn") if math.isnan(ta.get(n, math.nan))
               or math.isnan(tb.get(n, math.nan))]
    if missing:
        raise UserError(f"runs {a.id} ({a.status}) and {b.id} ({b.status}) do not both have {', '.join(missing)}; "
                        "explain needs complete runs")
    out = Explanation(a, b, (ta["gpu_sim_cycle"], tb["gpu_sim_cycle"]), kernels=kernels or ("", ""))
    if why:
        out.notes.append(f"not comparable: {why} (explained anyway: --force)")
    for run in (a, b):
        if run.status != "passed":
            out.notes.append(f"run {run.id} did not pass ({run.status}: {run.reason})")
        if run.sampled:
            out.notes.append(f"run {run.id} is an ESTIMATE from sampled simulation ({estimate_text(run)}): a "
                             "term smaller than its bound is within the estimate's error")
    if "upstream" in {a.environment.get("simulator_flavour"), b.environment.get("simulator_flavour")}:
        out.notes.append("upstream GPGPU-Sim prints gpgpu_n_shmem_bkconflict = 0; the memory-pipeline stall cycles "
                         "for bank conflicts (gpgpu_stall_shd_mem[s_mem][bk_conf]) count them on both builds")
    _cycles(out, ta, tb)
    _evidence(out, ta, tb)
    _hardware_evidence(out, ta, tb)
    _dram_note(out, ta, tb)
    return out


def _dram_note(out: Explanation, ta: dict, tb: dict) -> None:
    """Say why DRAM reads can be 0 beside L2 misses: the misses are writes, and the reads hit in L2."""
    for label, t in (("A", ta), ("B", tb)):
        misses, reads = _get(t, "L2_total_cache_misses"), _get(t, "total dram reads")
        if not (misses > 0 and reads == 0):
            continue
        writes = sum(_get(t, f"L2_cache_stats_breakdown[GLOBAL_ACC_W][{k}]") for k in ("MISS", "SECTOR_MISS"))
        hits = _get(t, "L2_cache_stats_breakdown[GLOBAL_ACC_R][HIT]")
        said = (f"{label} has 0 DRAM reads beside {misses:.0f} L2 misses: "
                + (f"{writes:.0f} of the misses are writes, allocated in the write-back L2 without a DRAM read, "
                   if not math.isnan(writes) else "the misses are not reads, ")
                + (f"and all {hits:.0f} global reads hit in L2" if not math.isnan(hits) else "and every read hit in L2")
                + " (gpgpu_perf_sim_memcpy = 1 fills L2 on cudaMemcpy)")
        out.notes.append(said)


def _get(t: dict, name: str) -> float:
    return t.get(name, math.nan)


def _cycles(out: Explanation, ta: dict, tb: dict) -> None:
    """The two exact decompositions (module docstring) into effect lines."""
    latency = [_get(t, "kernel_launch_latency") * t["kernel_launches"] for t in (ta, tb)]
    latency = [0.0 if math.isnan(v) else v for v in latency]
    execution = [t["gpu_sim_cycle"] - lat for t, lat in zip((ta, tb), latency, strict=True)]
    insn = [ta["gpu_sim_insn"], tb["gpu_sim_insn"]]
    modelled = not (math.isnan(_get(ta, "kernel_launch_latency")) and math.isnan(_get(tb, "kernel_launch_latency")))
    launches = [Line("", "kernel launch latency", latency[0], latency[1], "cycles", latency[1] - latency[0],
                     f"{ta['kernel_launches']:g} vs {tb['kernel_launches']:g} launch(es) of "
                     f"{_get(tb, 'kernel_launch_latency'):g} cycles, before any block starts")] if modelled else []
    out.launch_latency = tuple(latency)
    if min(execution) <= 0 or min(insn) <= 0:
        out.notes.append("a run has no execution cycles or instructions: only the launch latency is explained")
        out.lines += [replace(line, section="cycles") for line in launches]
        return
    ipc = [i / e for i, e in zip(insn, execution, strict=True)]
    at_a_ipc = insn[1] / ipc[0]
    out.lines += [
        *(replace(line, section="cycles") for line in launches),
        Line("cycles", "thread instructions", insn[0], insn[1], "thread insn", at_a_ipc - execution[0],
             f"B's instructions at A's IPC would take {at_a_ipc:.0f} execution cycles, A's took {execution[0]:.0f}"),
        Line("cycles", "IPC while executing", ipc[0], ipc[1], "thread insn/cycle", execution[1] - at_a_ipc,
             f"instructions over execution cycles: {insn[0]:.0f}/{execution[0]:.0f} vs "
             f"{insn[1]:.0f}/{execution[1]:.0f}"),
    ]
    accounts = [slot_account(out.a.backend, t) for t in (ta, tb)]
    if None in accounts:
        out.notes.append(f"{out.b.backend} runs carry no issue-slot breakdown: the account stops at IPC"
                         + ("; profile them again (simflow profile) to collect the warp-state counters"
                            if out.b.backend == "gpu-ncu" else ""))
        return
    (issued_a, lost_a, causes), (issued_b, lost_b, _) = accounts
    issued = [issued_a, issued_b]
    total = [issued_a + sum(lost_a.values()), issued_b + sum(lost_b.values())]
    per_cycle = [s / e for s, e in zip(total, execution, strict=True)]  # scheduler slots with work per cycle
    out.lines += [replace(line, section="slots") for line in launches]
    out.lines.append(Line("slots", "warp instructions issued", issued[0], issued[1], "warp insn",
                          (issued[1] - issued[0]) / per_cycle[0],
                          f"one issue slot each, at A's {per_cycle[0]:.1f} slots per cycle"))
    for name, meaning in causes.items():
        a, b = lost_a[name], lost_b[name]
        if a == b == 0:  # a state neither run was in (most of the hardware's on any one kernel)
            continue
        out.lines.append(Line("slots", f"slots lost: {name}", a, b, "slots",
                              (b - a) / per_cycle[0], f"{meaning}; {100 * a / total[0]:.1f} % vs "
                              f"{100 * b / total[1]:.1f} % of the slots"))
    sched = _get(tb, "schedulers_per_sm")
    if math.isnan(sched):
        sched = _hardware_fact(out.b, "device__attribute_num_schedulers_per_multiprocessor")
    sms = "" if math.isnan(sched) else (f": about {per_cycle[0] / sched:.1f} vs {per_cycle[1] / sched:.1f} SMs "
                                        f"with work ({sched:g} schedulers each)")
    out.lines.append(Line("slots", "scheduler slots with work per cycle", per_cycle[0], per_cycle[1], "slots/cycle",
                          execution[1] - total[1] / per_cycle[0],
                          f"more SMs busy at once give more slots a cycle{sms}"))


def slot_account(backend: str, t: dict):
    """(warp instructions issued, {cause: slots lost}, {cause: meaning}) of a run's totals, or None: the
    simulator's issue-slot stats, or the backend's own account (gpu-ncu: from the warp-state counters)."""
    cls = known_backend(backend)
    if cls is not None and hasattr(cls, "issue_slots"):
        found = cls.issue_slots(t)
        return None if found is None else (found[0], found[1], cls.slot_causes)
    names = ("issue_slots[issued]", *CAUSES)
    if any(math.isnan(_get(t, name)) for name in names):
        return None
    return (t["issue_slots[issued]"], {name.split("[")[1].rstrip("]"): t[name] for name in CAUSES},
            {name.split("[")[1].rstrip("]"): meaning for name, meaning in CAUSES.items()})


def _hardware_fact(run: StoredRun, counter: str) -> float:
    """A device attribute a hardware run recorded (the same for each of its kernels), or nan."""
    return next((float(v) for k, v in run.metrics.items() if k.endswith(f"ncu:{counter}")), math.nan)


def _hardware_evidence(out: Explanation, ta: dict, tb: dict) -> None:
    """The hardware backend's evidence (pipes, copies, shared-memory wavefronts, traffic, occupancy), A beside B."""
    cls = known_backend(out.b.backend)
    if cls is None or not hasattr(cls, "evidence"):
        return
    found = [{what: (section, value, unit, detail) for section, what, value, unit, detail
              in cls.evidence(t)} for t in (ta, tb)]
    for what, (section, va, unit, detail) in found[0].items():
        if what in found[1]:
            b = found[1][what]
            out.lines.append(Line(section, what, va, b[1], unit, detail=detail if detail == b[3] else
                                  "; ".join(f"{side}: {said}" for side, said in (("A", detail), ("B", b[3])) if said)))


def _evidence(out: Explanation, ta: dict, tb: dict) -> None:
    own = hasattr(known_backend(out.b.backend), "evidence")  # hardware: its own counters say it (_hardware_evidence)
    for section, table in () if own else (("instructions", INSTRUCTIONS), ("memory", MEMORY)):
        for name, what in table:
            va, vb = _get(ta, name), _get(tb, name)
            if not (math.isnan(va) and math.isnan(vb)):
                unit = "warp insn" if name.startswith("issue_slots") else stat_of(name).unit  # one slot each
                out.lines.append(Line(section, what, va, vb, unit, detail=name))
    warps = [_get(t, "gpgpu_n_tot_w_icount") for t in (ta, tb)]
    if all(w > 0 for w in warps):
        aligned = getattr(known_backend(out.b.backend), "aligned", {})  # hardware: the counters behind the names
        names = [" + ".join(aligned[n].counters) if n in aligned else n
                 for n in ("gpu_sim_insn", "gpgpu_n_tot_w_icount")]
        out.lines.append(Line("instructions", "threads per warp instruction", ta["gpu_sim_insn"] / warps[0],
                              tb["gpu_sim_insn"] / warps[1], "threads", detail=" / ".join(names)))
    for level in ("L1D", "L2"):
        acc = [_get(t, f"{level}_total_cache_accesses") for t in (ta, tb)]
        miss = [_get(t, f"{level}_total_cache_misses") for t in (ta, tb)]
        if all(not math.isnan(x) and x > 0 for x in acc) and not any(math.isnan(x) for x in miss):
            hit = [100 * (1 - m / x) for m, x in zip(miss, acc, strict=True)]
            out.lines.append(Line("memory", f"{level} hit rate", hit[0], hit[1], "%",
                                  detail=f"1 - misses/accesses: {miss[0]:.0f}/{acc[0]:.0f} vs "
                                         f"{miss[1]:.0f}/{acc[1]:.0f}"))
    a_run, b_run = out.a, out.b
    achieved = "gpu_occupancy"
    if all(math.isnan(_get(t, achieved)) for t in (ta, tb)):  # the fork prints -nan: the samples stand for it
        achieved = "sampled_occupancy"
    occupancy = [(achieved, "achieved occupancy", "active warps over the warp slots of SMs with work"
                  + ("; from the progress samples (this build prints gpu_occupancy = -nan)"
                     if achieved == "sampled_occupancy" else "")),
                 ("theoretical_occupancy", "theoretical occupancy", "resident CTAs' warps over the SM's warp slots"),
                 ("gpu_tot_issued_cta", "thread blocks (CTAs)", "")]
    for name, what, detail in occupancy:
        va, vb = _get(ta, name), _get(tb, name)
        if math.isnan(va) and math.isnan(vb):
            continue
        if name == "theoretical_occupancy":
            limits = [_limiter(run) for run in (a_run, b_run)]
            detail += f"; limited by {limits[0] or '?'} vs {limits[1] or '?'}"
        sms = _get(tb, "simulated_sms")
        if name == "gpu_tot_issued_cta" and not math.isnan(sms):
            largest = [_get(t, "largest_kernel_ctas") for t in (ta, tb)]
            several = max(ta["kernel_launches"], tb["kernel_launches"]) > 1
            detail = (f"on {sms:g} simulated SMs: at most {min(largest[0], sms):g} vs {min(largest[1], sms):g} SMs "
                      "have work at once" + (" (the largest kernel's CTAs: kernels run one after another)"
                                            if several else " (more only with more CTAs)"))
        out.lines.append(Line("occupancy", what, va, vb, "%" if "occupancy" in name else "CTAs", detail=detail))


def _limiter(run: StoredRun) -> str:
    found = sorted({v for k, v in run.environment.items() if k.split(".")[-1] == "cta_limited_by"})
    per_core = sorted({f"{v:g}" for k, v in run.metrics.items() if k.split(".")[-1] == "cta_per_core"})
    text = ", ".join(found)
    return f"{text} ({'/'.join(per_core)} CTAs per SM)" if text and per_core else text


def _number(value: float) -> str:
    if math.isnan(value):
        return "n/a"
    return f"{value:.0f}" if abs(value) >= 1000 or value == int(value) else f"{value:.4g}"


def _signed(value: float) -> str:
    return f"{round(value) + 0:+d}"  # + 0: no "-0"


def _identity(run: StoredRun, kernel: str = "") -> str:
    params = ",".join(f"{k}={v}" for k, v in run.params.items())
    return f"{run.id} ({run.variant} {params})" + (f", kernel {kernel}" if kernel else "")


# A term of the decomposition in words: (what more of it is, what less of it is).
TERM_WORDS = {
    "kernel launch latency": ("more kernel launches to wait for", "fewer kernel launches to wait for"),
    "warp instructions issued": ("more warp instructions to issue", "fewer warp instructions to issue"),
    "slots lost: W0_Scoreboard": ("more scoreboard stalls (warps waiting on a load's register)",
                                  "fewer scoreboard stalls (warps waiting on a load's register)"),
    "slots lost: W0_Idle": ("more idle issue slots (warps at a barrier, done or fetching)",
                            "fewer idle issue slots (warps at a barrier, done or fetching)"),
    "slots lost: Stall": ("more slots lost to busy pipelines", "fewer slots lost to busy pipelines"),
    "scheduler slots with work per cycle": ("fewer SMs with work at once", "more SMs with work at once"),
    "thread instructions": ("more instructions", "fewer instructions"),
    "IPC while executing": ("a lower IPC", "a higher IPC"),
}


def _words(out: Explanation, what: str) -> tuple[str, str]:
    """A term in words (more of it, less of it); a hardware stall state in the backend's own words."""
    if what in TERM_WORDS:
        return TERM_WORDS[what]
    phrase = getattr(known_backend(out.b.backend), "slot_causes", {}).get(what.removeprefix("slots lost: "))
    return (f"more {phrase}", f"fewer {phrase}") if phrase else (what, what)


def verdict(out: Explanation) -> str:
    """One line in words: how much slower or faster B is, the terms that make most of it, and whether memory
    traffic explains it (L1D misses saved or not)."""
    delta, base = out.delta, out.cycles[0]
    if not base:
        return "A took no cycles: nothing to compare"
    pct = 100 * delta / base
    if abs(pct) < 1:
        return f"B takes about the same cycles as A ({pct:+.1f} %): no term matters"
    terms = [t for t in out.ranked() if t.effect * delta > 0][:2]  # what moved the cycles the way they went
    words = [f"{_words(out, t.what)[0 if t.effect > 0 else 1]} ({_signed(t.effect)} cycles)"
             for t in terms]
    said = f"B is {abs(pct):.1f} % {'slower' if delta > 0 else 'faster'} than A ({_signed(delta)} cycles)"
    if words:
        said += ": mostly " + " and ".join(words)
    counter = [t for t in out.ranked() if t.effect * delta < 0 and abs(t.effect) > abs(delta) / 4][:1]
    if counter:
        t = counter[0]
        said += f", against {_words(out, t.what)[0 if t.effect > 0 else 1]} ({_signed(t.effect)})"
    access = {line.detail: line for line in out.lines if line.section == "memory"}
    misses, hit = access.get("L1D_total_cache_misses"), next((line for line in out.lines
                                                              if line.what == "L1D hit rate"), None)
    if misses and not (math.isnan(misses.a) or math.isnan(misses.b)):
        if abs(misses.b - misses.a) <= 0.02 * max(misses.a, 1):
            already = f"A's L1D already hit {hit.a:.0f} % of its accesses, so " if hit and hit.a >= 50 else ""
            said += f"; {already}no L1D misses are saved ({misses.a:.0f} vs {misses.b:.0f})"
        else:
            said += (f"; L1D misses {'fall' if misses.b < misses.a else 'rise'} "
                     f"{abs(100 * (misses.b / misses.a - 1)) if misses.a else 100:.0f} % ({misses.a:.0f} -> "
                     f"{misses.b:.0f})")
    return said


EVIDENCE = (("instructions", "Instructions, largest change first"), ("pipes", "Pipes busy, % of their peak"),
            ("memory", "Memory traffic, largest change first"), ("occupancy", "Occupancy"))


def _finite(value: float):
    return value if math.isfinite(value) else None


def as_dict(out: Explanation) -> dict:
    def clean(line: Line) -> dict:
        row = asdict(line)
        row["change_%"] = line.change
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}

    return {"a": _identity(out.a, out.kernels[0]), "b": _identity(out.b, out.kernels[1]),
            "problem": out.b.problem.describe(),
            "backend": out.b.backend, "config": out.b.config,
            "simulator": out.b.environment.get("simulator_flavour", ""),
            "cycles": {"a": out.cycles[0], "b": out.cycles[1], "delta": out.delta,
                       "launch_latency": list(out.launch_latency),
                       "bound": {"a": _finite(out.a.bound("gpu_sim_cycle")),
                                 "b": _finite(out.b.bound("gpu_sim_cycle"))}},
            "sampled": {"a": out.a.estimate or None, "b": out.b.estimate or None},
            "cycles_as_instructions_over_ipc": [clean(line) for line in out.terms("cycles")],
            "issue_slots": [clean(line) for line in out.terms("slots")],
            "evidence": {s: [clean(line) for line in out.evidence(s)] for s, _ in EVIDENCE},
            "notes": out.notes, "verdict": verdict(out)}


def format_explanation(out: Explanation, fmt: str = "table") -> str:
    """Text (table), markdown or JSON."""
    import pandas as pd

    if fmt == "json":
        return json.dumps(as_dict(out), indent=2) + "\n"
    if fmt == "csv":  # every line of the account, a row each
        rows = [{"section": line.section, "what": line.what, "a": line.a, "b": line.b, "unit": line.unit,
                 "effect_cycles": line.effect, "detail": line.detail} for line in out.lines]
        return render(pd.DataFrame(rows), "csv")
    if fmt not in ("table", "markdown"):
        raise UserError(f"explain prints table, markdown, csv or json, not {fmt!r}")
    delta, base = out.delta, out.cycles[0]
    where = f"{out.b.problem.describe()}, {out.b.backend}"
    if out.b.config:
        where += f", config {out.b.config}"
    if out.b.environment.get("simulator_flavour"):
        where += f", {out.b.environment['simulator_flavour']}"
    head = [f"A = {_identity(out.a, out.kernels[0])}", f"B = {_identity(out.b, out.kernels[1])}", where,
            f"cycles: A {base:.0f}, B {out.cycles[1]:.0f}: B - A = {delta:+.0f} ({100 * delta / base:+.1f} %)"]
    if any(out.launch_latency):
        head.append(f"of which kernel launch latency (no instruction runs): A {out.launch_latency[0]:.0f}, "
                    f"B {out.launch_latency[1]:.0f}")
    parts = ["\n".join(head) + "\n"]
    for section, title in (("cycles", "Cycles as instructions over IPC (effects add up to B - A)"),
                           ("slots", "Where the issue slots went, largest effect first (effects add up to B - A)")):
        rows = [{"rank": i, "factor": line.what, "A": _number(line.a), "B": _number(line.b), "unit": line.unit,
                 "cycles": _signed(line.effect), "share_%": _signed(100 * line.effect / delta) if delta else "",
                 "numbers": line.detail} for i, line in enumerate(out.terms(section), 1)]
        if rows:
            parts.append(render(pd.DataFrame(rows), fmt, title))
    for section, title in EVIDENCE:
        rows = [{"what": line.what, "A": _number(line.a), "B": _number(line.b), "unit": line.unit,
                 "change_%": "" if math.isnan(line.change) else _signed(line.change), "numbers": line.detail}
                for line in out.evidence(section)]
        if rows:
            parts.append(render(pd.DataFrame(rows), fmt, title))
    if out.notes:
        parts.append("\n".join(f"note: {n}" for n in out.notes) + "\n")
    parts.append(("**Verdict:** " if fmt == "markdown" else "verdict: ") + verdict(out) + "\n")
    return "\n".join(parts)
