"""Small, dependency-free SVG charts for report.html: horizontal bars, a histogram, a heatmap and the
arena's memory-over-time map.  Each function returns one self-contained <svg> element as a string."""
from __future__ import annotations

import math
from html import escape

FONT = 'font-family="system-ui, sans-serif" font-size="12"'
BLUE, ORANGE, GREY = "#3b75af", "#e1812c", "#888"
PALETTE = ["#3b75af", "#e1812c", "#3a923a", "#c03d3e", "#9372b2", "#845b53", "#d684bd", "#7f7f7f",
           "#a9aa35", "#2ebdcd"]


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About n round tick values covering [lo, hi]."""
    if hi <= lo:
        hi = lo + 1
    step = 10 ** math.floor(math.log10((hi - lo) / n))
    for mult in (1, 2, 5, 10):
        if (hi - lo) / (step * mult) <= n:
            step *= mult
            break
    first = math.floor(lo / step) * step
    return [first + i * step for i in range(int(math.ceil((hi - first) / step)) + 1)]


def fmt(v: float) -> str:
    """A short number: 1234567 -> 1.23M."""
    a = abs(v)
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if a >= div:
            return f"{v / div:.3g}{suffix}"
    return f"{v:.3g}" if a else "0"


def fmt_tick(v: float, ticks: list[float]) -> str:
    """A tick label precise enough to tell neighbouring ticks apart (2,851,700 vs 2,851,800)."""
    step = abs(ticks[1] - ticks[0]) if len(ticks) > 1 else 0
    if step and abs(v) / step >= 100:
        return f"{v:,.0f}" if step >= 1 else f"{v:.{max(0, -math.floor(math.log10(step)))}f}"
    return fmt(v)


def _svg(width: int, height: int, body: list[str], title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}" {FONT}>'
            f'<title>{escape(title)}</title>' + "".join(body) + "</svg>")


def hbars(labels: list[str], values: list[float], title: str, unit: str = "", width: int = 760,
          colors: list[str] | None = None, annotations: list[str] | None = None) -> str:
    """One horizontal bar per label (top to bottom), value printed at the bar's end."""
    row, right, top = 20, 150, 28
    left = min(300, 12 + 7 * max([min(len(x), 34) for x in labels] + [4]))   # ~7 px per character
    height = top + row * len(values) + 36
    vmax = max([v for v in values if v is not None] + [0]) or 1.0    # all zero: an empty axis 0..1
    scale = (width - left - right) / vmax
    body = [f'<text x="{left}" y="16" font-weight="bold">{escape(title)}</text>']
    for t in nice_ticks(0, vmax):
        if t > vmax * 1.0001:
            break
        x = left + t * scale
        body.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{top + row * len(values)}" '
                    f'stroke="#ddd"/><text x="{x:.1f}" y="{height - 20}" text-anchor="middle" fill="{GREY}">'
                    f'{fmt(t)}</text>')
    for i, (label, v) in enumerate(zip(labels, values)):
        y = top + i * row
        w = max((v or 0) * scale, 0.5)
        color = colors[i] if colors else BLUE
        note = annotations[i] if annotations else fmt(v or 0)
        short = label if len(label) <= 34 else label[:15] + "…" + label[-18:]
        body.append(f'<text x="{left - 6}" y="{y + 14}" text-anchor="end"><title>{escape(label)}</title>'
                    f'{escape(short)}</text><rect x="{left}" y="{y + 3}" width="{w:.1f}" height="{row - 6}" '
                    f'fill="{color}"/><text x="{left + w + 4:.1f}" y="{y + 14}">{escape(note)}</text>')
    body.append(f'<text x="{left + (width - left - right) / 2}" y="{height - 4}" text-anchor="middle">'
                f'{escape(unit)}</text>')
    return _svg(width, height, body, title)


def histogram(values: list[float], title: str, unit: str, bins: int = 30, width: int = 760,
              marks: dict[str, float] | None = None) -> str:
    """A histogram of values, with vertical lines at the named marks (median, p90...)."""
    height, left, right, top, bottom = 260, 60, 48, 28, 42
    lo, hi = min(values), max(values)
    same = hi == lo         # every sample the same (a deterministic emulator): one bar, one tick at its value
    if same:
        pad = max(abs(lo) * 0.05, 1.0)
        lo, hi, bins = lo - pad, hi + pad, bins | 1     # an odd number of bins: the middle one centred on it
    edges = [lo + (hi - lo) * i / bins for i in range(bins + 1)]
    counts = [0] * bins
    for v in values:
        counts[min(int((v - lo) / (hi - lo) * bins), bins - 1)] += 1
    cmax = max(counts)
    pw, ph = width - left - right, height - top - bottom
    xs = lambda v: left + (v - lo) / (hi - lo) * pw  # noqa: E731
    body = [f'<text x="{left}" y="16" font-weight="bold">{escape(title)}</text>']
    for t in nice_ticks(0, cmax, 4):
        if t > cmax:
            break
        y = top + ph - t / cmax * ph
        body.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - right}" y2="{y:.1f}" stroke="#eee"/>'
                    f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="{GREY}">{fmt(t)}</text>')
    for i, c in enumerate(counts):
        if c:
            x0, x1 = xs(edges[i]), xs(edges[i + 1])
            h = c / cmax * ph
            body.append(f'<rect x="{x0 + 0.5:.1f}" y="{top + ph - h:.1f}" width="{max(x1 - x0 - 1, 0.5):.1f}" '
                        f'height="{h:.1f}" fill="{BLUE}"><title>{c} samples in [{fmt(edges[i])}, '
                        f'{fmt(edges[i + 1])})</title></rect>')
    ticks = [min(values)] if same else nice_ticks(lo, hi, 6)
    for t in ticks:
        if lo <= t <= hi:
            label = (f"{t:,.0f}" if t == round(t) else f"{t:.4g}") if same else fmt_tick(t, ticks)
            body.append(f'<text x="{xs(t):.1f}" y="{top + ph + 16}" text-anchor="middle" fill="{GREY}">'
                        f'{label}</text>')
    for k, (name, v) in enumerate((marks or {}).items()):
        x = xs(v)
        body.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + ph}" stroke="{ORANGE}" '
                    f'stroke-dasharray="4 3"/><text x="{x + 3:.1f}" y="{top + 12 + 14 * k}" fill="{ORANGE}">'
                    f'{escape(name)}</text>')
    body.append(f'<line x1="{left}" y1="{top + ph}" x2="{width - right}" y2="{top + ph}" stroke="#444"/>'
                f'<text x="{left + pw / 2}" y="{height - 6}" text-anchor="middle">{escape(unit)}</text>')
    return _svg(width, height, body, title)


