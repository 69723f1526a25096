"""What `simflow tune` tries first: per precision, the configurations that won the known layers (STARTS), the
precisions a configuration may compete in (ADMITS), and the order of the first trials (starts)."""

from __future__ import annotations

import json

from ..kernels.variants import VARIANTS, get_variant

# A precision is the least a configuration may compute in: a float32 kernel meets TF32's and fp16's tolerance too,
# so it competes there (cuDNN, allowed TF32, may pick an FMA kernel as well). On a first layer of one input channel
# a direct float32 kernel runs 9x faster than any tensor-core GEMM (fmnist-conv1, H100, PERFORMANCE.md session 22).
ADMITS = {"float32": ("float32",), "tf32": ("tf32", "float32"), "float16": ("float16", "tf32", "float32"),
          "bfloat16": ("bfloat16", "tf32", "float32")}  # bf16 has fp16's bits but float's range: fp16 does not admit


# What every tune tries first (Optuna's strategies), before its optimiser chooses: these configurations, then each
# variant's defaults. A layer never seen still starts from what won the known ones, so a short budget finds at least
# that (and every variant, FFT and Winograd included, is tried once); the suite benchmark times this list. Each
# variant declares its own (variants.toml's starts.PRECISION, with where each comes from).
def _declared() -> dict[str, list[tuple[str, dict]]]:
    """precision -> (variant, params), the rest of each variant's parameters at their defaults: simflow's own
    variants' starts, in variants.toml's order."""
    out: dict[str, list[tuple[str, dict]]] = {}
    for name, variant in VARIANTS.items():
        for precision, given in variant.starts.items():
            out.setdefault(precision, []).extend((name, dict(params)) for params in given)
    return out


STARTS = _declared()


# bf16: the fp16 winners' tiles and pipelines in bf16, half tensors (io=float16) as bf16 ones (io=bfloat16), not yet
# measured in bf16 (a start only orders the first trials; the search still covers the whole space). Those past a
# limit (a float x tile where half x fitted) are left out.
def _bf16_starts() -> list[tuple[str, dict]]:
    from ..errors import LimitError
    from ..kernels.problems import get_problem

    one = get_problem("resnet50-1x1-64-64-56")  # the NCHW kernels' 16-bit tensors: 1x1 layers
    layers = {"wgmma_nchw": one, "mma_nchw": one}
    out: dict[str, tuple[str, dict]] = {}
    for variant, params in STARTS["float16"]:
        if variant not in ("mma_nchw", "mma_nhwc", "wgmma_nhwc", "wgmma_nchw"):
            continue
        given = {**params, "precision": "bf16", **({"io": "bfloat16"} if params.get("io") == "float16" else {})}
        family = get_variant(variant)
        try:  # the family's limits, without a render
            family.check(layers.get(variant, get_problem("resnet50-3x3-64-64-56")), family.resolve(given))
        except LimitError:
            continue
        out.setdefault(json.dumps([variant, given], sort_keys=True), (variant, given))
    return list(out.values())


STARTS["bfloat16"] = _bf16_starts()


def _key(variant: str, params: dict) -> tuple[str, str]:
    return variant, json.dumps(params, sort_keys=True, default=str)


def starts(variants: list[str], grid: list[tuple[str, dict]], precision: str) -> list[tuple[str, dict]]:
    """The configurations a tune tries first, each once, only what the space holds: every variant once (its first
    STARTS entry for the precision, else its defaults, else its first configuration in the space), then the rest
    of STARTS, then the defaults of variants that started from a STARTS entry. So a short budget tries every
    method (FFT on a 5x5 layer) before it refines one."""
    in_grid = {_key(v, p): (v, p) for v, p in grid}

    def full(variant: str, given: dict) -> tuple | None:
        resolved = get_variant(variant).resolve(given)
        key = _key(variant, {p.name: resolved[p.name] for p in get_variant(variant).params if not p.host})
        return key if key in in_grid else None

    listed = [key for admitted in ADMITS[precision] for variant, given in STARTS.get(admitted, [])
              if variant in variants if (key := full(variant, given))]
    defaults = {variant: full(variant, {}) or next((_key(v, p) for v, p in grid if v == variant), None)
                for variant in variants}
    first = {}
    for key in listed:
        first.setdefault(key[0], key)
    order = [*first.values(), *(key for variant, key in defaults.items() if variant not in first and key),
             *listed, *(key for key in defaults.values() if key)]
    return [in_grid[key] for key in dict.fromkeys(order)]

