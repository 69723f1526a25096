"""simflow's GPGPU-Sim configs: overlays (a base config + option overrides) merged at run time.

An overlay is a small TOML file (gpgpusim_configs/<NAME>.toml, or any path a user gives):

    base = "SM7_QV100"                 # a folder of $GPGPUSIM_ROOT/configs/tested-cfgs
    description = "one line"
    [options]                          # simulator options without the leading dash
    gpgpu_n_clusters = 8

The base is read from the user's simulator build (simflow.sim.simulator finds it), never copied into simflow. The merged
`gpgpusim.config` (base options in order, overridden values replaced in place, new options
appended) and the base folder's companion files (interconnect, power model) go into the run
folder. The simulator reads its config as a stream of `-option value` tokens: `#` starts a
comment, a double-quoted value may span lines, and the last occurrence of an option wins.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError
from ..resources import configs_dir
from ..results.folders import replace_with, write_text
from .simulator import find_simulator

DEFAULT_CONFIG = "SM7_QV100"

@dataclass(frozen=True)
class SimConfig:
    """A named overlay: which tested config it starts from and what it changes."""

    name: str
    base: str
    description: str = ""
    options: dict[str, str] = field(default_factory=dict)
    path: Path | None = None

    def as_dict(self) -> dict:
        return {"name": self.name, "base": self.base, "description": self.description, "options": dict(self.options)}


def config_key(config: SimConfig) -> str:
    """What makes two runs' configs the same before they run: base and options (not name or wording)."""
    text = json.dumps({"base": config.base, "options": config.options}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _option_text(value) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int | float | str):
        text = str(value)
        return f'"{text}"' if any(c.isspace() for c in text) and not text.startswith('"') else text
    raise TypeError(type(value).__name__)


def parse_overlay(text: str, name: str, path: Path | None = None) -> SimConfig:
    """Read an overlay's TOML text; every mistake names the key and what is valid."""
    where = str(path) if path else name
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"config {where}: not valid TOML: {exc}") from None
    unknown = sorted(set(data) - {"base", "description", "options"})
    if unknown:
        raise UserError(f"config {where}: unknown key(s) {', '.join(unknown)}; valid keys: base, description, options")
    base = data.get("base")
    if not isinstance(base, str) or not base:
        raise UserError(f"config {where}: 'base' must name a tested config of the simulator, e.g. base = \"SM7_QV100\"")
    options = data.get("options", {})
    if not isinstance(options, dict):
        raise UserError(f"config {where}: [options] must be a table of option = value")
    parsed = {}
    for key, value in options.items():
        if key.startswith("-"):
            raise UserError(f"config {where}: write option {key!r} without the leading dash")
        try:
            parsed[key] = _option_text(value)
        except TypeError:
            raise UserError(f"config {where}: option {key!r} must be a number, string or boolean") from None
    return SimConfig(name=name, base=base, description=str(data.get("description", "")), options=parsed, path=path)


def config_names() -> list[str]:
    return sorted(p.stem for p in configs_dir().glob("*.toml"))


