"""The report's figures as SVG written here: sized to their content (labels are measured, never cut), legends
inside the figure, a hover title on every bar, point and series, and series a click on the legend hides or
shows. No plotting library and nothing fetched: a page that embeds them works offline."""

from __future__ import annotations

import html
import math
import textwrap

CHAR = 7.0  # px per character of the 12 px sans-serif text (a little wide, so labels fit)
COLORS = ("#3b75af", "#d9822b", "#519e3e", "#c53a32", "#8d69b8", "#84584e", "#d57dbf", "#7f7f7f", "#bcbd22",
          "#17becf")
BASELINE = "#d9822b"
TOGGLE_SCRIPT = """document.addEventListener('click', function (event) {
  var entry = event.target.closest('[data-series]');
  if (!entry) return;
  var figure = entry.closest('svg'), name = entry.getAttribute('data-series');
  var hidden = entry.classList.toggle('off');
  figure.querySelectorAll('.' + name).forEach(function (e) { e.style.display = hidden ? 'none' : ''; });
});"""


def number(value: float, unit: str = "") -> str:
    """4 significant digits, thousands grouped, never an exponent above 1e4."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    text = f"{value:,.0f}" if abs(value) >= 1e4 else f"{value:.4g}"
    return f"{text} {unit}".strip()


def _esc(text) -> str:
    return html.escape(str(text), quote=True)


def _title_lines(title: str, width: float) -> list[str]:
    return textwrap.wrap(title, max(20, int(width / CHAR))) or [""]


def _svg(width: float, height: float, body: list[str], label: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="figure" role="img" aria-label="{_esc(label)}" '
            f'width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" '
            f'font-family="sans-serif" font-size="12">' + "".join(body) + "</svg>")


def _head(title: str, width: float) -> tuple[list[str], float]:
    lines = _title_lines(title, width - 20)
    return [f'<text x="10" y="{18 + 16 * i}" font-size="13" font-weight="bold">{_esc(line)}</text>'
            for i, line in enumerate(lines)], 16 * len(lines) + 14


def bars(labels: list[str], values: list[float], *, title: str, unit: str = "", highlight: str | None = None,
         reference: float | None = None, axis: str = "") -> str:
    """Horizontal bars, one per label (the highlighted one in orange), each value written at its end."""
    texts = [number(v) for v in values]
    left = 14 + CHAR * max(len(label) for label in labels)
    right = 14 + CHAR * max(len(t) for t in texts)
    width = max(600.0, left + 320 + right)
    plot = width - left - right
    body, top = _head(title, width)
    finite = [v for v in values if not math.isnan(v)]
    scale = max([*finite, reference or 0, 0]) or 1.0
    row = 22
    for i, (label, value, text) in enumerate(zip(labels, values, texts, strict=True)):
        y = top + i * row
        length = 0 if math.isnan(value) else max(0.0, value) / scale * plot
        color = BASELINE if label == highlight else COLORS[0]
        body.append(f'<g><title>{_esc(label)}: {_esc(number(value, unit))}</title>'
                    f'<text x="{left - 6:.0f}" y="{y + 14}" text-anchor="end">{_esc(label)}</text>'
                    f'<rect x="{left:.0f}" y="{y + 3}" width="{length:.1f}" height="15" fill="{color}"/>'
                    f'<text x="{left + length + 4:.1f}" y="{y + 14}">{_esc(text)}</text></g>')
    bottom = top + row * len(labels) + 4
    if reference is not None:
        x = left + reference / scale * plot
        body.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" stroke="#555" stroke-dasharray="4 3"/>')
    body.append(f'<line x1="{left:.0f}" y1="{bottom}" x2="{left + plot:.0f}" y2="{bottom}" stroke="#999"/>')
    for fraction in (0, 0.5, 1):
        x = left + fraction * plot
        body.append(f'<text x="{x:.0f}" y="{bottom + 15}" text-anchor="middle" font-size="10">'
                    f'{_esc(number(fraction * scale))}</text>')
    body.append(f'<text x="{left + plot / 2:.0f}" y="{bottom + 32}" text-anchor="middle" font-size="11">'
                f'{_esc(axis or unit)}</text>')
    return _svg(width, bottom + 42, body, title)


def _legend(names: list[str], width: float, top: float, toggles: bool) -> tuple[list[str], float]:
    """Entries in rows inside the figure, wrapped to its width; each toggles its series when clicked."""
    body, x, y = [], 10.0, top
    for i, name in enumerate(names):
        size = 26 + CHAR * len(name)
        if x + size > width - 10 and x > 10:
            x, y = 10.0, y + 18
        attrs = f' data-series="s{i}" style="cursor:pointer"' if toggles else ""
        body.append(f'<g class="legend"{attrs}><title>{_esc(name)}{" (click: hide or show)" if toggles else ""}'
                    f'</title><rect x="{x:.0f}" y="{y - 9:.0f}" width="14" height="10" '
                    f'fill="{COLORS[i % len(COLORS)]}"/><text x="{x + 18:.0f}" y="{y:.0f}">{_esc(name)}</text></g>')
        x += size + 14
    return body, y + 14


def paired_bars(labels: list[str], series: dict[str, list[float]], *, title: str, axis: str,
                reference: float | None = None) -> str:
    """Each label's bars side by side, one colour per series, the legend above them inside the figure."""
    names = list(series)
    left = 14 + CHAR * max(len(label) for label in labels)
    right = 14 + CHAR * max(len(number(v)) for values in series.values() for v in values)
    width = max(600.0, left + 320 + right)
    plot = width - left - right
    body, top = _head(title, width)
    legend, top = _legend(names, width, top + 8, toggles=True)
    body += legend
    finite = [v for values in series.values() for v in values if not math.isnan(v)]
    scale = max([*finite, reference or 0, 0]) or 1.0
    band = 12 * len(names) + 10
    for i, label in enumerate(labels):
        y = top + i * band
        body.append(f'<text x="{left - 6:.0f}" y="{y + 6 * len(names) + 4:.0f}" text-anchor="end">'
                    f'{_esc(label)}</text>')
        for k, name in enumerate(names):
            value = series[name][i]
            length = 0 if math.isnan(value) else max(0.0, value) / scale * plot
            body.append(f'<g class="s{k}"><title>{_esc(label)}, {_esc(name)}: {_esc(number(value))}</title>'
                        f'<rect x="{left:.0f}" y="{y + 12 * k:.0f}" width="{length:.1f}" height="11" '
                        f'fill="{COLORS[k % len(COLORS)]}"/><text x="{left + length + 4:.1f}" '
                        f'y="{y + 12 * k + 10:.0f}" font-size="10">{_esc(number(value))}</text></g>')
    bottom = top + band * len(labels)
    if reference is not None:
        x = left + reference / scale * plot
        body.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" stroke="#555" stroke-dasharray="4 3"/>')
    body.append(f'<text x="{left + plot / 2:.0f}" y="{bottom + 18}" text-anchor="middle" font-size="11">'
                f'{_esc(axis)}</text>')
    return _svg(width, bottom + 28, body, title)


