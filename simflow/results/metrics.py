"""What simflow knows about each metric: which direction is better. Each backend says it of its own metrics
(Backend.better, Backend.direction: the simulator's from the stat catalogue); the figures every run has are
listed here."""

from __future__ import annotations

from ..registry import backend_class, backend_names, known_backend

# The correctness check's figures, on every backend.
CHECK_BETTER = {"rel_error": "lower", "max_abs_error": "lower", "max_rel_error": "lower", "max_scaled_error": "lower",
                "bad_elements": "lower", "checked_elements": ""}
RUN_BETTER = {"sim_wall_s": "lower", "kernel_launch_latency": "", "simulated_sms": "", "schedulers_per_sm": "",
              "job_wall_s": "lower", "regs": "", "lmem": "lower", "smem": "", "cmem": "",
              "cta_per_core": "higher", **CHECK_BETTER}

def default_metrics(backend: str) -> list[str]:
    """What a comparison shows for a backend's runs when the user names no metric (the backend says)."""
    cls = known_backend(backend)
    return list(cls.default_metrics) if cls else []


def speed_metric(backend: str) -> str:
    """The metric a backend's speed-up is computed from (lower is faster), or ''."""
    cls = known_backend(backend)
    return cls.speed_metric if cls else ""


def better(name: str) -> str:
    """'lower', 'higher' or '' for a metric name (a `<kernel>.` prefix is ignored): the figures every run has,
    then what each backend says of its own."""
    for candidate in (name, name.split(".", 1)[-1]):
        if candidate in RUN_BETTER:
            return RUN_BETTER[candidate]
        for backend in backend_names():
            if (found := backend_class(backend).direction(candidate)) is not None:
                return found
    return ""


# A metric some builds leave missing, and the one that measures the same thing there: the accel-sim fork prints
# gpu_occupancy = -nan, and sampled_occupancy (simflow.sim.log) is gpu_occupancy's measure from its samples.
STAND_INS = {"gpu_occupancy": "sampled_occupancy"}


def stand_in(name: str, runs) -> str:
    """`name`, or the metric that stands for it when none of `runs` has a number for it but some have the stand-in
    (a `<kernel>.` prefix is kept)."""
    prefix, _, base = name.rpartition(".")
    other = STAND_INS.get(base)
    if other is None:
        return name
    other = f"{prefix}.{other}" if prefix else other

    def has(run, key: str) -> bool:
        value = run.metrics.get(key)
        return isinstance(value, int | float) and value == value

    runs = list(runs)
    return other if not any(has(r, name) for r in runs) and any(has(r, other) for r in runs) else name
