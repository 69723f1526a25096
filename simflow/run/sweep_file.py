"""Sweep files: a TOML file of variants x parameter grids x problems x backends x simulator configs.

    name = "tiles"
    backends = ["gpgpusim"]            # gpu, gpgpusim, gpu-ncu
    configs = ["SM7_QV100"]            # simulator configs (names or overlay paths)
    problems = ["batch3x3", {preset = "fmnist-conv1", batch = 1}]   # presets, shapes "B,C,M,H,W,K[,pad[,stride]]",
                                                                    # or tables {preset|shape, batch, name}
    suite = "resnet50"                 # and/or every layer of a suite (simflow problems --suite NAME)
    sample = "1,2,3"                   # optional: estimate each layer from sampled simulation (simflow sim --sample)
    seed = 0
    [[variants]]
    name = "shared"
    tile = [8, 16, 32]                 # a list is a grid axis, a single value is fixed
    unroll = ["none", "both"]

The file is checked whole before anything runs (a mistake names its line and the valid
choices), then expanded into de-duplicated jobs, each knowing the line of its [[variants]] table.
"""

from __future__ import annotations

import itertools
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError
from ..job import RUN_OPTIONS, Job
from ..kernels.problems import DEFAULT_PROBLEM, PRESETS, Problem, get_problem, suite
from ..kernels.variants import VARIANTS, get_variant
from ..registry import backend_class, backend_names

TOP_KEYS = {"name": "a label", "backends": "list", "configs": "list", "problems": "list", "suite": "suite name(s)",
            "batch": "int", **{option.flag: option.kind.__name__ for option in RUN_OPTIONS},
            "variants": "[[variants]] tables", "dask": "[dask] table", "sample": "wave counts \"W1,W2,W3\""}
DASK_KEYS = ("cluster", "cores", "memory", "processes", "queue", "account", "walltime", "jobs", "job_extra_directives",
             "interface", "log_directory")


@dataclass
class Sweep:
    name: str
    jobs: list[Job]
    duplicates: int = 0
    dask: dict = field(default_factory=dict)
    path: str = ""
    lines: dict = field(default_factory=dict)  # job key -> line of its [[variants]] table in the file
    sample: str = ""  # a sample spec (simflow.sim.sampling): each job's layer is estimated from sampled simulation

    def where(self, job: Job) -> str:
        return f"{self.path}:{self.lines.get(job.key, 1)}"


def _line(text: str, key: str, start: int = 0) -> int:
    """1-based line where `key = ...` is set (from line `start`), for error messages."""
    lines = text.splitlines()
    pattern = re.compile(rf'^\s*"?{re.escape(key)}"?\s*=')
    for i in range(start, len(lines)):
        if pattern.match(lines[i]):
            return i + 1
    return start + 1


def _variant_blocks(text: str) -> list[int]:
    return [i for i, line in enumerate(text.splitlines()) if re.match(r"^\s*\[\[\s*variants\s*\]\]", line)]


def _as_list(value) -> list:
    return value if isinstance(value, list) else [value]


