"""A job's parameters, and how a value reads on the command line and in labels: the light helpers that the job,
the store and the terminal share without loading the kernels (and numpy)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping


class Params(Mapping):
    """A job's parameters, resolved: name -> value in the variant's order, immutable and hashable (a job is a
    value, and its render is cached by it). Read as a dict reads; JSON takes dict(params)."""

    __slots__ = ("_values",)

    def __init__(self, items: Mapping | Iterable[tuple[str, object]] = ()) -> None:
        self._values = dict(items)

    def __getitem__(self, name: str) -> object:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and self._values == dict(other)

    def __hash__(self) -> int:
        return hash(frozenset(self._values.items()))

    def __repr__(self) -> str:
        return f"Params({self._values!r})"

    def __reduce__(self):
        return Params, (tuple(self._values.items()),)


def show_value(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)
