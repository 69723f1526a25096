"""Tables as a person reads them: plain text fitted to the terminal, and the same rows as markdown, CSV, JSON or
HTML. Every command's table goes through here (terminal.py says what goes in them)."""

from __future__ import annotations

import html
import json
import math
import shutil
import sys
import textwrap

from .errors import UserError

FORMATS = ("table", "markdown", "csv", "json", "html")




def width() -> int | None:
    """The columns a table must fit: $COLUMNS where set, else the terminal's; None (no limit) when the table goes
    to a file (-o, a pipe, a redirect), so what is saved keeps every column."""
    from .settings import current

    if current().to_file:
        return None
    if current().columns:
        return current().columns
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


def cell(value) -> str:
    """A value as a table shows it: 6 significant digits, whole numbers without '.0', nothing for NaN or None."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):  # no exponent for a large count: 1113210, not 1.11321e+06
        return f"{value:.0f}" if (value.is_integer() or abs(value) >= 1e5) and abs(value) < 1e15 else f"{value:.6g}"
    return str(value)


def duration(seconds: float) -> str:
    """12s, 3m05s, 1h07m: elapsed times and ETAs in progress lines."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def demangle(name: str) -> str:
    """A kernel's C++ name without its mangling, as a person reads it: _Z13conv2d_globalPKfS0_Pfiiii ->
    conv2d_global, _ZN2ns4convEv -> ns::conv (the parameter types dropped). Anything else stays as it is."""
    if not name.startswith("_Z"):
        return name
    rest, parts = name[2:], []
    nested = rest.startswith("N")
    rest = rest[1:] if nested else rest
    while rest and rest[0].isdigit():
        digits = len(rest) - len(rest.lstrip("0123456789"))
        size = int(rest[:digits])
        if digits + size > len(rest):
            return name
        parts.append(rest[digits:digits + size])
        rest = rest[digits + size:]
        if not nested:
            break
    return "::".join(parts) if parts and all(parts) else name


def numeric(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def table(rows: list[dict], limit: int | None | str = "terminal", keep: int = 1,
          priority: tuple[str, ...] = ()) -> str:
    """Rows as a plain-text table that fits `limit` characters (default: the terminal, see width()): long text
    wraps, and columns that still do not fit are left out, named on a last line: the first `keep` always stay,
    then the `priority` columns in that order, then the rest from the left. Shown columns keep their order.
    Numbers are right-aligned."""
    import tabulate

    if not rows:
        return "(nothing)"
    limit = width() if limit == "terminal" else limit
    columns = list(dict.fromkeys(key for row in rows for key in row))
    cells = [[cell(row.get(c)) for c in columns] for row in rows]
    filled = [[r[i] for r in cells if r[i]] for i in range(len(columns))]
    right = [sum(map(numeric, f)) > len(f) / 2 for f in filled]  # mostly numbers (a status row aside)
    if limit:
        cap = max(24, limit // 3)  # widest a wrapped text column gets
        caps = [limit // 2 if i < keep else cap for i in range(len(columns))]  # what names a row wraps least
        caps = [10**6 if c == "id" else x for c, x in zip(columns, caps, strict=True)]  # an id is copied whole
        cells = [[c if numeric(c) or len(c) <= caps[i] else "\n".join(textwrap.wrap(c, caps[i]))
                  for i, c in enumerate(r)] for r in cells]
    wide = [max(len(line) for text in [h, *(r[i] for r in cells)] for line in text.split("\n"))
            for i, h in enumerate(columns)]
    ranked = list(range(min(keep, len(columns))))
    ranked += [columns.index(c) for c in priority if c in columns and columns.index(c) not in ranked]
    ranked += [i for i in range(len(columns)) if i not in ranked]
    shown, used = [], -2
    for i in ranked:
        if i < keep or limit is None or used + 2 + wide[i] <= limit:
            shown.append(i)
            used += 2 + wide[i]
    shown.sort()
    tabulate.MIN_PADDING = 0  # its default pads headers by 2 beyond the widths counted here
    text = tabulate.tabulate([[r[i] for i in shown] for r in cells], headers=[columns[i] for i in shown],
                             tablefmt="simple", disable_numparse=True,
                             colalign=["right" if right[i] else "left" for i in shown])
    left = [columns[i] for i in range(len(columns)) if i not in shown]
    if left:
        note = (f"({len(left)} column(s) left out to fit {limit} characters: {', '.join(left)}; a wider terminal, "
                "COLUMNS=N or --format csv|json shows them)")
        text += "\n" + "\n".join(textwrap.wrap(note, limit))
    return text


def render(frame, fmt: str, title: str = "", priority: tuple[str, ...] = ()) -> str:
    """A DataFrame in one of FORMATS, under its title (`priority`: the columns a terminal keeps first)."""
    if fmt not in FORMATS:
        raise UserError(f"unknown format {fmt!r}; valid formats: {', '.join(FORMATS)}")
    if fmt == "csv":
        return frame.convert_dtypes().to_csv(index=False)  # whole numbers as such, not 34.0
    if fmt == "json":
        records = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
                   for row in frame.to_dict(orient="records")]
        return json.dumps({"title": title, "rows": records}, indent=2)
    cells = [[cell(v) for v in row] for row in frame.itertuples(index=False)]
    header = [str(c) for c in frame.columns]
    if fmt == "markdown":
        lines = [f"**{title}**", ""] if title else []
        lines.append("| " + " | ".join(header) + " |")
        lines.append("| " + " | ".join("---:" if frame[c].dtype.kind in "fi" else "---" for c in frame.columns) + " |")
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in cells]
        return "\n".join(lines) + "\n"
    if fmt == "html":
        head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(f'<td class="{_css(h, c)}">{html.escape(c)}</td>'
                                        for h, c in zip(header, row, strict=True)) + "</tr>" for row in cells)
        caption = f"<caption>{html.escape(title)}</caption>" if title else ""
        return f'<table class="simflow">{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>\n'
    body = table([dict(zip(header, row, strict=True)) for row in cells], priority=priority) if cells else "(nothing)"
    limit = width()
    heading = "\n".join(textwrap.wrap(title, limit)) if title and limit else title
    return (f"{heading}\n" if title else "") + body + "\n"


def _css(column: str, value: str) -> str:
    return value if column == "mark" else ("num" if numeric(value) else "")


def csv_text(rows: list[dict]) -> str:
    """`render(DataFrame(rows), "csv")` without pandas (simflow parse's CSV of a large log: pandas alone is 60 MB
    of memory): the same columns, whole numbers as such, floats as Python writes them, missing values empty."""
    import csv
    import io

    columns = list(dict.fromkeys(key for row in rows for key in row))
    cells = []  # column by column: a comprehension a column, not a call a cell (a large log has a million cells)
    for c in columns:
        values = [row.get(c) for row in rows]
        present = [v for v in values if v is not None and v == v]  # v != v: NaN, a missing value
        types = {type(v) for v in present}
        if present and all(issubclass(t, bool) for t in types):
            cells.append(["" if v is None or v != v else str(v) for v in values])
        elif present and all(issubclass(t, int | float) and not issubclass(t, bool) for t in types):
            if all(isinstance(v, int) or (math.isfinite(v) and v == int(v)) for v in present):
                cells.append(["" if v is None or v != v else str(int(v)) for v in values])
            else:
                cells.append(["" if v is None or v != v else repr(float(v)) for v in values])
        else:
            cells.append(["" if v is None or v != v else str(v) for v in values])
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(zip(*cells, strict=True))
    return out.getvalue()
