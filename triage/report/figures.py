"""The memo's two pictures as hand-written SVG: a roofline and a gain heatmap.

SVG is text: no plotting library to install or import (triage run stays fast),
and the files are byte-identical across runs.
"""

from __future__ import annotations

import math
from typing import Any

_XML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def escape(text: str) -> str:
    """Text safe inside an SVG element (xml.sax.saxutils.escape costs a 48 ms import of urllib at start-up)."""
    return text.translate(_XML)

W, H, PAD = 640, 400, 60
TOP, BOTTOM = PAD - 20, H - PAD - 20       # the plotting frame's vertical extent
PALETTE = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02"]


def _log_scale(lo: float, hi: float, a: float, b: float) -> Any:
    span = math.log10(hi) - math.log10(lo)
    return lambda v: a + (math.log10(max(v, lo)) - math.log10(lo)) / span * (b - a)


def _frame(title: str, xlabel: str, ylabel: str) -> list[str]:
    return [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
            f'font-family="sans-serif" font-size="11">',
            '<rect width="100%" height="100%" fill="white"/>',
            f'<text x="{W / 2}" y="20" text-anchor="middle" font-size="14">{escape(title)}</text>',
            f'<text x="{W / 2}" y="{H - 12}" text-anchor="middle">{escape(xlabel)}</text>',
            f'<text x="16" y="{H / 2}" text-anchor="middle" transform="rotate(-90 16 {H / 2})">{escape(ylabel)}</text>',
            f'<rect x="{PAD}" y="{TOP}" width="{W - 2 * PAD}" height="{BOTTOM - TOP}" fill="none" stroke="#999"/>']


