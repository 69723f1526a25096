"""The variant registry: simflow's own variants (variants.toml, a family each) and a user's (folders of
NAME.cu.j2 + NAME.toml), by name. `get_variant` and `render` are how the rest of simflow reaches a variant.
"""

from __future__ import annotations

import tomllib
from functools import lru_cache
from pathlib import Path

from .. import resources, settings
from ..errors import UserError
from . import families, tensor_cores, transforms, wgmma  # noqa: F401 (importing them registers their families)
from .problems import Problem
from .user_variants import load_user_variant
from .values import Params
from .variant_types import FAMILIES, Kernel, Launch, Param, Variant, show_value, template_environment

__all__ = ["VARIANTS", "Kernel", "Launch", "Param", "Variant", "get_variant", "parse_param_args", "render",
           "show_value", "template_environment"]




VARIANTS_ENV = "SIMFLOW_VARIANTS"  # folders of a user's variants (NAME.cu.j2 + NAME.toml), joined by ':'


def variant_dirs() -> list[Path]:
    """Where variants come from: the user's folders (SIMFLOW_VARIANTS, --variants), then simflow's own."""
    users = [Path(p) for p in settings.current().variants]
    return [*users, resources.templates_dir()]


def load_variants(folders: list[Path]) -> dict[str, Variant]:
    """simflow's own variants (the last folder's variants.toml: [variants.NAME] tables of a family) and a
    user's (each NAME.toml in the other folders, see simflow.kernels.user_variants). A name that is taken, an
    unknown family or parameter, a missing template: refused, naming the file."""
    *users, own = folders
    path = own / "variants.toml"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, FileNotFoundError) as exc:
        raise UserError(f"{path}: simflow's variant table cannot be read: {exc}") from None
    params = {key: _param(path, key, spec) for key, spec in data.get("params", {}).items()}
    variants: dict[str, Variant] = {}
    for name, spec in data.get("variants", {}).items():
        variants[name] = FAMILIES[spec["family"]](name, spec["template"], spec.get("summary", ""),
                                                  tuple(params[p] for p in spec.get("params", [])),
                                                  dict(spec.get("fixed", {})),
                                                  test_layer=dict(spec.get("test_layer", {})),
                                                  starts={precision: tuple(dict(given) for given in starts)
                                                          for precision, starts in spec.get("starts", {}).items()})
    for folder in users:
        if not folder.is_dir():
            raise UserError(f"no variant folder {folder} (named in {VARIANTS_ENV} or --variants)")
        tomls = sorted(folder.glob("*.toml"))
        if not tomls:
            raise UserError(f"{folder} has no NAME.toml beside a NAME.cu.j2 (docs/variants-of-your-own.md)")
        for toml_path in tomls:
            if toml_path.stem in variants:
                where = getattr(variants[toml_path.stem], "declared_in", "") or "simflow's own"
                raise UserError(f"{toml_path}: variant {toml_path.stem!r} exists already ({where}); rename the file")
            variants[toml_path.stem] = load_user_variant(toml_path, params, FAMILIES)
    return variants


def use_variant_dirs(folders: list[str]) -> None:
    """Add folders of a user's variants for this process and the ones it starts (sweep workers)."""
    known = settings.current().variants
    settings.with_(variants=tuple(dict.fromkeys([*(str(Path(f).resolve()) for f in folders), *known])))
    reload_variants()


@lru_cache(maxsize=64)
def rendered(variant: str, params: Params, problem: Problem) -> Kernel:
    """A job's kernel, rendered once however often it is asked for; forgotten when the variants are read again."""
    return get_variant(variant).render(problem, dict(params))


def reload_variants() -> None:
    """Read the variants again (after SIMFLOW_VARIANTS changed); VARIANTS is updated in place."""
    fresh = load_variants(variant_dirs())
    template_environment.cache_clear()
    rendered.cache_clear()
    VARIANTS.clear()
    VARIANTS.update(fresh)
    if "VARIANT_ERROR" in globals():
        VARIANT_ERROR.clear()


def _param(path: Path, key: str, spec: dict) -> Param:
    choices = tuple(spec.get("choices", ()))
    if not choices or spec.get("default") not in choices:
        raise UserError(f"{path}: [params.{key}] needs choices and a default among them")
    return Param(spec.get("name", key), choices, spec["default"], spec.get("help", ""), bool(spec.get("host", False)))


VARIANTS: dict[str, Variant] = {}
VARIANT_ERROR: list[UserError] = []  # why the user's variants could not be read (simflow's own are there)
try:
    reload_variants()
except UserError as exc:  # a command names it (check_user_variants), importing simflow does not fail
    VARIANT_ERROR.append(exc)
    VARIANTS.update(load_variants(variant_dirs()[-1:]))


def check_user_variants() -> None:
    if VARIANT_ERROR:
        raise VARIANT_ERROR[0]


def get_variant(name: str) -> Variant:
    if name not in VARIANTS:
        raise UserError(f"unknown variant {name!r}; valid variants: {', '.join(VARIANTS)}")
    return VARIANTS[name]


def render(variant: str, problem: Problem, params: dict | None = None) -> Kernel:
    return get_variant(variant).render(problem, params)


def parse_param_args(pairs: list[str] | None) -> dict:
    """['tile=16', 'unroll=both'] -> {'tile': '16', 'unroll': 'both'} (values parsed by the variant)."""
    out = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise UserError(f"--param takes NAME=VALUE, got {pair!r}")
        name, value = pair.split("=", 1)
        out[name.strip()] = value.strip()
    return out
