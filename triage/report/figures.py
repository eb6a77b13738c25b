"""The memo's pictures as hand-written SVG, in one style: a roofline, a gain heatmap, latency–throughput.

SVG is text: no plotting library to install or import (triage run stays fast), and the files are
byte-identical across runs. Every piece of text goes through one layout (Canvas) that cuts it to
LIMITS.name_chars (a hostile title costs what a long one does), measures it in one pass, keeps it inside
the canvas and away from every other text, moving a point's label around the point or replacing it by a
number with a legend entry when it cannot fit: no label overlaps or is clipped.
All text sits in one group (``<g id="labels">``) so a test can render the figure with and without it
and check that every inked pixel of the text lies inside its measured box.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from ..defaults import LIMITS
from ..errors import Problem, UserError

_XML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"})


def escape(text: str) -> str:
    """Text safe inside an SVG element (xml.sax.saxutils.escape costs a 48 ms import of urllib at start-up)."""
    return text.translate(_XML)


def cut(text: str) -> str:
    """``text`` cut to LIMITS.name_chars characters with '…': a title or a name is laid out at a bounded length,
    however long the card or workload file made it."""
    return text if len(text) <= LIMITS.name_chars else text[:LIMITS.name_chars - 1] + "…"


@dataclass(frozen=True)
class Style:
    """One style for every figure: sizes, fonts, and colours that stay apart in greyscale and for colour-blind
    readers (Okabe & Ito 2008 for lines; viridis, Smith & van der Walt 2015, for values)."""

    width: int = 720
    height: int = 460
    left: int = 72            # room for the y tick labels and the y axis title
    right: int = 200          # the legend column
    top: int = 48             # the title (two lines at most)
    bottom: int = 52          # x tick labels and the x axis title
    font: str = "DejaVu Sans, Verdana, sans-serif"
    size: float = 11.0
    title_size: float = 13.0
    small: float = 9.0
    char_em: float = 0.64     # a conservative advance per character in DejaVu Sans (digits 0.636 em)
    text: str = "#222222"
    grid: str = "#e6e6e6"
    frame: str = "#999999"
    lines: tuple[str, ...] = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")


STYLE = Style()
# viridis at 0, 0.25, 0.5, 0.75, 1: monotone in lightness, so a gain reads the same in greyscale
_VIRIDIS = ((68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37))
NO_FIT = "nofit"          # the hatch pattern of cells where a side does not fit


def viridis(t: float) -> str:
    """A colour of the viridis map for t in [0, 1]."""
    t = min(max(t, 0.0), 1.0) * (len(_VIRIDIS) - 1)
    i = min(int(t), len(_VIRIDIS) - 2)
    f = t - i
    r, g, b = (round(a + (c - a) * f) for a, c in zip(_VIRIDIS[i], _VIRIDIS[i + 1], strict=True))
    return f"#{r:02x}{g:02x}{b:02x}"


@dataclass(frozen=True)
class Box:
    """A text's measured extent in canvas pixels."""

    x0: float
    y0: float
    x1: float
    y1: float

    def overlaps(self, other: Box) -> bool:
        return self.x0 < other.x1 and other.x0 < self.x1 and self.y0 < other.y1 and other.y0 < self.y1


