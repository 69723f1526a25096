"""Selecting stored runs: KEY=VALUE filters and selectors (variant=shared,tile=16), and one run by id."""

from __future__ import annotations

import json
from collections.abc import Iterable

from ..errors import UserError
from .store import Store, StoredRun, shape_key

SELECTOR_KEYS = ("id", "variant", "backend", "problem", "config", "status", "runner", "fingerprint", "batch")


def parse_selector(text: str) -> dict[str, str]:
    """'variant=shared,tile=16' -> {'variant': 'shared', 'tile': '16'}."""
    out = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        if "=" not in part:
            raise UserError(f"selector part {part!r} is not KEY=VALUE (keys: {', '.join(SELECTOR_KEYS)} "
                            "or a variant parameter such as tile)")
        key, value = (s.strip() for s in part.split("=", 1))
        out[key] = value
    return out


def matches(run: StoredRun, selector: dict[str, str]) -> bool:
    return all(run.id.startswith(v) if k == "id" else run.value(k) == v for k, v in selector.items())


def select(runs: list[StoredRun], filters: Iterable[str]) -> list[StoredRun]:
    """Runs matching every filter (each KEY=VALUE[,KEY=VALUE])."""
    selector: dict[str, str] = {}
    for f in filters:
        selector.update(parse_selector(f))
    return [r for r in runs if matches(r, selector)]


def resolve_one(store: Store, text: str) -> StoredRun:
    """A run id (or a unique prefix), or a selector matching one run or repeats of one run (same variant,
    parameters, problem, backend and config: the newest passed repeat)."""
    import difflib

    runs = store.runs()
    if "=" not in text:
        found = [r for r in runs if r.id == text] or [r for r in runs if r.id.startswith(text)]
        if len(found) == 1:
            return found[0]
        if not found:
            close = difflib.get_close_matches(text, [r.id for r in runs], n=5, cutoff=0.4)
            hint = f"; close matches: {', '.join(close)}" if close else f"; {len(runs)} runs stored in {store.path}"
            raise UserError(f"no run {text!r}{hint}")
    else:
        found = select(runs, [text])
        if not found:
            selector = parse_selector(text)
            near = [r for r in runs if sum(matches(r, {k: v}) for k, v in selector.items()) == len(selector) - 1]
            hint = "; runs that differ in one key: " + ", ".join(
                f"{r.id} ({r.label(selector)})" for r in near[-5:]) if near else ""
            raise UserError(f"no run matches {text!r}{hint}")
    if len(found) > 1 and len({(r.variant, json.dumps(r.params, sort_keys=True, default=str), shape_key(r.problem),
                                r.backend, r.config_key) for r in found}) == 1:
        # repeats of one run: the newest that passed (or the newest)
        return max(found, key=lambda r: (r.status == "passed", r.created))
    if len(found) > 1:
        listing = "\n  ".join(f"{r.id}  {r.variant} {r.label(r.params)} {r.problem.name} {r.backend} {r.status}"
                              for r in found[-10:])
        raise UserError(f"{text!r} matches {len(found)} runs; name one (a run id, or more KEY=VALUE):\n  {listing}")
    return found[0]