def load_sweep(path: str | Path) -> Sweep:
    """Parse, check and expand a sweep file."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"no sweep file {path}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text (byte {exc.start}); save the sweep file as UTF-8") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: not valid TOML: {exc}") from None
    try:
        return _expand(path, text, data)
    except (TypeError, AttributeError, ValueError) as exc:  # a value of a type no key takes
        raise UserError(f"{path}: a value has the wrong type ({type(exc).__name__}: {exc}); see the example at "
                        "the top of 'simflow sweep --help' and docs/results.md 'Sweeps'") from None


def _expand(path: Path, text: str, data: dict) -> Sweep:

    def fail(line: int, message: str) -> UserError:
        return UserError(f"{path}:{line}: {message}")

    for key in data:
        if key not in TOP_KEYS:
            raise fail(_line(text, key), f"unknown key {key!r}; valid keys: {', '.join(TOP_KEYS)}")
    backends = _as_list(data.get("backends", ["gpgpusim"]))
    for b in backends:
        if b not in backend_names():
            raise fail(_line(text, "backends"), f"unknown backend {b!r}; valid backends: {', '.join(backend_names())}")
    configs = _as_list(data.get("configs", [""]))  # none named: each backend's own default (Job.make fills it in)
    if any(backend_class(b).takes_config for b in backends):
        from ..sim.config import load_config

        for c in filter(None, configs):
            try:
                load_config(c if os.path.isabs(c) or not c.endswith(".toml") else str(path.parent / c))
            except UserError as exc:
                raise fail(_line(text, "configs"), str(exc)) from None
    problems: list[Problem] = []
    for name in _as_list(data.get("suite", [])):
        try:
            problems += [p if data.get("batch") is None else p.with_batch(data["batch"]) for p in suite(name)]
        except UserError as exc:
            raise fail(_line(text, "suite"), str(exc)) from None
    for p in _as_list(data.get("problems", [] if "suite" in data else [DEFAULT_PROBLEM])):
        try:
            if isinstance(p, dict):  # {preset = "fmnist-conv1", batch = 1} or {shape = "...", name = "..."}
                unknown = set(p) - {"preset", "shape", "batch", "name"}
                if unknown or ("preset" in p) == ("shape" in p):
                    raise UserError(f"a problem table takes preset or shape, and optionally batch and name; got {p}")
                problem = get_problem(p.get("preset") or p.get("name"), shape=p.get("shape"),
                                      batch=p.get("batch", data.get("batch")))
                problems.append(problem)
                continue
            if not isinstance(p, str):
                raise UserError(f"a problem is a preset name, a shape string or a table, got {p!r}")
            shape = p if "," in p else None
            problems.append(get_problem(None if shape else p, shape=shape, batch=data.get("batch")))
        except UserError as exc:
            raise fail(_line(text, "problems"), f"{exc} (presets: {', '.join(PRESETS)})") from None
    options = {option.field: option.check(data[option.flag], f"{path}:{_line(text, option.flag)}: ")
               for option in RUN_OPTIONS if option.flag in data}
    sample = ""
    if "sample" in data:
        from ..sim.sampling import SampleSpec

        if data["sample"] is not True and not isinstance(data["sample"], str):
            raise fail(_line(text, "sample"), 'sample takes "W1,W2,W3" waves or true (each variant\'s own), got '
                       f'{data["sample"]!r}')
        try:
            sample = str(SampleSpec.parse(None if data["sample"] is True else data["sample"]))
        except UserError as exc:
            raise fail(_line(text, "sample"), str(exc)) from None
        if not all(backend_class(b).sampling for b in backends):
            able = ", ".join(f'"{n}"' for n in backend_names() if backend_class(n).sampling)
            raise fail(_line(text, "sample"), f"sample is for the simulator; set backends = [{able}] "
                                              f"(got {backends})")
    dask = data.get("dask", {})
    for key in dask:
        if key not in DASK_KEYS:
            raise fail(_line(text, key), f"unknown [dask] key {key!r}; valid keys: {', '.join(DASK_KEYS)}")

    entries = data.get("variants")
    if not entries or not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise fail(1, f"no [[variants]] table; add one per variant, e.g. [[variants]] name = \"shared\" "
                      f"(variants: {', '.join(VARIANTS)})")
    starts = _variant_blocks(text)
    jobs: list[Job] = []
    seen: set = set()
    lines: dict = {}
    duplicates = 0
    for index, entry in enumerate(entries):
        start = starts[index] if index < len(starts) else 0
        name = entry.get("name")
        if name not in VARIANTS:
            raise fail(_line(text, "name", start), f"unknown variant {name!r}; valid variants: {', '.join(VARIANTS)}")
        variant = get_variant(name)
        axes = {k: _as_list(v) for k, v in entry.items() if k != "name"}
        for key, values in axes.items():
            if key not in {p.name for p in variant.params}:
                raise fail(_line(text, key, start), f"variant {name} has no parameter {key!r}; valid parameters: "
                                                    f"{', '.join(p.name for p in variant.params)}")
            for value in values:
                try:
                    variant.resolve({key: value})
                except UserError as exc:
                    raise fail(_line(text, key, start), str(exc)) from None
        keys = list(axes)
        for combo in itertools.product(*axes.values()):
            params = dict(zip(keys, combo, strict=True))
            for problem, backend in itertools.product(problems, backends):
                for config in configs if backend_class(backend).takes_config else [""]:
                    if config.endswith(".toml") and not os.path.isabs(config):
                        config = str(path.parent / config)
                    job = Job.make(name, params, problem, backend, config=config, **options)
                    if job.key in seen:
                        duplicates += 1
                        continue
                    seen.add(job.key)
                    lines[job.key] = start + 1
                    jobs.append(job)
    if not jobs:
        empty = [k for k, v in (("problems", problems), ("backends", backends)) if not v]
        empty += [f"{e.get('name')}.{k}" for e in entries for k, v in e.items() if v == []]
        raise UserError(f"{path}: the sweep expands to no job ({', '.join(empty) or 'nothing to combine'} "
                        "is an empty list)")
    return Sweep(name=str(data.get("name", path.stem)), jobs=jobs, duplicates=duplicates, dask=dask,
                 path=str(path), lines=lines, sample=sample)
