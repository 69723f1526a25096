"""The parser's fast path: of each block of a log, only the lines the reader acts on are handed to it.

Two scanners find the same lines. log_scan.c, compiled once with the system's C compiler into simflow's cache and
loaded with ctypes, reads the bytes and also reads each plain 'stat = number' line's value, so Python touches only
what it keeps. Where there is no compiler (or a block holds bytes it leaves to the text path: non-ASCII, \\r, odd
spaces), the block is decoded and log_text's regex finds the lines. Either way every line is counted, and the lines
that hold the simulator's banner (one a process) are found by a plain search.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from .catalogue import FORK_MARKER, PRINTED
from .log_text import _BANNER_WORDS, _KEYS, _STARTS, BLOCK, EXIT_LINE, LIMIT_LINE, _Damage, _wanted

SOURCE = Path(__file__).with_name("log_scan.c")
# Read when this module is: a process whose simflow was upgraded (or edited) under it still builds and loads the C
# its own bindings were written for, never the newer file's.
_SOURCE_TEXT = SOURCE.read_bytes()
_KEY, _START, _GPGPU = 0, 1, 2
# keys _stat treats apart (a rate named by its unit, a time in parentheses, the launch uid, the build's flavour)
_SPECIAL = frozenset(("gpgpu_simulation_rate", "gpgpu_simulation_time", "kernel_launch_uid", FORK_MARKER,
                      "gpgpu_n_cache_bkconflict"))
_GPGPU_WORDS = ("LIVENESS - uArch: inst", EXIT_LINE.removeprefix("GPGPU-Sim"), LIMIT_LINE,
                "GPGPU-Sim PTX: Kernel '".removeprefix("GPGPU-Sim"), "pushing kernel '", "CTA/core = ")


def keys() -> frozenset[str]:
    """The stat keys the reader keeps (each before its '=')."""
    return frozenset(PRINTED) | frozenset(_KEYS)


def byte_blocks(handle, damage: _Damage, piece: int) -> Iterator[bytes]:
    """The file's bytes in blocks that each end with a line (as_text reads one as a text file would), until it ends
    or cannot be read on (a cut or corrupted gzip stream, garbage after it, an I/O error): what came before is kept,
    the line cut by the error is dropped, the error is noted (in `damage`); a last line without its newline gets
    one."""
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
        chunk = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        pieces, size = [], 0
        cut = chunk.rfind(b"\n") + 1
        if not cut and data:  # lines ended by '\r' alone: cut after one that is surely not half of '\r\n'
            cut = chunk.rfind(b"\r", 0, len(chunk) - 1) + 1
        if cut:  # one copy: the line carried over and the whole lines read (a memoryview is not copied first)
            yield carry + memoryview(chunk)[:cut] if carry else chunk if cut == len(chunk) else chunk[:cut]
            carry = b""
        if not data:
            if data is not None and carry + chunk[cut:]:
                yield carry + chunk[cut:] + b"\n"
            return
        carry += chunk[cut:]


def as_text(block: bytes) -> str:
    """A block of bytes as the text path reads it: UTF-8 with damaged bytes replaced, newlines made '\\n'."""
    text = block.decode("utf-8", errors="replace")
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


class _Scanner:
    """log_scan.c's table of the words that make a line matter, and its buffers."""

    def __init__(self, lib: ctypes.CDLL, keys: frozenset[str]) -> None:
        words = {**{key: _KEY for key in keys}, **{w: _GPGPU if w == "GPGPU-Sim" else _START for w in _STARTS}}
        if any(char in word for word, kind in words.items() if kind != _KEY for char in " \t="):
            raise ValueError("log_scan.c tries keys before the words a line begins with: none of those may hold "
                             "a space or '='")
        self.words = list(words)
        self.names = [PRINTED.get(w) if words[w] == _KEY and w not in _SPECIAL else None for w in self.words]
        self.is_key = [words[w] == _KEY for w in self.words] + [False]  # [-1]: an option line
        encoded = [w.encode() for w in self.words]
        subs = [w.encode() for w in _GPGPU_WORDS]
        ints = ctypes.c_int * len(encoded)
        lib.scan_new.restype = ctypes.c_void_p
        self.table = lib.scan_new(len(encoded), (ctypes.c_char_p * len(encoded))(*encoded),
                                  ints(*map(len, encoded)), ints(*words.values()),
                                  ints(*(name is not None for name in self.names)), len(subs),
                                  (ctypes.c_char_p * len(subs))(*subs), (ctypes.c_int * len(subs))(*map(len, subs)))
        if not self.table:
            raise MemoryError("log_scan: no memory for its table")
        self.lib = lib
        self.lines, self.fast = ctypes.c_int64(), ctypes.c_long()  # the last block's lines and fast events
        self._grow(1 << 14)

    def _grow(self, cap: int) -> None:
        self.cap = cap
        words, positions, values = ctypes.c_int32 * cap, ctypes.c_int64 * cap, ctypes.c_double * cap
        self.buffers = (words(), positions(), positions(), positions(), words(), values(), positions(), positions())

    def scan(self, block: bytes, options: bool) -> tuple | None:
        """The lines that matter: a list of (line start, end of the match, word index, fast events before it) for
        each line Python reads, and the plain stats this read: their word indices, values, line starts and the
        ends of their '='. None: read the block as text."""
        while True:
            n = self.lib.scan_block(ctypes.c_void_p(self.table), block, len(block), int(options), self.cap,
                                    *self.buffers, ctypes.byref(self.fast), ctypes.byref(self.lines))
            if n == -2:
                self._grow(self.cap * 4)
                continue
            if n < 0:
                return None
            word, start, stop, before, *fast = self.buffers
            f = self.fast.value
            return (list(zip(start[:n], stop[:n], word[:n], before[:n], strict=True)),
                    *(array[:f] for array in fast))

    def lines_with(self, block: bytes, text: bytes) -> list[int]:
        """Where each line that holds `text` begins."""
        while True:
            n = self.lib.find_lines_with(block, len(block), text, len(text), self.buffers[1], self.cap)
            if n < self.cap:
                return self.buffers[1][:n]
            self._grow(self.cap * 4)

    def count_lines(self, block: bytes, start: int = 0, end: int | None = None) -> int:
        return self.lib.count_lines(block, start, len(block) if end is None else end)