def heatmap(matrix: list[list[int]], title: str, row_label: str, col_label: str) -> str:
    """A confusion matrix: cell shade by count, counts written in the cells."""
    n = len(matrix)
    cell = max(18, min(44, 440 // max(n, 1)))
    left, top = 70, 44
    width, height = left + n * cell + 20, top + n * cell + 40
    vmax = max(max(r) for r in matrix) or 1
    body = [f'<text x="4" y="16" font-weight="bold">{escape(title)}</text>',
            f'<text x="{left + n * cell / 2}" y="34" text-anchor="middle">{escape(col_label)} →</text>',
            f'<text x="14" y="{top + n * cell / 2}" text-anchor="middle" transform="rotate(-90 14 '
            f'{top + n * cell / 2})">{escape(row_label)} →</text>']
    for i, row in enumerate(matrix):
        body.append(f'<text x="{left - 4}" y="{top + i * cell + cell / 2 + 4}" text-anchor="end" '
                    f'fill="{GREY}">{i}</text>')
        body.append(f'<text x="{left + i * cell + cell / 2}" y="{top + n * cell + 14}" text-anchor="middle" '
                    f'fill="{GREY}">{i}</text>')
        for j, v in enumerate(row):
            shade = v / vmax
            fill = f"rgb({int(255 - 196 * shade)},{int(255 - 138 * shade)},{int(255 - 80 * shade)})"
            ink = "#fff" if shade > 0.55 else "#222"
            edge = ' stroke="#c03d3e" stroke-width="1.5"' if i != j and v else ' stroke="#fff"'
            body.append(f'<rect x="{left + j * cell}" y="{top + i * cell}" width="{cell}" height="{cell}" '
                        f'fill="{fill}"{edge}><title>{row_label} {i}, {col_label} {j}: {v}</title></rect>')
            if v and cell >= 22:
                body.append(f'<text x="{left + j * cell + cell / 2}" y="{top + i * cell + cell / 2 + 4}" '
                            f'text-anchor="middle" fill="{ink}" font-size="{10 if v > 99 else 11}">{v}</text>')
    return _svg(width, height, body, title)




def png_data_uri(pixels) -> str:
    """A data: URI of an 8-bit grey [H, W] or RGB [H, W, 3] image as PNG (zlib from the standard library)."""
    import base64
    import struct
    import zlib

    rows = [[int(v) for v in row] if not isinstance(row[0], (list, tuple)) else [int(c) for px in row for c in px]
            for row in (p.tolist() if hasattr(p, "tolist") else p for p in pixels)]
    h, w = len(rows), len(pixels[0])
    color = 2 if len(rows[0]) == 3 * w else 0

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    raw = b"".join(b"\0" + bytes(r) for r in rows)
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def image_boxes(image_uri: str, height: int, width: int, layers: list[tuple[str, list[list[float]]]], title: str,
                size: int = 360) -> str:
    """An image (a data: URI, height x width pixels) scaled to `size` pixels across, with each layer's boxes
    (ymin, xmin, ymax, xmax in 0..1 of the image) drawn over it as rectangles of the layer's colour, and a
    legend of the layers' names."""
    scale = size / max(height, width)
    w, h = width * scale, height * scale
    body = [f'<text x="4" y="14" {FONT} font-weight="bold">{escape(title)}</text>',
            f'<image x="0" y="22" width="{w:.1f}" height="{h:.1f}" href="{image_uri}" '
            'style="image-rendering:pixelated" preserveAspectRatio="none"/>']
    dash = ["", "6 3", "2 2", "8 2 2 2"]
    for k, (name, boxes) in enumerate(layers):
        color = PALETTE[k % len(PALETTE)]
        for y0, x0, y1, x1 in boxes:
            body.append(f'<rect x="{x0 * w:.1f}" y="{22 + y0 * h:.1f}" width="{max(x1 - x0, 0) * w:.1f}" '
                        f'height="{max(y1 - y0, 0) * h:.1f}" fill="none" stroke="{color}" stroke-width="2" '
                        f'stroke-dasharray="{dash[k % len(dash)]}"/>')
        body.append(f'<rect x="{w + 12:.0f}" y="{28 + 18 * k}" width="12" height="12" fill="{color}"/>'
                    f'<text x="{w + 30:.0f}" y="{38 + 18 * k}" {FONT}>{escape(name)} ({len(boxes)})</text>')
    return _svg(int(w + 220), int(h + 30), body, title)