def shares(labels: list[str], parts: dict[str, list[float]], *, title: str, axis: str) -> str:
    """One 100 % bar per label, split into its parts (each part's share, its value in the hover title), one
    colour per part, the legend above: where each label's whole went."""
    names = list(parts)
    left = 14 + CHAR * max(len(label) for label in labels)
    width = max(600.0, left + 420)
    plot = width - left - 20
    body, top = _head(title, width)
    legend, top = _legend(names, width, top + 8, toggles=True)
    body += legend
    row = 22
    for i, label in enumerate(labels):
        y, x = top + i * row, float(left)
        total = sum(v for v in (parts[n][i] for n in names) if not math.isnan(v) and v > 0) or 1.0
        body.append(f'<text x="{left - 6:.0f}" y="{y + 14}" text-anchor="end">{_esc(label)}</text>')
        for k, name in enumerate(names):
            value = parts[name][i]
            size = 0.0 if math.isnan(value) or value <= 0 else value / total * plot
            body.append(f'<g class="s{k}"><title>{_esc(label)}, {_esc(name)}: {_esc(number(value))} '
                        f'({100 * size / plot:.1f} %)</title><rect x="{x:.1f}" y="{y + 3}" width="{size:.1f}" '
                        f'height="15" fill="{COLORS[k % len(COLORS)]}"/></g>')
            x += size
    bottom = top + row * len(labels) + 4
    for fraction in (0, 0.5, 1):
        body.append(f'<text x="{left + fraction * plot:.0f}" y="{bottom + 15}" text-anchor="middle" font-size="10">'
                    f'{fraction * 100:.0f} %</text>')
    body.append(f'<text x="{left + plot / 2:.0f}" y="{bottom + 32}" text-anchor="middle" font-size="11">'
                f'{_esc(axis)}</text>')
    return _svg(width, bottom + 42, body, title)