class Canvas:
    """One figure: shapes, then every text, each measured and kept inside the canvas and apart."""

    def __init__(self, title: str, xlabel: str, ylabel: str, style: Style = STYLE) -> None:
        self.s = style
        self.height: float = style.height             # grows when the legend needs it
        self.x0, self.x1 = style.left, style.width - style.right
        self.y0, self.y1 = style.top, style.height - style.bottom
        self.shapes: list[str] = []
        self.texts: list[str] = []
        self.boxes: list[tuple[Box, str]] = []
        self.legend: list[tuple[str, str, str]] = []          # (swatch kind, colour, text)
        for n, line in enumerate(self._wrap(cut(title), style.title_size, style.width - 16)[:2]):
            self.text(style.width / 2, 18 + n * style.title_size * 1.3, line, anchor="middle",
                      size=style.title_size, free=True)
        self.text((self.x0 + self.x1) / 2, style.height - 8, xlabel, anchor="middle", free=True)
        self.text(14, (self.y0 + self.y1) / 2, ylabel, anchor="middle", rotate=True, free=True)
        self.shapes.append(f'<rect x="{self.x0}" y="{self.y0}" width="{self.x1 - self.x0}" '
                           f'height="{self.y1 - self.y0}" fill="none" stroke="{style.frame}"/>')

    def _wrap(self, text: str, size: float, width: float, most: int = 2) -> list[str]:
        """``text`` in at most ``most`` lines of ``width`` pixels, the last ending ' …' when more would be needed.
        Linear in the text: each word is measured as it is added to a line, never a growing prefix again."""
        space = self._em(" ")
        lines, line, line_em = [], "", 0.0
        for w in self._pieces(text, size, width):
            if line:
                em = line_em + space
                for ch in w:
                    em += self._em(ch)
                if em * size <= width:
                    line, line_em = f"{line} {w}", em
                    continue
                lines.append(line)
            line, line_em = w, self.measure(w, 1.0)
            if len(lines) == most:                  # the rest cannot be shown: stop reading it
                break
        lines.append(line)
        if len(lines) > most:
            last = lines[most - 1]
            widths = list(accumulate(map(self._em, last), initial=0.0))   # widths[k]: last[:k], in em
            k, gap = len(last), last.rfind(" ")
            while (widths[k] + space + self._em("…")) * size > width and gap >= 0:
                k, gap = gap, last.rfind(" ", 0, gap)
            lines = lines[:most - 1] + [last[:k] + " …"]
        return lines

    def _pieces(self, text: str, size: float, width: float) -> Iterator[str]:
        """The words of ``text``; a word wider than the line broken into line-wide pieces, after its last hyphen
        where the piece has one. Each scan covers at most one line's characters."""
        for word in text.split():
            start = 0
            while len(word) - start > 1:
                em, end = 0.0, start
                while end < len(word) and (step := em + self._em(word[end])) * size <= width:
                    em, end = step, end + 1
                if end == len(word):                # the rest fits on one line
                    break
                end = max(end, start + 1)           # a character wider than the line stands alone
                hyphen = word.rfind("-", start + 1, end)
                end = hyphen + 1 if hyphen >= 0 else end
                yield word[start:end]
                start = end
            yield word[start:]

    def _em(self, ch: str) -> float:
        """One character's conservative advance in DejaVu Sans (em): wide capitals and symbols, East Asian
        characters and narrow punctuation each at their class's advance."""
        if ord(ch) >= 0x1100:
            return 1.0                                  # CJK and other wide scripts
        if ch in "MWmw@%":
            return 1.0
        if ch.isupper() or ch in "#&":
            return 0.78
        if ch in "il.,:;|'!":
            return 0.35
        return self.s.char_em

    def measure(self, text: str, size: float | None = None) -> float:
        """A conservative width of ``text`` in DejaVu Sans: the sum of its characters' advances (``_em``)."""
        em = 0.0
        for ch in text:
            em += self._em(ch)
        return em * (size or self.s.size)

    def box(self, x: float, y: float, text: str, anchor: str, size: float, rotate: bool = False) -> Box:
        """The extent of ``text`` drawn at (x, y) (baseline) with ``anchor``."""
        return self._extent(x, y, self.measure(text, size), anchor, size, rotate)

    def _extent(self, x: float, y: float, w: float, anchor: str, size: float, rotate: bool) -> Box:
        """The extent of a text ``w`` pixels wide drawn at (x, y) (baseline) with ``anchor``."""
        h = size * 1.25
        left = {"start": x, "middle": x - w / 2, "end": x - w}[anchor]
        if rotate:                                  # rotated -90° about (x, y): the box turns
            return Box(x - size * 1.0, y - w / 2, x + size * 0.3, y + w / 2)
        return Box(left - 1, y - size * 0.95, left + w + 1, y - size * 0.95 + h)

    def fits(self, b: Box, legend: bool = False) -> bool:
        """Inside the canvas, apart from every text, and (unless it is the legend's) out of the legend column."""
        inside = b.x0 >= 1 and b.y0 >= 1 and b.x1 <= self.s.width - 1 and (legend or b.y1 <= self.s.height - 1)
        column = Box(self.x1 + 8, 0, self.s.width, self.y1)
        return inside and (legend or not b.overlaps(column)) and not any(b.overlaps(o) for o, _ in self.boxes)

    def text(self, x: float, y: float, text: str, anchor: str = "start", size: float | None = None,
             color: str | None = None, rotate: bool = False, free: bool = False) -> bool:
        """Draw ``text`` if it fits (inside, apart from every other text); ``free``: the caller has reserved
        room (titles), drawn shortened to the canvas if it is too long. Every text is cut to LIMITS.name_chars
        first."""
        size = size or self.s.size
        text = cut(text)
        b = self.box(x, y, text, anchor, size, rotate)
        if not self.fits(b, legend=free):
            if not free:
                return False
            text, b = self._shorten(x, y, text, anchor, size, rotate, b)
        self.boxes.append((b, text))
        turn = f' transform="rotate(-90 {x:.1f} {y:.1f})"' if rotate else ""
        self.texts.append(f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size:g}" '
                          f'fill="{color or self.s.text}"{turn} data-box="{b.x0:.1f} {b.y0:.1f} {b.x1:.1f} '
                          f'{b.y1:.1f}">{escape(text)}</text>')
        return True

    def _shorten(self, x: float, y: float, text: str, anchor: str, size: float, rotate: bool,
                 b: Box) -> tuple[str, Box]:
        """``text`` and its box, its end replaced by '…' until the box lies across the canvas (at least 4
        characters kept): one pass over the widths of its prefixes, not a re-measure per character dropped."""
        widths = list(accumulate(map(self._em, text), initial=0.0))     # widths[k]: text[:k], in em
        keep = len(text)
        while keep > 4 and not (b.x0 >= 1 and b.x1 <= self.s.width - 1):
            keep -= 1                                   # text[:keep - 1] + "…"
            b = self._extent(x, y, (widths[keep - 1] + self._em("…")) * size, anchor, size, rotate)
        return (text if keep == len(text) else text[:keep - 1] + "…"), b

    def place(self, x: float, y: float, text: str, color: str | None = None, size: float | None = None) -> bool:
        """A point's label at the first free spot around (x, y), in growing rings."""
        size = size or self.s.size
        for r in (7, 14, 24, 36, 52, 72, 96):
            for dx, dy, anchor in ((r, -r / 2, "start"), (r, r + size / 2, "start"), (-r, -r / 2, "end"),
                                   (-r, r + size / 2, "end"), (0, -r, "middle"), (0, r + size, "middle")):
                if self.text(x + dx, y + dy, text, anchor, size, color):
                    if r > 7:                               # a leader line says whose label it is
                        b = self.boxes[-1][0]
                        lx, ly = min(max(x, b.x0), b.x1), min(max(y, b.y0), b.y1)
                        self.shapes.append(f'<line x1="{x:.1f}" y1="{y:.1f}" x2="{lx:.1f}" y2="{ly:.1f}" '
                                           f'stroke="{color or self.s.text}" stroke-width="0.6" opacity="0.6"/>')
                    return True
        return False

    def label_point(self, x: float, y: float, text: str, color: str) -> None:
        """Label a point; where no spot is free, a number beside it and the text in the legend."""
        text = cut(text)
        if self.place(x, y, text, color):
            return
        n = sum(1 for kind, _, _ in self.legend if kind == "number") + 1
        if self.place(x, y, str(n), color, self.s.small):
            self.legend.append(("number", color, f"{n}: {text}"))

    def ticks_x(self, values: Sequence[float], scale: Callable[[float], float], fmt: Callable[[float], str],
                lo: float = -math.inf, hi: float = math.inf) -> None:
        """Grid lines and labels at the ``values`` inside [lo, hi], a label dropped where it would touch its
        neighbour."""
        for v in values:
            x = scale(v)
            if lo <= v <= hi and self.x0 - 0.5 <= x <= self.x1 + 0.5:
                self.shapes.append(f'<line x1="{x:.1f}" y1="{self.y0}" x2="{x:.1f}" y2="{self.y1}" '
                                   f'stroke="{self.s.grid}"/>')
                self.text(x, self.y1 + 15, fmt(v), anchor="middle")

    def ticks_y(self, values: Sequence[float], scale: Callable[[float], float], fmt: Callable[[float], str],
                lo: float = -math.inf, hi: float = math.inf) -> None:
        for v in values:
            y = scale(v)
            if lo <= v <= hi and self.y0 - 0.5 <= y <= self.y1 + 0.5:
                self.shapes.append(f'<line x1="{self.x0}" y1="{y:.1f}" x2="{self.x1}" y2="{y:.1f}" '
                                   f'stroke="{self.s.grid}"/>')
                self.text(self.x0 - 5, y + 4, fmt(v), anchor="end")

    def svg(self, defs: str = "") -> str:
        """The figure: shapes, the legend column (every entry; the canvas grows to hold them), then every text
        in one group."""
        x, y = self.x1 + 14, self.y0 + 4
        for kind, color, text in self.legend:
            lines = self._wrap(cut(text), self.s.small, self.s.right - 36, most=8)
            while any(self.box(x + 20, y + 8 + 12 * k, line, "start", self.s.small).overlaps(o)
                      for k, line in enumerate(lines) for o, _ in self.boxes):
                y += 6                                  # below a tick label that reaches into the column
            if y + 12 * len(lines) + 8 > self.height:
                self.height = y + 12 * len(lines) + 8
            if kind == "line":
                self.shapes.append(f'<line x1="{x}" y1="{y + 4}" x2="{x + 14}" y2="{y + 4}" stroke="{color}" '
                                   f'stroke-width="2"/>')
            elif kind == "dash":
                self.shapes.append(f'<line x1="{x}" y1="{y + 4}" x2="{x + 14}" y2="{y + 4}" stroke="{color}" '
                                   f'stroke-width="2" stroke-dasharray="5,3"/>')
            elif kind in ("box", "hatch"):
                fill = f"url(#{NO_FIT})" if kind == "hatch" else color
                self.shapes.append(f'<rect x="{x}" y="{y - 2}" width="14" height="10" fill="{fill}" '
                                   f'stroke="{self.s.frame}"/>')
            for k, line in enumerate(lines):
                self.text(x + 20, y + 8 + 12 * k, line, size=self.s.small, color=self.s.text, free=True)
            if kind == "number":                        # the key's number in the point's colour
                self.shapes.append(f'<circle cx="{x + 7}" cy="{y + 4}" r="4" fill="{color}"/>')
            y += 12 * len(lines) + 6
        return "\n".join([
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.s.width}" height="{self.height:.0f}" '
            f'viewBox="0 0 {self.s.width} {self.height:.0f}" font-family="{self.s.font}">',
            f"<defs>{defs}</defs>" if defs else "",
            '<rect width="100%" height="100%" fill="white"/>',
            *self.shapes, '<g id="labels">', *self.texts, "</g>", "</svg>"]).replace("\n\n", "\n") + "\n"