_LOCK = threading.Lock()
_LOADED: dict[str, ctypes.CDLL | None] = {}  # {"lib": the library, or None}: loaded (or not) once a process
_THREAD = threading.local()  # each thread its own scanners: their buffers are filled with the GIL released


def _library() -> ctypes.CDLL | None:
    """log_scan.c built for this machine (cached by its text), or None where no C compiler can build it."""
    from ..resources import cache_dir

    source = _SOURCE_TEXT
    # named by its text and the machine's kind: a cache shared by unlike machines (a cluster's home) keeps one each
    built_for = f"{sys.platform}-{platform.machine()}"
    target = cache_dir() / "log_scan" / f"log_scan-{built_for}-{hashlib.sha256(source).hexdigest()[:16]}.so"
    if not target.exists():
        compiler = shutil.which("cc") or shutil.which("gcc")
        if compiler is None:
            return None
        tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
        text = target.with_name(f"{target.name}.{os.getpid()}.c")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            text.write_bytes(source)
            proc = subprocess.run([compiler, "-O3", "-shared", "-fPIC", "-o", str(tmp), str(text)],
                                  capture_output=True, timeout=120)
            if proc.returncode != 0:
                return None
            os.replace(tmp, target)
        except (OSError, subprocess.SubprocessError):
            return None
        finally:
            tmp.unlink(missing_ok=True)
            text.unlink(missing_ok=True)
    try:
        lib = ctypes.CDLL(str(target))
    except OSError:
        return None
    lib.scan_block.restype = lib.count_lines.restype = ctypes.c_long
    lib.scan_block.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_long, ctypes.c_int, ctypes.c_long,
                               *[ctypes.c_void_p] * 10]
    lib.count_lines.argtypes = [ctypes.c_char_p, ctypes.c_long, ctypes.c_long]
    lib.find_lines_with.restype = ctypes.c_long
    lib.find_lines_with.argtypes = [ctypes.c_char_p, ctypes.c_long, ctypes.c_char_p, ctypes.c_long, ctypes.c_void_p,
                                    ctypes.c_long]
    return lib