MAX_POINTS = 400  # per series and panel: longer runs are thinned evenly (hover values stay exact)


def timeline(series: list[tuple[str, list[dict]]], panels: list[tuple[str, str, float]], *, title: str,
             shade: list[tuple[float, float]] = (), shade_label: str = "", width: float = 1100) -> str:
    """Step lines over simulated cycles, one panel per (column, axis label, scale), one colour per series (the
    legend toggles it); `shade`: spans drawn grey across every panel (the kernel launch latency)."""
    names = [name for name, _ in series]
    body, top = _head(title, width)
    legend, top = _legend(names + ([shade_label] if shade else []), width, top + 8, toggles=True)
    if shade:  # the shade's legend entry is grey, not a series colour
        legend[-1] = legend[-1].replace(f'fill="{COLORS[len(names) % len(COLORS)]}"', 'fill="#ccc"')
    body += legend
    top += 14  # the first panel's label stands on its own line above it, clear of the legend's last row
    left, right, height, gap = 70.0, 20.0, 130.0, 26.0
    plot = width - left - right
    end = max((float(r["cycle_end"]) for _, rows in series for r in rows), default=1.0) or 1.0
    x_of = lambda cycle: left + float(cycle) / end * plot  # noqa: E731 (a local mapping)
    for p, (column, axis, scale) in enumerate(panels):
        y0 = top + p * (height + gap)
        values = [float(r[column]) * scale for _, rows in series for r in rows if _finite(r[column])]
        peak = max(values, default=1.0) or 1.0
        y_of = lambda v, y0=y0, peak=peak: y0 + height - v / peak * height  # noqa: E731
        body.append(f'<rect x="{left}" y="{y0}" width="{plot}" height="{height}" fill="none" stroke="#ddd"/>')
        for x0, x1 in shade:
            body.append(f'<rect class="s{len(names)}" x="{x_of(x0):.1f}" y="{y0}" width="{x_of(x1) - x_of(x0):.1f}" '
                        f'height="{height}" fill="#000" fill-opacity="0.08"><title>{_esc(shade_label)}</title></rect>')
        body.append(f'<text x="{left - 6}" y="{y0 + 10}" text-anchor="end" font-size="10">{_esc(number(peak))}</text>'
                    f'<text x="{left - 6}" y="{y0 + height}" text-anchor="end" font-size="10">0</text>'
                    f'<text x="{left + 4}" y="{y0 - 4}" font-size="11">{_esc(axis)}</text>')
        for k, (name, rows) in enumerate(series):
            kept = [r for r in rows if _finite(r[column])]
            step = max(1, math.ceil(len(kept) / MAX_POINTS))
            kept = kept[::step]
            points = " ".join(f"{x_of(r['cycle_start']):.1f},{y_of(float(r[column]) * scale):.1f} "
                              f"{x_of(r['cycle_end']):.1f},{y_of(float(r[column]) * scale):.1f}" for r in kept)
            color = COLORS[k % len(COLORS)]
            body.append(f'<g class="s{k}"><title>{_esc(name)}</title><polyline points="{points}" fill="none" '
                        f'stroke="{color}" stroke-width="1.5"/>')
            body += [f'<circle cx="{x_of(r["cycle_end"]):.1f}" cy="{y_of(float(r[column]) * scale):.1f}" r="2.5" '
                     f'fill="{color}"><title>{_esc(name)}: cycles {int(float(r["cycle_start"])):,}-'
                     f'{int(float(r["cycle_end"])):,}: {_esc(axis)} {_esc(number(float(r[column]) * scale))}</title>'
                     f'</circle>' for r in kept]
            body.append("</g>")
    bottom = top + len(panels) * (height + gap) - gap
    for fraction in (0, 0.25, 0.5, 0.75, 1):
        body.append(f'<text x="{left + fraction * plot:.0f}" y="{bottom + 14}" text-anchor="middle" '
                    f'font-size="10">{_esc(number(fraction * end))}</text>')
    body.append(f'<text x="{left + plot / 2:.0f}" y="{bottom + 32}" text-anchor="middle" font-size="11">'
                f'simulated cycles</text>')
    return _svg(width, bottom + 40, body, title)