def _log_scale(lo: float, hi: float, a: float, b: float) -> Callable[[float], float]:
    span = math.log10(hi) - math.log10(lo)
    return lambda v: a + (math.log10(min(max(v, lo), hi)) - math.log10(lo)) / span * (b - a)


def _decades(lo: float, hi: float) -> list[float]:
    return [10.0 ** k for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]


def _si(v: float, unit: str) -> str:
    """10000000000000 FLOP/s -> '10 TFLOP/s' ('10T' with unit '')."""
    for p, name in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= p:
            return f"{v / p:g} {name}{unit}" if unit else f"{v / p:g}{name}"
    return f"{v:g} {unit}".strip()


def roofline(roofs: list[dict[str, Any]], points: list[dict[str, Any]], title: str) -> str:
    """Each chip's roof min(peak, BW·I) for every compute dtype a plotted point runs at (the fp16 roof and the
    int8/fp8 one where a claim computes there), and each cell's baseline (circle) and claim (triangle) at
    (arithmetic intensity, attained FLOP/s) of the theoretical layer."""
    c = Canvas(title, "arithmetic intensity (FLOP/B, log scale)", "attained FLOP/s (log; T = 10¹², P = 10¹⁵)")
    x_lo, x_hi = 0.1, 1e5
    ys = [r["peak"] for r in roofs] + [p[k] for p in points for k in ("base_flops", "claim_flops")]
    y_hi = max(ys) * 2
    y_lo = max(min(min(ys) / 3, y_hi / 1e6), 1e6)
    sx, sy = _log_scale(x_lo, x_hi, c.x0, c.x1), _log_scale(y_lo, y_hi, c.y1, c.y0)
    c.ticks_x(_decades(x_lo, x_hi), sx, lambda v: f"{v:g}", x_lo, x_hi)
    c.ticks_y(_decades(y_lo, y_hi), sy, lambda v: _si(v, ""), y_lo, y_hi)
    chips = list(dict.fromkeys(r["hardware"] for r in roofs))
    for r in roofs:
        color = STYLE.lines[chips.index(r["hardware"]) % len(STYLE.lines)]
        ridge = r["peak"] / r["bandwidth"]
        path = [(x_lo, r["bandwidth"] * x_lo), (ridge, r["peak"]), (x_hi, r["peak"])]
        d = " ".join(f"{'M' if i == 0 else 'L'}{sx(x):.1f},{sy(y):.1f}" for i, (x, y) in enumerate(path))
        dash = ' stroke-dasharray="5,3"' if r["dtype"] not in ("fp16", "bf16") else ""
        c.shapes.append(f'<path d="{d}" fill="none" stroke="{color}" stroke-width="2"{dash}/>')
        c.legend.append(("dash" if dash else "line", color,
                         f"{r['hardware']} {r['dtype']} roof: {_si(r['peak'], 'FLOP/s')}, ridge {ridge:.0f} FLOP/B"))
    for p in points:
        color = STYLE.lines[chips.index(p["hardware"]) % len(STYLE.lines)]
        bx, by = sx(p["base_intensity"]), sy(p["base_flops"])
        cx, cy = sx(p["claim_intensity"]), sy(p["claim_flops"])
        c.shapes.append(f'<line x1="{bx:.1f}" y1="{by:.1f}" x2="{cx:.1f}" y2="{cy:.1f}" stroke="{color}" '
                        f'stroke-dasharray="3,2"/>')
        c.shapes.append(f'<circle cx="{bx:.1f}" cy="{by:.1f}" r="4" fill="white" stroke="{color}"/>')
        c.shapes.append(f'<path d="M{cx:.1f},{cy - 5:.1f} L{cx + 5:.1f},{cy + 4:.1f} L{cx - 5:.1f},{cy + 4:.1f} Z" '
                        f'fill="{color}"/>')
        c.boxes.append((Box(cx - 6, cy - 6, cx + 6, cy + 5), ""))   # labels keep off the markers
        c.boxes.append((Box(bx - 5, by - 5, bx + 5, by + 5), ""))
    for p in points:
        color = STYLE.lines[chips.index(p["hardware"]) % len(STYLE.lines)]
        c.label_point(sx(p["claim_intensity"]), sy(p["claim_flops"]), p["label"], color)
    c.legend.append(("box", "white", "circle: baseline; triangle: claim; theoretical layer (full efficiency)"))
    return c.svg()