def roofline(hardware: list[dict[str, Any]], points: list[dict[str, Any]], title: str) -> str:
    """Each chip's roof min(peak, BW·I) and each cell's baseline (circle) and claim (triangle) at (I, FLOP/s)."""
    x_lo, x_hi = 0.1, 1e5
    y_lo = 1e10
    y_hi = max(h["peak"] for h in hardware) * 2
    sx = _log_scale(x_lo, x_hi, PAD, W - PAD)
    sy = _log_scale(y_lo, y_hi, BOTTOM, TOP)
    out = _frame(title, "arithmetic intensity (FLOP/B)", "attained FLOP/s")
    for k in range(-1, 6):
        x = sx(10.0 ** k)
        out.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{BOTTOM}" stroke="#eee"/>'
                   f'<text x="{x:.1f}" y="{BOTTOM + 14}" text-anchor="middle">1e{k}</text>')
    for k in range(10, int(math.log10(y_hi)) + 1):
        y = sy(10.0 ** k)
        out.append(f'<line x1="{PAD}" y1="{y:.1f}" x2="{W - PAD}" y2="{y:.1f}" stroke="#eee"/>'
                   f'<text x="{PAD - 4}" y="{y + 4:.1f}" text-anchor="end">1e{k}</text>')
    for n, h in enumerate(hardware):
        color = PALETTE[n % len(PALETTE)]
        ridge = h["peak"] / h["bandwidth"]
        path = [(x_lo, h["bandwidth"] * x_lo), (ridge, h["peak"]), (x_hi, h["peak"])]
        d = " ".join(f"{'M' if i == 0 else 'L'}{sx(x):.1f},{sy(y):.1f}" for i, (x, y) in enumerate(path))
        out.append(f'<path d="{d}" fill="none" stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{sx(ridge) + 4:.1f}" y="{sy(h["peak"]) + 14:.1f}" fill="{color}">'
                   f'{escape(h["name"])} (ridge {ridge:.0f} FLOP/B)</text>')
    for n, p in enumerate(points):
        color = PALETTE[p["hardware_index"] % len(PALETTE)]
        bx, by = sx(p["base_intensity"]), sy(p["base_flops"])
        cx, cy = sx(p["claim_intensity"]), sy(p["claim_flops"])
        out.append(f'<line x1="{bx:.1f}" y1="{by:.1f}" x2="{cx:.1f}" y2="{cy:.1f}" stroke="{color}" '
                   f'stroke-dasharray="3,2"/>')
        out.append(f'<circle cx="{bx:.1f}" cy="{by:.1f}" r="4" fill="none" stroke="{color}"/>')
        out.append(f'<path d="M{cx:.1f},{cy - 5:.1f} L{cx + 5:.1f},{cy + 4:.1f} L{cx - 5:.1f},{cy + 4:.1f} Z" '
                   f'fill="{color}"/>')
        out.append(f'<text x="{bx + 6:.1f}" y="{by - 6 - 9 * (n % 3):.1f}" fill="#333">{escape(p["label"])}</text>')
    out.append(f'<text x="{PAD + 6}" y="{BOTTOM - 6}" fill="#333">circle: baseline; triangle: claim</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def heatmap(contexts: list[int], batches: list[int], gains: list[list[float]], min_gain: float, title: str) -> str:
    """The bound over context × batch; cells at or above min_gain outlined."""
    nx, ny = len(contexts), len(batches)
    cw, ch = (W - 2 * PAD) / nx, (BOTTOM - TOP) / ny
    top = max(max(row) for row in gains)
    out = _frame(title, "context (tokens)", "batch")
    for j, b in enumerate(batches):
        y = BOTTOM - (j + 1) * ch
        out.append(f'<text x="{PAD - 4}" y="{y + ch / 2 + 4:.1f}" text-anchor="end">{b}</text>')
        for i, c in enumerate(contexts):
            g = gains[j][i]
            t = 0.0 if top <= 1 else min(max((g - 1) / (top - 1), 0.0), 1.0)
            color = f"rgb({int(255 - 200 * t)},{int(255 - 120 * t)},{int(255 - 40 * t)})"
            stroke = ' stroke="#d95f02" stroke-width="1.5"' if g >= min_gain else ""
            x = PAD + i * cw
            out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{cw:.1f}" height="{ch:.1f}" fill="{color}"{stroke}>'
                       f'<title>context {c}, batch {b}: {g:.3f}x</title></rect>')
            if ny * nx <= 120:
                out.append(f'<text x="{x + cw / 2:.1f}" y="{y + ch / 2 + 4:.1f}" text-anchor="middle" '
                           f'font-size="8">{g:.2f}</text>')
    for i, c in enumerate(contexts):
        if i % 2 == 0:
            label = f"{c / 1024:g}k" if c >= 1024 else str(c)
            out.append(f'<text x="{PAD + (i + 0.5) * cw:.1f}" y="{BOTTOM + 14}" text-anchor="middle">{label}</text>')
    out.append(f'<text x="{W - PAD}" y="{TOP - 6}" text-anchor="end">outlined: bound ≥ {min_gain:g}×</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def latency_throughput(series: list[dict[str, Any]], slo_s: float | None, title: str) -> str:
    """Tokens/s per GPU against TPOT over batch, one line per side; the SLO as a vertical line and, on each
    side, the largest batch that meets it ringed."""
    times = [t for s in series for t in s["tpot_s"]]
    rates = [r for s in series for r in s["tokens_per_s_per_gpu"]]
    if not times:
        return ""
    x_lo, x_hi = min(times + ([slo_s] if slo_s else [])) / 1.5, max(times + ([slo_s] if slo_s else [])) * 1.5
    y_lo, y_hi = min(rates) / 1.5, max(rates) * 1.5
    sx = _log_scale(x_lo, x_hi, PAD, W - PAD)
    sy = _log_scale(y_lo, y_hi, BOTTOM, TOP)
    out = _frame(title, "TPOT, end-to-end (log scale)", "tokens/s per GPU (log scale)")
    for k in range(math.floor(math.log10(x_lo)), math.ceil(math.log10(x_hi)) + 1):
        for mult in (1, 2, 5):
            tick = mult * 10.0 ** k
            if x_lo <= tick <= x_hi:
                x = sx(tick)
                out.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{BOTTOM}" stroke="#eee"/>'
                           f'<text x="{x:.1f}" y="{BOTTOM + 14}" text-anchor="middle">{tick * 1e3:g} ms</text>')
    for k in range(math.floor(math.log10(y_lo)), math.ceil(math.log10(y_hi)) + 1):
        if y_lo <= 10.0 ** k <= y_hi:
            y = sy(10.0 ** k)
            out.append(f'<line x1="{PAD}" y1="{y:.1f}" x2="{W - PAD}" y2="{y:.1f}" stroke="#eee"/>'
                       f'<text x="{PAD - 4}" y="{y + 4:.1f}" text-anchor="end">1e{k}</text>')
    if slo_s:
        x = sx(slo_s)
        out.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{BOTTOM}" stroke="#999" stroke-dasharray="4,3"/>'
                   f'<text x="{x + 4:.1f}" y="{TOP + 12}" fill="#555">SLO {slo_s * 1e3:g} ms</text>')
    for n, s in enumerate(series):
        color = PALETTE[n % len(PALETTE)]
        pts = list(zip(s["tpot_s"], s["tokens_per_s_per_gpu"], s["batch"], strict=True))
        d = " ".join(f"{'M' if i == 0 else 'L'}{sx(t):.1f},{sy(r):.1f}" for i, (t, r, _) in enumerate(pts))
        out.append(f'<path d="{d}" fill="none" stroke="{color}" stroke-width="2"/>')
        for t, r, b in pts:
            out.append(f'<circle cx="{sx(t):.1f}" cy="{sy(r):.1f}" r="3" fill="{color}">'
                       f'<title>{escape(s["name"])} batch {b:g}: {t * 1e3:.2f} ms, {r:,.0f} tok/s</title></circle>')
        meets = [p for p in pts if slo_s is None or p[0] <= slo_s]
        if meets:
            t, r, b = meets[-1]
            out.append(f'<circle cx="{sx(t):.1f}" cy="{sy(r):.1f}" r="7" fill="none" stroke="{color}"/>'
                       f'<text x="{sx(t) - 8:.1f}" y="{sy(r) - 10:.1f}" text-anchor="end" fill="{color}">'
                       f'batch {b:g}</text>')
        out.append(f'<text x="{PAD + 6}" y="{TOP + 14 + 14 * n}" fill="{color}">{escape(s["name"])}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