def _finite(value) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def scatter(points: list[tuple[str, float, float]], *, title: str, x_axis: str, y_axis: str, size: float = 340) -> str:
    """Labelled points on log axes with the y = x diagonal; zeros sit on the axes' lower edge."""
    positive = [v for _, x, y in points for v in (x, y) if v > 0]
    low, high = (min(positive) / 1.5, max(positive) * 1.5) if positive else (1.0, 10.0)
    ticks = [number(low), number(high)]
    label = CHAR * 10 / 12 * max(map(len, ticks))  # the widest tick label, in the ticks' 10 px text
    left = max(60.0, label + 24)  # room for the y ticks and the rotated axis title beside them
    right = max(20.0, label / 2 + 6)  # the last x tick is centred on the plot's right edge
    width = size + left + right
    body, top = _head(title, width)
    span = math.log10(high) - math.log10(low) or 1.0

    def at(value: float) -> float:
        return (math.log10(max(value, low)) - math.log10(low)) / span * size

    body.append(f'<rect x="{left}" y="{top}" width="{size}" height="{size}" fill="none" stroke="#ddd"/>'
                f'<line x1="{left}" y1="{top + size}" x2="{left + size}" y2="{top}" stroke="#aaa" '
                f'stroke-dasharray="4 3"/>')
    for label, x, y in points:
        body.append(f'<circle cx="{left + at(x):.1f}" cy="{top + size - at(y):.1f}" r="4" fill="{COLORS[0]}">'
                    f'<title>{_esc(label)}: {_esc(x_axis)} {_esc(number(x))}, {_esc(y_axis)} {_esc(number(y))}'
                    f'</title></circle>')
    for value in (low, high):
        body.append(f'<text x="{left + at(value):.0f}" y="{top + size + 14}" text-anchor="middle" font-size="10">'
                    f'{_esc(number(value))}</text><text x="{left - 4}" y="{top + size - at(value) + 4:.0f}" '
                    f'text-anchor="end" font-size="10">{_esc(number(value))}</text>')
    body.append(f'<text x="{left + size / 2:.0f}" y="{top + size + 30}" text-anchor="middle" font-size="11">'
                f'{_esc(x_axis)} (log)</text><text x="12" y="{top + size / 2:.0f}" font-size="11" '
                f'transform="rotate(-90 12 {top + size / 2:.0f})" text-anchor="middle">{_esc(y_axis)} (log)</text>')
    return _svg(width, top + size + 40, body, title)