def heatmap(contexts: list[int], batches: list[int], gains: list[list[float]], fits: list[list[bool]],
            min_gain: float, title: str) -> str:
    """The bound over context × batch: a fitting cell coloured by its gain (viridis), a cell where the baseline
    or the claim does not fit hatched and uncoloured, and one contour around the cells that reach min_gain."""
    c = Canvas(title, "context (tokens, log-spaced)", "batch (log-spaced)")
    nx, ny = len(contexts), len(batches)
    cw, ch = (c.x1 - c.x0) / nx, (c.y1 - c.y0) / ny
    shown = [g for row, frow in zip(gains, fits, strict=True) for g, f in zip(row, frow, strict=True) if f]
    lo, hi = (min(shown), max(shown)) if shown else (1.0, 1.0)

    def colour(g: float) -> str:
        return viridis(0.0 if hi <= lo else (g - lo) / (hi - lo))

    values = cw >= c.measure("0.00", STYLE.small) + 3 and ch >= STYLE.small + 4
    for j, b in enumerate(batches):
        y = c.y1 - (j + 1) * ch
        for i, ctx in enumerate(contexts):
            x = c.x0 + i * cw
            g, ok = gains[j][i], fits[j][i]
            fill = colour(g) if ok else f"url(#{NO_FIT})"
            what = f"{g:.3f}x" if ok else "does not fit"
            c.shapes.append(f'<rect x="{x:.2f}" y="{y:.2f}" width="{cw:.2f}" height="{ch:.2f}" fill="{fill}">'
                            f'<title>context {ctx:,}, batch {b:,}: {what}</title></rect>')
            if ok and values:
                dark = (g - lo) / (hi - lo) < 0.55 if hi > lo else True
                c.text(x + cw / 2, y + ch / 2 + 3, f"{g:.2f}", anchor="middle", size=STYLE.small,
                       color="white" if dark else STYLE.text)
    # the contour: every cell edge between a paying fitting cell and any other cell or the frame
    pays = [[fits[j][i] and gains[j][i] >= min_gain for i in range(nx)] for j in range(ny)]
    segs = []
    for j in range(ny):
        for i in range(nx):
            if not pays[j][i]:
                continue
            x, y = c.x0 + i * cw, c.y1 - (j + 1) * ch
            if i == 0 or not pays[j][i - 1]:
                segs.append(f"M{x:.2f},{y:.2f} V{y + ch:.2f}")
            if i == nx - 1 or not pays[j][i + 1]:
                segs.append(f"M{x + cw:.2f},{y:.2f} V{y + ch:.2f}")
            if j == 0 or not pays[j - 1][i]:
                segs.append(f"M{x:.2f},{y + ch:.2f} H{x + cw:.2f}")
            if j == ny - 1 or not pays[j + 1][i]:
                segs.append(f"M{x:.2f},{y:.2f} H{x + cw:.2f}")
    if segs:
        c.shapes.append(f'<path d="{" ".join(segs)}" fill="none" stroke="#000000" stroke-width="2.5"/>')
    for i, ctx in enumerate(contexts):
        c.text(c.x0 + (i + 0.5) * cw, c.y1 + 15, f"{ctx / 1024:g}k" if ctx >= 1024 else str(ctx), anchor="middle")
    for j, b in enumerate(batches):
        c.text(c.x0 - 5, c.y1 - (j + 0.5) * ch + 4, f"{b:,}", anchor="end")
    scale = [("box", colour(lo), f"bound {lo:.2f}× (lowest)"), ("box", colour(hi), f"bound {hi:.2f}× (highest)")] \
        if hi > lo + 0.005 else [("box", colour(lo), f"bound {lo:.2f}× wherever both sides fit")]
    c.legend += scale + [
                 ("hatch", "", "the baseline or the claim does not fit in memory: no gain"),
                 ("line", "#000000", f"contour: bound ≥ {min_gain:g}× (where it pays)")]
    defs = (f'<pattern id="{NO_FIT}" patternUnits="userSpaceOnUse" width="6" height="6">'
            f'<rect width="6" height="6" fill="white"/><path d="M0,6 L6,0" stroke="#8c8c8c" stroke-width="1"/>'
            f"</pattern>")
    return c.svg(defs)


