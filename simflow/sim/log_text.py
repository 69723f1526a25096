"""A simulator log as text: opening it (plain or gzip, damaged bytes read as such), the lines that can matter
found by a regex over blocks of the file (the parser's fast path), the options it echoes, and named logs (files or
standard input). simflow.sim.log reads what these lines say."""

from __future__ import annotations

import functools
import gzip
import io
import re
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

_FAIL_FAMILY = "Total_core_cache_fail_stats_breakdown["


EXIT_LINE = "GPGPU-Sim: *** exit detected ***"


LIMIT_LINE = "break due to reaching the maximum cycles (or instructions)"


def _open_text(path: Path) -> io.TextIOBase:
    with open(path, "rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", errors="replace")
    return open(path, errors="replace")


class _Damage:
    """Where a file could not be read on, and why (set by _readable_lines)."""

    error: str = ""


def _readable_lines(handle, damage: _Damage) -> Iterator[str]:
    """The lines of `handle` until it ends or cannot be read on (a cut or corrupted gzip stream,
    garbage after it, an I/O error): what came before is kept, the error is noted."""
    while True:
        try:
            line = handle.readline()
        except (EOFError, OSError, zlib.error, ValueError) as exc:
            damage.error = f"{type(exc).__name__}: {exc}"
            return
        if not line:
            return
        yield line


@contextmanager
def named_logs(names: Iterable[str | Path]) -> Iterator[list[tuple[str, Path]]]:
    """Each log as (its name, a path to read): '-' is standard input (plain or gzip), copied once into a temporary
    file that is gone afterwards."""
    import shutil
    import sys
    import tempfile

    names = [str(n) for n in names]
    if names.count("-") > 1:
        from ..errors import UserError

        raise UserError("standard input ('-') can be read once: name it once among the logs")
    if "-" not in names:
        yield [(n, Path(n)) for n in names]
        return
    with tempfile.TemporaryDirectory(prefix="simflow-stdin-") as tmp:
        copy = Path(tmp) / "stdin.log"
        with open(copy, "wb") as out:
            shutil.copyfileobj(sys.stdin.buffer, out)
        yield [(n, copy if n == "-" else Path(n)) for n in names]


def read_options(path: str | Path) -> dict[str, str]:
    """The option dump at the top of a log (name -> value as printed), without reading the rest of the file."""
    options: dict[str, str] = {}
    damage = _Damage()
    try:
        with _open_text(Path(path)) as handle:
            for count, raw in enumerate(_readable_lines(handle, damage)):
                line = raw.strip()
                if line.startswith("-"):
                    name, _, rest = line[1:].partition(" ")
                    if name and rest.strip():
                        options[name] = rest.split("#", 1)[0].strip()
                elif count > 20000 or (options and line.startswith(("GPGPU-Sim PTX", "GPGPU-Sim uArch", "kernel_"))):
                    break
    except OSError:
        return {}
    return options


PIECE = 1 << 13  # bytes read at a time from a gzip stream: a damaged one keeps what it gave up to the damage


BLOCK = 1 << 20  # bytes parsed at a time


# What a line the parser's state acts on begins with (after spaces): every other line of a log (the bulk of a
# stats block: per-core, per-bank and DRAM lines) changes nothing, so read_blocks skips it in C. An option
# ('-name value') counts only before the first stats block, a line of dashes never; a GPGPU-Sim line only when
# it holds what _Reader.line looks for in one.
_STARTS = {"total_dl1_": "", "Stall:": "", "kernel_name": "", "simflow:": "", _FAIL_FAMILY: "",
           "GPGPU-Sim": "(?=[^\\n]*?(?:" + "|".join(re.escape(word.removeprefix("GPGPU-Sim")) for word in (
               "LIVENESS - uArch: inst", EXIT_LINE, LIMIT_LINE, "GPGPU-Sim PTX: Kernel '", "pushing kernel '",
               "CTA/core = ")) + "))"}  # each after the 'GPGPU-Sim' the line begins with


_OPTION = {"-": r"(?!(?:-|[^\S\n])*\n)"}


_KEYS = ("gpgpu_simulation_rate", "gpgpu_simulation_time", "kernel_launch_uid")  # and PRINTED's, each before '='


_BANNER_WORDS = "Simulator Version"  # anywhere in a line


def _branches(words: dict[str, str]) -> str:
    """A regex for any of `words`, each followed by its own regex, factored by shared beginnings so that the
    engine tries few branches a line."""
    trie: dict = {}
    for word, then in words.items():
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = then

    def emit(node: dict) -> str:
        branches = [re.escape(char) + emit(child) for char, child in sorted(node.items()) if char]
        if "" in node:
            branches.append(node[""])
        return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"

    return emit(trie)


@functools.cache
def _wanted(keys: frozenset[str], options: bool) -> re.Pattern:
    words = {**{key: r"[^\S\n]*+=" for key in keys}, **_STARTS, **(_OPTION if options else {})}
    return re.compile(r"\n[^\S\n]*+" + _branches(words))