def load_config(name_or_path: str) -> SimConfig:
    """A config by name (gpgpusim_configs/NAME.toml) or a user's overlay file by path. The file is read each time
    and parsed once for its text (_parsed): a run asks for its config several times (its identity, its folder, its
    samples' cut GPU), and an edited file is parsed again. The SimConfig is shared: never change its options."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or os.sep in name_or_path:
        if not path.is_file():
            raise UserError(f"no config file {path}")
        return _parsed(path.read_text(), path.stem, path)
    candidate = configs_dir() / f"{name_or_path}.toml"
    if not candidate.is_file():
        raise UserError(f"unknown simulator config {name_or_path!r}; valid configs: {', '.join(config_names())} "
                        "(or the path of your own overlay .toml)")
    return _parsed(candidate.read_text(), name_or_path, candidate)


_parsed = functools.lru_cache(maxsize=64)(parse_overlay)


def tokenize(text: str) -> list[str]:
    """Split a config the way the simulator does: '#' comments dropped, quoted values kept whole."""
    stream = " ".join(line.split("#", 1)[0] for line in text.splitlines())
    tokens: list[str] = []
    words = iter(stream.split())
    for word in words:
        if word.startswith('"') and not (len(word) > 1 and word.endswith('"')):
            parts = [word]
            for more in words:
                parts.append(more)
                if more.endswith('"'):
                    break
            word = " ".join(parts)
        tokens.append(word)
    return tokens


def parse_options(text: str) -> list[tuple[str, str]]:
    """Ordered (option, value) pairs; an option followed directly by another option is a flag (value '')."""
    tokens = tokenize(text)
    pairs: list[tuple[str, str]] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if not token.startswith("-"):
            raise UserError(f"config: expected an option (starting with '-') but found {token!r}")
        value = tokens[i + 1] if i + 1 < len(tokens) and not _is_option(tokens[i + 1]) else ""
        pairs.append((token[1:], value))
        i += 2 if value else 1
    return pairs


def _is_option(token: str) -> bool:
    return token.startswith("-") and len(token) > 1 and not token[1].isdigit() and token[1] != "."


def merge(base_text: str, overrides: dict[str, str]) -> tuple[list[tuple[str, str]], list[str]]:
    """Base options with overrides applied (in place where the base has the option, else appended).
    Returns the merged pairs and the names that were new to the base."""
    pairs = parse_options(base_text)
    last = {name: i for i, (name, _) in enumerate(pairs)}
    merged = [(name, value) for i, (name, value) in enumerate(pairs) if last[name] == i]  # last occurrence wins
    index = {name: i for i, (name, _) in enumerate(merged)}
    added = []
    for name, value in overrides.items():
        if name in index:
            merged[index[name]] = (name, value)
        else:
            merged.append((name, value))
            added.append(name)
    return merged, added


# GPGPU-Sim's IPOLY address hash (gpgpu_memory_partition_indexing 2) maps addresses onto 16, 32 or 64 L2 slices only;
# its XOR hash (1, BITWISE_PERMUTATION) onto any power of two of memory channels.
IPOLY, XOR = "2", "1"
IPOLY_SLICES = (16, 32, 64)
MIN_CUT_SMS = 8  # a cut GPU keeps at least this many SMs (SM7_QV100_small's): fewer distort the interconnect more


def _int_option(options: dict[str, str], name: str, default: int) -> int:
    try:
        return int(options.get(name, default))
    except ValueError:
        raise UserError(f"config: -{name} {options[name]!r} is not a whole number") from None


def l2_bytes(options: dict[str, str]) -> int:
    """The L2's capacity in a merged config: a memory sub-partition's slice (-gpgpu_cache:dl2, sets:line:ways after an
    optional sector-or-line letter) times the sub-partitions (channels x per channel); 0 where it names none."""
    first = options.get("gpgpu_cache:dl2", "").split(",")[0].split(":")
    numbers = first[1:] if first and first[0].isalpha() else first
    try:
        sets, line, ways = (int(v) for v in numbers[:3])
    except ValueError:
        return 0
    return (sets * line * ways * _int_option(options, "gpgpu_n_mem", 0)
            * _int_option(options, "gpgpu_n_sub_partition_per_mchannel", 1))


def _cut_hash(options: dict[str, str], k: int) -> str | None:
    """The address hash a GPU cut by k uses: its own, or XOR where IPOLY cannot take the slices left (None: the
    cut is not possible)."""
    channels = _int_option(options, "gpgpu_n_mem", 1) // k
    slices = channels * _int_option(options, "gpgpu_n_sub_partition_per_mchannel", 1)
    indexing = options.get("gpgpu_memory_partition_indexing", "0")
    if indexing != IPOLY or slices in IPOLY_SLICES:
        return indexing
    return XOR if channels & (channels - 1) == 0 else None


def scalings(options: dict[str, str], same_hash: bool = False) -> list[int]:
    """The factors k (1 first) by which a config's GPU can be cut to 1/k of its SMs and of its memory channels,
    both exactly, so that each SM keeps its share of the L2, DRAM and interconnect; the cut keeps MIN_CUT_SMS
    SMs and an address hash that takes the slices left (with `same_hash`, the config's own hash: no XOR cut).
    `options`: the merged config (parse_options)."""
    clusters = _int_option(options, "gpgpu_n_clusters", 1)
    channels = _int_option(options, "gpgpu_n_mem", 1)
    per_cluster = _int_option(options, "gpgpu_n_cores_per_cluster", 1)
    out = [1]
    for k in range(2, min(clusters, channels) + 1):
        if clusters % k or channels % k or clusters // k * per_cluster < MIN_CUT_SMS:
            continue
        hashing = _cut_hash(options, k)
        if hashing is not None and (not same_hash or hashing == options.get("gpgpu_memory_partition_indexing", "0")):
            out.append(k)
    return out


def scaled(config: SimConfig, options: dict[str, str], k: int) -> SimConfig:
    """`config` cut to 1/k of its SMs (clusters) and memory channels; `options` is its merged form. Where the
    simulator's IPOLY hash cannot take the L2 slices left, the cut hashes addresses onto channels by XOR."""
    if k not in scalings(options):
        raise UserError(f"config {config.name} cannot be cut to 1/{k} of its SMs and memory channels exactly; "
                        f"it can by {', '.join(map(str, scalings(options)))}")
    clusters = _int_option(options, "gpgpu_n_clusters", 1) // k
    channels = _int_option(options, "gpgpu_n_mem", 1) // k
    sms = clusters * _int_option(options, "gpgpu_n_cores_per_cluster", 1)
    cut = {"gpgpu_n_clusters": str(clusters), "gpgpu_n_mem": str(channels)}
    hashing = ""
    if (indexing := _cut_hash(options, k)) != options.get("gpgpu_memory_partition_indexing", "0"):
        cut["gpgpu_memory_partition_indexing"] = indexing
        hashing = ", addresses hashed onto channels by XOR (IPOLY takes 16 L2 slices or more)"
    return SimConfig(name=f"{config.name}-{sms}sms", base=config.base,
                     description=f"{config.name} cut to 1/{k}: {sms} SMs, {channels} memory channels{hashing} "
                                 "(sampled simulation: each SM keeps its share of the memory system)",
                     options={**config.options, **cut})


def first_ctas(config: SimConfig, n: int, before: int = 0) -> SimConfig:
    """`config` stopped once the first `n` CTAs of a launch have run to their end, `before` CTAs of earlier launches
    (run whole) issued first: the simulator issues no CTA past the (before + n)-th over the process (gpgpu_max_cta)
    and ends when n of one launch have finished (gpgpu_max_completed_cta, counted per launch), printing the kernel's
    stats over exactly those CTAs, then its break line. Either option alone is not enough: with the first only, the
    fork (667834cf) spins after the last CTA without ending; with the second only, CTAs past the n-th are in flight.
    So every earlier launch must make fewer than n CTAs, or it would be the one stopped."""
    after = f"-after{before}" if before else ""
    return SimConfig(name=f"{config.name}-first{n}ctas{after}", base=config.base,
                     description=f"{config.name}, its first {n} CTAs of a launch only"
                                 + (f", after {before} of earlier launches" if before else "")
                                 + " (sampled simulation inside a launch)",
                     options={**config.options, "gpgpu_max_cta": str(before + n), "gpgpu_max_completed_cta": str(n)})


def cta_limit(options: dict[str, str]) -> tuple[int, int]:
    """What a merged config (parse_options) set by first_ctas stops after: (the CTAs issued over the process, the
    CTAs of the last launch among them); (0, 0) where it sets no such limit."""
    issued, completed = (_int_option(options, name, 0) for name in ("gpgpu_max_cta", "gpgpu_max_completed_cta"))
    return (issued, completed) if issued >= completed > 0 else (0, 0)


def overlay_text(config: SimConfig) -> str:
    """An overlay's TOML text (parse_overlay reads it back)."""
    lines = [f"base = {json.dumps(config.base)}", f"description = {json.dumps(config.description)}", "", "[options]"]
    lines += [f"{_key(k)} = {json.dumps(v)}" for k, v in config.options.items()]
    return "\n".join(lines) + "\n"


def _key(name: str) -> str:
    """An option name as a TOML key: bare where TOML allows, else quoted (gpgpu_cache:dl2)."""
    return name if name.replace("_", "").replace("-", "").isalnum() and name.isascii() else json.dumps(name)


def render_config(pairs: list[tuple[str, str]], header: list[str]) -> str:
    lines = [f"# {h}" for h in header]
    lines += [f"-{name} {value}".rstrip() for name, value in pairs]
    return "\n".join(lines) + "\n"


def base_dir(base: str, root: Path) -> Path:
    folder = root / "configs" / "tested-cfgs" / base
    if not (folder / "gpgpusim.config").is_file():
        have = sorted(p.name for p in (root / "configs" / "tested-cfgs").glob("*") if p.is_dir())
        raise UserError(f"the simulator at {root} has no tested config {base!r}; it has: {', '.join(have) or 'none'}")
    return folder


# What simflow adds to every run's config so that the log carries periodic progress (see
# simflow.sim.log.Sample): every gpgpu_runtime_stat cycles, the LIVENESS trace line (cycle,
# instructions, occupancy at that cycle) and the runtime L1 stat (flag 0x10: L1D lookups and misses).
# They print; they do not change what is simulated. An overlay that sets one of them wins.
INSTRUMENTATION = {"trace_enabled": "1", "trace_components": "LIVENESS", "liveness_message_freq": "0"}
L1MISS_FLAG = 0x10
DEFAULT_SAMPLE_CYCLES = 500


def instrument(pairs: list[tuple[str, str]], overlay: dict[str, str]) -> dict[str, str]:
    """The instrumentation options for a merged config: the base's sample interval is kept."""
    added = {k: v for k, v in INSTRUMENTATION.items() if k not in overlay}
    if "gpgpu_runtime_stat" not in overlay:
        current = dict(pairs).get("gpgpu_runtime_stat", "")
        freq, _, flag = current.partition(":")
        try:
            flag_value = int(flag, 16) if flag else 0
            freq = str(int(freq)) if freq else str(DEFAULT_SAMPLE_CYCLES)
        except ValueError:
            freq, flag_value = str(DEFAULT_SAMPLE_CYCLES), 0
        added["gpgpu_runtime_stat"] = f"{freq}:{flag_value | L1MISS_FLAG:x}"
    return added


@dataclass(frozen=True)
class WrittenConfig:
    name: str
    base: str
    base_path: Path
    hash: str  # sha256 of the merged config and the companion files, as the simulator reads them
    added: tuple[str, ...]
    instrumentation: dict[str, str] = field(default_factory=dict)


def write_run_config(config: SimConfig, folder: Path, root: Path | None = None) -> WrittenConfig:
    """Merge `config` onto its base from the installed simulator and write it into the run folder."""
    source = base_dir(config.base, root or find_simulator().root)
    base_text = (source / "gpgpusim.config").read_text(errors="replace")
    pairs, added = merge(base_text, config.options)
    header = [f"simflow config {config.name}: base {config.base}",
              f"base sha256 {hashlib.sha256(base_text.encode()).hexdigest()}"]
    header += [f"override -{k} {v}" + ("  (not in the base)" if k in added else "") for k, v in config.options.items()]
    modelled = render_config(pairs, header)
    # what is simulated, wherever the simulator is installed (a container's /opt/gpgpu-sim hashes as a native
    # build elsewhere); the instrumentation only prints
    digest = hashlib.sha256(modelled.encode())
    extra = instrument(pairs, config.options)
    pairs, _ = merge(modelled, extra)
    header[0] += f" ({source / 'gpgpusim.config'})"
    text = render_config(pairs, header + [f"simflow instrumentation -{k} {v}" for k, v in extra.items()])
    for companion in sorted(source.iterdir()):
        if companion.is_file() and companion.name != "gpgpusim.config":
            replace_with(folder / companion.name, lambda tmp, c=companion: shutil.copyfile(c, tmp))
            digest.update(companion.name.encode() + companion.read_bytes())
    write_text(folder / "gpgpusim.config", text)
    return WrittenConfig(config.name, config.base, source, digest.hexdigest()[:16], tuple(added), extra)