def latency_throughput(series: list[dict[str, Any]], slo_s: float | None, title: str) -> str:
    """Tokens/s per GPU against TPOT over the grid's batches, one line per side; the SLO as a vertical line
    and, on each side, the largest batch that meets it ringed."""
    times = [t for s in series for t in s["tpot_s"]]
    rates = [r for s in series for r in s["tokens_per_s_per_gpu"]]
    if not times:
        return ""
    c = Canvas(title, "TPOT, end-to-end (log scale)", "tokens/s per GPU (log scale)")
    span = times + ([slo_s] if slo_s else [])
    x_lo, x_hi = min(span) / 1.5, max(span) * 1.5
    y_lo, y_hi = min(rates) / 1.5, max(rates) * 1.5
    sx, sy = _log_scale(x_lo, x_hi, c.x0, c.x1), _log_scale(y_lo, y_hi, c.y1, c.y0)
    c.ticks_x([m * d for d in _decades(x_lo, x_hi) for m in (1, 2, 5)], sx, lambda v: f"{v * 1e3:g} ms", x_lo, x_hi)
    c.ticks_y([m * d for d in _decades(y_lo, y_hi) for m in (1, 2, 5)], sy, lambda v: f"{v:g}", y_lo, y_hi)
    if slo_s:
        x = sx(slo_s)
        c.shapes.append(f'<line x1="{x:.1f}" y1="{c.y0}" x2="{x:.1f}" y2="{c.y1}" stroke="#555555" '
                        f'stroke-dasharray="4,3"/>')
        c.legend.append(("dash", "#555555", f"SLO: TPOT ≤ {slo_s * 1e3:g} ms"))
    rings = []
    for n, s in enumerate(series):
        color = STYLE.lines[n % len(STYLE.lines)]
        pts = list(zip(s["tpot_s"], s["tokens_per_s_per_gpu"], s["batch"], strict=True))
        d = " ".join(f"{'M' if i == 0 else 'L'}{sx(t):.1f},{sy(r):.1f}" for i, (t, r, _) in enumerate(pts))
        dash = ' stroke-dasharray="6,3"' if n else ""
        c.shapes.append(f'<path d="{d}" fill="none" stroke="{color}" stroke-width="2"{dash}/>')
        for t, r, b in pts:
            x, y = sx(t), sy(r)
            tip = f'<title>{escape(s["name"])} batch {b:g}: {t * 1e3:.2f} ms, {r:,.0f} tok/s</title>'
            c.shapes.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}">{tip}</circle>' if not n else
                            f'<path d="M{x:.1f},{y - 4:.1f} L{x + 4:.1f},{y + 3:.1f} L{x - 4:.1f},{y + 3:.1f} Z" '
                            f'fill="{color}">{tip}</path>')
            c.boxes.append((Box(sx(t) - 4, sy(r) - 4, sx(t) + 4, sy(r) + 4), ""))
        meets = [p for p in pts if slo_s is None or p[0] <= slo_s]
        if meets:
            t, r, b = meets[-1]
            c.shapes.append(f'<circle cx="{sx(t):.1f}" cy="{sy(r):.1f}" r="7" fill="none" stroke="{color}"/>')
            rings.append((sx(t), sy(r), f"{s['name']}: batch {b:g}", color))
        c.legend.append(("line", color, f"{s['name']}" + (" (ringed: the largest batch within the SLO)"
                                                           if meets and slo_s else "")))
    for x, y, text, color in rings:
        c.label_point(x, y, text, color)
    return c.svg()