def scanner(keys: frozenset[str]) -> _Scanner | None:
    """This thread's compiled scanner for these keys, or None (then the regex reads every block)."""
    with _LOCK:
        if "lib" not in _LOADED:
            _LOADED["lib"] = _library()
        lib = _LOADED["lib"]
    if lib is None:
        return None
    scanners = _THREAD.__dict__.setdefault("scanners", {})
    if (id(lib), keys) not in scanners:
        scanners[id(lib), keys] = _Scanner(lib, keys)
    return scanners[id(lib), keys]


def compiled() -> bool:
    """Whether the parser reads logs with the compiled scanner on this machine."""
    return scanner(keys()) is not None


def read_blocks(reader, blocks: Iterable[str | bytes], fast: _Scanner | None = None) -> None:
    """Hand `reader` (log._Reader) the lines it acts on of each block (text, or bytes read with `fast`), in order,
    banner lines among them; count every line. With user stats (a regex of their own) every line is read."""
    for block in blocks:
        scanned = None
        if isinstance(block, bytes):
            if fast is not None and not reader.user:
                scanned = fast.scan(block, options=not reader.log.kernels)
            if scanned is None:
                block = as_text(block)
        if not reader.saw_any and not block.isspace():
            reader.saw_any = True
        if reader.user:
            for raw in block.split("\n")[:-1]:
                reader.log.lines += 1
                reader.line(raw)
        else:
            _read_block(reader, block, scanned, fast)


def _read_block(reader, block: str | bytes, scanned: tuple | None, fast: _Scanner | None) -> None:
    """One block: its events (the lines that matter: `scanned` by the C, or the regex's matches in text), the plain
    stats among them, and its banner lines, in the order they stand."""
    text = scanned is None
    newline = "\n" if text else b"\n"
    if text:  # '\n' + block: a match begins where a line does, at that line's start in block's own positions
        is_key, quick = (False, True), ((), (), (), ())  # an event's "word" here: whether it matched a key
        events = ((m.start(), m.end() - 1, block[m.end() - 2] == "=", 0)
                  for m in _wanted(keys(), not reader.log.kernels).finditer("\n" + block))
        reader._count_lines = None
        banners = []  # where lines holding the banner begin (rare: one a simulator process)
        at = block.find(_BANNER_WORDS)
        while at >= 0:
            banners.append(block.rfind(newline, 0, at) + 1)
            at = block.find(_BANNER_WORDS, block.find(newline, at) + 1)
    else:
        is_key, (events, *quick) = fast.is_key, scanned
        reader._count_lines = fast.count_lines
        banners = fast.lines_with(block, _BANNER_WORDS.encode())
    banners.append(len(block))  # a sentinel past every line
    banners.reverse()  # popped from the end: the next banner line last
    reader._block, reader._counted = block, (0, reader.log.lines)

    def read(start: int, after: int, key: bool) -> None:
        """The line at `start` (its match ends at `after`), after the banner lines before it."""
        while banners[-1] <= start and len(banners) > 1:  # banner lines before this one, each read once
            at = banners.pop()
            if at < start:
                reader._start = at
                reader.line(_decoded(block[at:block.find(newline, at)]))
        if start == len(block):
            return
        reader._start = start
        end = block.find(newline, start)
        # a stat line in a stats block: straight to _stat, as _state would send it
        if not key or reader.current is None \
                or not reader._stat(_decoded(block[start:after - 1]).strip(), _decoded(block[after:end])):
            reader.line(_decoded(block[start:end]))

    done, (words, values, starts, stops) = 0, quick
    for start, after, word, before in (*events, (len(block), 0, -1, len(words))):
        if before > done:  # the plain stats the scanner read before this line
            current = reader.current
            if current is not None:  # as _stat keeps them: straight into the record being read
                current.printed.update(zip([fast.names[w] for w in words[done:before]], values[done:before],
                                           strict=True))
            else:  # outside a stats block: each line as _state reads it, in order
                for i in range(done, before):
                    read(starts[i], stops[i], True)
            done = before
        read(start, after, is_key[word])
    reader._block = None
    counted, lines = reader._counted  # the lines number() counted already are not counted again
    reader.log.lines = lines + (block.count(newline, counted) if text else
                                fast.lines.value if not counted else fast.count_lines(block, counted))


def _decoded(piece: str | bytes) -> str:
    return piece if isinstance(piece, str) else piece.decode("ascii")
