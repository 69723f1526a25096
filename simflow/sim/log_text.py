"""A simulator log as text: opening it (plain or gzip, damaged bytes read as such), the lines that can matter
found by a regex over blocks of the file (the parser's fast path), a value as a number, the options it echoes, and
named logs (files or standard input). simflow.sim.log reads what these lines say."""

from __future__ import annotations

import functools
import gzip
import io
import math
import re
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

_FAIL_FAMILY = "Total_core_cache_fail_stats_breakdown["


EXIT_LINE = "GPGPU-Sim: *** exit detected ***"


LIMIT_LINE = "break due to reaching the maximum cycles (or instructions)"


_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf)", re.IGNORECASE)


def _value(text: str) -> float:
    """'48.2100', '10.2516%', '8.38 GB/Sec', '655047x', '-nan' -> float. NaN for -nan, and for what is
    no finite number (inf, 1e999): those are missing values (see _note_value)."""
    if "_" not in text:  # most values are a plain number, spaces around it (float reads '1_0' as 10)
        try:
            value = float(text)
        except ValueError:
            pass
        else:
            return value if math.isfinite(value) else math.nan
    match = _NUMBER.search(text)
    if not match:
        return math.nan
    value = float(match[0])
    return value if math.isfinite(value) else math.nan


def _out_of_range(text: str) -> bool:
    match = _NUMBER.search(text)
    return bool(match) and "nan" not in match[0].lower() and not math.isfinite(float(match[0]))


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


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


def _byte_blocks(handle, damage: _Damage, piece: int = PIECE) -> Iterator[bytes]:
    """The file's bytes in blocks that each end with a line (newlines made '\\n', as a text file reads them),
    until it ends or cannot be read on (a cut or corrupted gzip stream, garbage after it, an I/O error):
    what came before is kept, the line cut by the error is dropped, the error is noted. A block cut at a
    newline decodes alone as it would in the whole text (no UTF-8 sequence holds a newline byte)."""
    pieces: list[bytes] = []
    size, carry = 0, b""
    while True:
        try:
            data = handle.read1(piece)
        except (EOFError, OSError, zlib.error, ValueError) as exc:
            damage.error = f"{type(exc).__name__}: {exc}"
            data = None
        if data:
            pieces.append(data)
            size += len(data)
            if size < BLOCK:
                continue
        chunk = carry + b"".join(pieces)
        pieces, size = [], 0
        if chunk.endswith(b"\r") and data:  # it may be the first half of '\r\n'
            chunk, carry = chunk[:-1], b"\r"
        else:
            carry = b""
        if b"\r" in chunk:
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        cut = chunk.rfind(b"\n") + 1
        if cut:
            yield chunk[:cut]
        if not data:  # the end, or the damage: a last line without its newline is read only at the end
            if data is not None and chunk[cut:]:
                yield chunk[cut:] + b"\n"
            return
        carry = chunk[cut:] + carry


def _text_blocks(handle, damage: _Damage, piece: int = PIECE) -> Iterator[str]:
    """_byte_blocks as text, damaged bytes read as U+FFFD (as a text file opened with errors='replace')."""
    for block in _byte_blocks(handle, damage, piece):
        yield block.decode("utf-8", "replace")


# What a line the parser's state acts on begins with (after spaces): every other line of a log (the bulk of a
# stats block: per-core, per-bank and DRAM lines) changes nothing, so read_blocks skips it in C, over the bytes
# (decoding only the lines it keeps). An option ('-name value') counts only before the first stats block, a line
# of dashes never; a GPGPU-Sim line only when it holds what _Reader.line looks for in one.
_STARTS = {"total_dl1_": "", "Stall:": "", "kernel_name": "", "simflow:": "", _FAIL_FAMILY: "",
           "GPGPU-Sim": "(?=[^\\n]*?(?:" + "|".join(re.escape(word.removeprefix("GPGPU-Sim")) for word in (
               "LIVENESS - uArch: inst", EXIT_LINE, LIMIT_LINE, "GPGPU-Sim PTX: Kernel '", "pushing kernel '",
               "CTA/core = ")) + "))"}  # each after the 'GPGPU-Sim' the line begins with


_KEYS = ("gpgpu_simulation_rate", "gpgpu_simulation_time", "kernel_launch_uid")  # and PRINTED's, each before '='


_BANNER_WORDS = b"Simulator Version"  # anywhere in a line


LAST_SPACE = 0x3000  # the highest code point str.isspace() holds true for (a test checks it)


def _branches(words: dict[str, str]) -> str:
    """A regex for any of `words`, each followed by its own regex, factored by shared beginnings so that the
    engine tries few branches a line: words that end at one character are one character class, and a choice
    of several characters is guarded by a class of them (most lines fail there, at their first character)."""
    trie: dict = {}
    for word, then in words.items():
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = then

    def one_of(chars) -> str:
        return "[" + "".join(re.escape(char) for char in sorted(chars)) + "]"

    def emit(node: dict) -> str:
        ends = sorted(char for char, child in node.items() if char and child == {"": ""})
        branches = [one_of(ends)] if len(ends) > 1 else [re.escape(char) for char in ends]
        branches += [re.escape(char) + emit(child) for char, child in sorted(node.items())
                     if char and char not in ends]
        if "" in node:
            branches.append(node[""])
        if len(branches) == 1:
            return branches[0]
        choice = "(?:" + "|".join(branches) + ")"
        return f"(?:(?={one_of(node.keys())}){choice})" if "" not in node and len(node) > 2 else choice

    return emit(trie)


@functools.cache
def _wanted(keys: frozenset[str], options: bool) -> re.Pattern:
    """The lines that can matter, over UTF-8 bytes: the word a line begins with, and where an '=' follows it
    after spaces, the rest of the line (a stat line: 'key = value'). It finds every line _Reader.line acts on
    (and a few it does not, which line() then reads as parse_lines would): its spaces are every character
    str.strip() takes. Spaces of one byte (tab, space ...) are matched; a line with a wider one (no-break space
    ...) where a word could begin, or between a key and its '=', is handed to line() whole. Written as text,
    one character a byte (latin-1)."""
    spaces = [chr(code).encode().decode("latin-1") for code in range(LAST_SPACE + 1)
              if chr(code).isspace() and chr(code) != "\n"]
    one = "[" + "".join(re.escape(char) for char in spaces if len(char) == 1) + "]*+"
    wide = {char[0] for char in spaces if len(char) > 1}  # the first bytes of the wider spaces
    after_key = "[=" + "".join(sorted(wide)) + "]"
    words = {**{key: f"(?={one}{after_key})" for key in keys}, **_STARTS, **dict.fromkeys(wide, "")}
    if options:
        words["-"] = f"(?!(?:-|{one[:-2]})*\n)"
    # one trie for every word: most lines are told from one that can matter at their first letter
    return re.compile(f"\n{one}(?P<word>{_branches(words)})(?:{one}=(?P<rest>[^\n]*))?".encode("latin-1"))