def latency_rate(series: list[dict[str, Any]], slo: dict[str, tuple[float, str]], title: str) -> str:
    """TTFT and time-between-tokens (each at the percentile its SLO holds at, named in ``labels``) against the
    offered rate (requests/s), baseline solid with dots, claim dashed with triangles; each SLO (bound,
    percentile) a horizontal line in its metric's colour."""
    rates = [r for s in series for r in s["rate_rps"]]
    times = [t for s in series for k in ("ttft", "tbt") for t in s[k] if t and t > 0]
    if not rates or not times:
        return ""
    c = Canvas(title, "offered load, requests/s", "latency (log scale)")
    span = times + [v for v, _ in slo.values()]
    y_lo, y_hi = min(span) / 1.5, max(span) * 1.5
    x_lo, x_hi = 0.0, max(rates) * 1.05

    def sx(v: float) -> float:
        return c.x0 + (v - x_lo) / (x_hi - x_lo) * (c.x1 - c.x0)

    sy = _log_scale(y_lo, y_hi, c.y1, c.y0)
    step = max(rates) / 5
    c.ticks_x([round(step * i, 6) for i in range(6)], sx, lambda v: f"{v:g}", x_lo, x_hi)
    c.ticks_y([m * d for d in _decades(y_lo, y_hi) for m in (1, 2, 5)], sy, _seconds, y_lo, y_hi)
    labels = series[0]["labels"]
    metrics = (("ttft", labels["ttft"], STYLE.lines[0]), ("tbt", labels["tbt"], STYLE.lines[1 % len(STYLE.lines)]))
    for key, name, color in metrics:
        if key in slo:
            bound, at = slo[key]
            y = sy(bound)
            c.shapes.append(f'<line x1="{c.x0}" y1="{y:.1f}" x2="{c.x1}" y2="{y:.1f}" stroke="{color}" '
                            f'stroke-dasharray="2,4"/>')
            c.legend.append(("dash", color, f"SLO: {name} ≤ {_seconds(bound)}"))
        for n, sd in enumerate(series):
            pts = [(r, t) for r, t in zip(sd["rate_rps"], sd[key], strict=True) if t and t > 0]
            if not pts:
                continue
            d = " ".join(f"{'M' if i == 0 else 'L'}{sx(r):.1f},{sy(min(t, y_hi)):.1f}" for i, (r, t) in enumerate(pts))
            dash = ' stroke-dasharray="6,3"' if n else ""
            c.shapes.append(f'<path d="{d}" fill="none" stroke="{color}" stroke-width="2"{dash}/>')
            for r, t in pts:
                x, y = sx(r), sy(min(t, y_hi))
                tip = f'<title>{escape(sd["name"])} {name} at {r:g} req/s: {_seconds(t)}</title>'
                c.shapes.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}">{tip}</circle>' if not n else
                                f'<path d="M{x:.1f},{y - 4:.1f} L{x + 4:.1f},{y + 3:.1f} L{x - 4:.1f},{y + 3:.1f} Z" '
                                f'fill="{color}">{tip}</path>')
                c.boxes.append((Box(x - 4, y - 4, x + 4, y + 4), ""))
            c.legend.append(("line", color, f"{name}, {sd['name']}" + (" (dashed)" if n else "")))
    return c.svg()


def _seconds(v: float) -> str:
    return f"{v * 1e3:g} ms" if v < 1 else f"{v:g} s"


def to_png(svg: str) -> bytes:
    """The figure as PNG (the `png` extra: resvg, a self-contained SVG renderer)."""
    try:
        import resvg_py
    except ImportError:              # an optional dependency: say how to get it
        raise UserError([Problem("--figures png", path="", message=(
            "PNG figures need the png extra: pip install 'llm-triage[png]'"))]) from None
    return bytes(resvg_py.svg_to_bytes(svg_string=svg))
