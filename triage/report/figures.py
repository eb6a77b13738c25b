"""The memo's pictures as hand-written SVG, in one style: a roofline, a gain heatmap (a panel per chip, one
colour bar), latency–throughput, latency against load.

SVG is text: no plotting library to install or import (triage run stays fast), and the files are
byte-identical across runs. Every piece of text goes through one layout (Canvas) that cuts it to
LIMITS.name_chars (a hostile title costs what a long one does), measures it in one pass, keeps it inside
the canvas and away from every other text, moving a point's label around the point or replacing it by a
number with a legend entry when it cannot fit: no label overlaps or is clipped.
All text sits in one group (``<g id="labels">``) so a test can render the figure with and without it
and check that every inked pixel of the text lies inside its measured box. The legend's swatches sit in
another (``<g id="legend">``), each drawn with the stroke, dashes and marker of the plotted thing it names
(those carry ``class="keyed"``), so a test can check that the key and the picture agree.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from itertools import accumulate, chain, pairwise
from typing import Any

from ..defaults import LIMITS
from ..errors import Problem, UserError
from ..records import record

_XML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"})


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")   # not XML 1.0 characters


def escape(text: str) -> str:
    """Text safe inside an SVG element: markup escaped, and a character XML 1.0 forbids (a control character a
    card's double-quoted YAML can hold, a lone surrogate) replaced by U+FFFD, so the file still parses
    (xml.sax.saxutils.escape costs a 48 ms import of urllib at start-up, and leaves those in)."""
    return _NOT_XML.sub("\ufffd", text.translate(_XML))


def cut(text: str) -> str:
    """``text`` cut to LIMITS.name_chars characters with '…': a title or a name is laid out at a bounded length,
    however long the card or workload file made it."""
    return text if len(text) <= LIMITS.name_chars else text[:LIMITS.name_chars - 1] + "…"


@record
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
LABEL_GAP = 2.0           # pixels between a point's label and any other text or mark: apart, not only disjoint


def viridis(t: float) -> str:
    """A colour of the viridis map for t in [0, 1]."""
    t = min(max(t, 0.0), 1.0) * (len(_VIRIDIS) - 1)
    i = min(int(t), len(_VIRIDIS) - 2)
    f = t - i
    r, g, b = (round(a + (c - a) * f) for a, c in zip(_VIRIDIS[i], _VIRIDIS[i + 1], strict=True))
    return f"#{r:02x}{g:02x}{b:02x}"


@record
class Box:
    """A text's measured extent in canvas pixels."""

    x0: float
    y0: float
    x1: float
    y1: float

    def overlaps(self, other: Box) -> bool:
        return self.x0 < other.x1 and other.x0 < self.x1 and self.y0 < other.y1 and other.y0 < self.y1


@record
class Key:
    """One legend entry: its text and a swatch drawn the way the figure draws what it names (the same stroke,
    dashes and marker), so that a reader matches entry and picture by sight."""

    text: str
    color: str = STYLE.text
    dash: str | None = None     # a line across the swatch: "" solid, "6,3" dashed as the plot's; None no line
    width: float = 2.0          # that line's stroke width
    mark: str = ""              # a marker at the swatch's centre (see ``marker``), or "number" for a point's key
    fill: str = ""              # a box swatch's fill (a colour or "url(#pattern)")
    back: str = ""              # a fill behind the line (a white line needs one to be seen)


SWATCH = 22                     # a legend swatch's width: room for a dash pattern on both sides of a marker


def line(x0: float, y0: float, x1: float, y1: float, color: str, width: float = 2.0, dash: str = "",
         extra: str = "") -> str:
    """One straight stroke; ``dash`` an SVG dash pattern ("" solid), ``extra`` more attributes."""
    pattern = f' stroke-dasharray="{dash}"' if dash else ""
    return (f'<line x1="{x0:.1f}" y1="{y0:.1f}" x2="{x1:.1f}" y2="{y1:.1f}" stroke="{color}" '
            f'stroke-width="{width:g}"{pattern}{extra}/>')


def marker(kind: str, x: float, y: float, color: str, r: float = 4.0, tip: str = "") -> str:
    """A point's marker centred on (x, y): "dot" (filled circle), "circle" (hollow), "ring" (a wide hollow
    circle around a point), "triangle" (filled, apex ``r`` above the point). ``tip`` a hover title."""
    if kind == "triangle":
        d = f"M{x:.1f},{y - r:.1f} L{x + r:.1f},{y + 0.8 * r:.1f} L{x - r:.1f},{y + 0.8 * r:.1f} Z"
        tag, shape = "path", f'd="{d}" fill="{color}"'
    elif kind in ("circle", "ring"):
        fill = "white" if kind == "circle" else "none"
        tag, shape = "circle", f'cx="{x:.1f}" cy="{y:.1f}" r="{r:g}" fill="{fill}" stroke="{color}"'
    else:
        tag, shape = "circle", f'cx="{x:.1f}" cy="{y:.1f}" r="{r:g}" fill="{color}"'
    return f"<{tag} {shape}><title>{tip}</title></{tag}>" if tip else f"<{tag} {shape}/>"


def _around(r: float, size: float) -> tuple[tuple[float, float, str], ...]:
    """Where a label may sit around its point at ring ``r``: (dx, dy of its baseline, anchor), beside it above and
    below on either side first, then above and below, then level with it and steeply off either side."""
    return ((r, -r / 2, "start"), (r, r + size / 2, "start"), (-r, -r / 2, "end"), (-r, r + size / 2, "end"),
            (0, -r, "middle"), (0, r + size, "middle"), (r, size * 0.35, "start"), (-r, size * 0.35, "end"),
            (r / 2, -r, "start"), (r / 2, r + size, "start"), (-r / 2, -r, "end"), (-r / 2, r + size, "end"))


class Canvas:
    """One figure: shapes, then every text, each measured and kept inside the canvas and apart."""

    def __init__(self, title: str, xlabel: str, ylabel: str, style: Style = STYLE, frame: bool = True) -> None:
        self.s = style
        self.height: float = style.height             # grows when the legend needs it
        self.x0, self.x1 = style.left, style.width - style.right
        self.y0, self.y1 = style.top, style.height - style.bottom
        self.shapes: list[str] = []
        self.texts: list[str] = []
        self.boxes: list[tuple[Box, str]] = []        # texts, and marks (text "")
        self.lines: list[Box] = []                      # the polylines texts keep off (see keep_off)
        self.legend: list[Key] = []
        self.legend_top: float = self.y0 + 4          # below anything a figure draws atop the legend column
        for n, line in enumerate(self._wrap(cut(title), style.title_size, style.width - 16)[:2]):
            self.text(style.width / 2, 18 + n * style.title_size * 1.3, line, anchor="middle",
                      size=style.title_size, free=True)
        self.text((self.x0 + self.x1) / 2, style.height - 8, xlabel, anchor="middle", free=True)
        self.text(14, (self.y0 + self.y1) / 2, ylabel, anchor="middle", rotate=True, free=True)
        if frame:
            self.frame(self.x0, self.y0, self.x1, self.y1)

    def frame(self, x0: float, y0: float, x1: float, y1: float) -> None:
        """A plot area's frame."""
        self.shapes.append(f'<rect x="{x0:g}" y="{y0:g}" width="{x1 - x0:g}" height="{y1 - y0:g}" fill="none" '
                           f'stroke="{self.s.frame}"/>')

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
        return (inside and (legend or not b.overlaps(column)) and not any(b.overlaps(o) for o, _ in self.boxes)
                and not any(b.overlaps(o) for o in self.lines))

    def text(self, x: float, y: float, text: str, anchor: str = "start", size: float | None = None,
             color: str | None = None, rotate: bool = False, free: bool = False, gap: float = 0.0,
             column: bool = False) -> bool:
        """Draw ``text`` if it fits (inside, apart from every other text or mark and ``gap`` pixels from every
        other text, out of the legend column unless ``column``); ``free``: the caller has reserved room
        (titles), drawn shortened to the canvas if it is too long. Every text is cut to LIMITS.name_chars
        first."""
        size = size or self.s.size
        text = cut(text)
        b = self.box(x, y, text, anchor, size, rotate)
        if not self._free(b, gap, legend=free or column):
            if not free:
                return False
            text, b = self._shorten(x, y, text, anchor, size, rotate, b)
        self.boxes.append((b, text))
        turn = f' transform="rotate(-90 {x:.1f} {y:.1f})"' if rotate else ""
        self.texts.append(f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size:g}" '
                          f'fill="{color or self.s.text}"{turn} data-box="{b.x0:.1f} {b.y0:.1f} {b.x1:.1f} '
                          f'{b.y1:.1f}">{escape(text)}</text>')
        return True

    def _free(self, b: Box, gap: float, legend: bool = False) -> bool:
        """Whether a text may take box ``b``: it fits (see ``fits``) and lies ``gap`` pixels from every text."""
        room = Box(b.x0 - gap, b.y0 - gap, b.x1 + gap, b.y1 + gap)
        return self.fits(b, legend) and not (gap and any(room.overlaps(o) for o, t in self.boxes if t))

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
        """A point's label at the first free spot around (x, y), in growing rings; past the first ring a leader
        line says whose label it is. A spot is free when its leader crosses no text, mark or line; failing
        every one, when it crosses no text or mark; then no text; in a crowd past that, wherever the label
        itself fits (a faint leader across the crowd rather than a point without its label)."""
        size = size or self.s.size
        label = cut(text)
        # the free spots, ring by ring, found as far as a pass asks (most labels take a spot of the first ring)
        found = ((r, x + dx, y + dy, anchor, b) for r in (7, 14, 24, 36, 52, 72, 96, 128, 168)
                 for dx, dy, anchor in _around(r, size)
                 if self._free(b := self.box(x + dx, y + dy, label, anchor, size), LABEL_GAP))
        spots: list[tuple[float, float, float, str, Box]] = []

        def each() -> Iterator[tuple[float, float, float, str, Box]]:
            yield from spots
            for spot in found:
                spots.append(spot)
                yield spot
        for avoid in (3, 2, 1, 0):
            for r, tx, ty, anchor, b in each():
                lx, ly = min(max(x, b.x0), b.x1), min(max(y, b.y0), b.y1)
                if r > 7 and not self._clear(x, y, lx, ly, avoid):
                    continue
                if self.text(tx, ty, text, anchor, size, color, gap=LABEL_GAP):
                    if r > 7:
                        self.shapes.append(line(x, y, lx, ly, color or self.s.text, 0.6, extra=' opacity="0.6"'))
                    return True
        return False

    def _clear(self, x: float, y: float, lx: float, ly: float, avoid: int) -> bool:
        """Whether a leader from (x, y) to (lx, ly), once clear of the point's own marker (its first 8 pixels),
        passes nothing ``avoid`` names: 0 nothing, 1 texts, 2 texts and marks, 3 those and kept-off lines."""
        if not avoid:
            return True
        length = math.hypot(lx - x, ly - y)
        keep = chain((o for o, t in self.boxes if t or avoid >= 2), self.lines if avoid >= 3 else ())
        near = [o for o in keep if o.x1 >= min(x, lx) and o.x0 <= max(x, lx) and o.y1 >= min(y, ly)
                and o.y0 <= max(y, ly)]                  # only what lies around the leader
        for d in range(8, int(length) - 1, 2):
            px, py = x + (lx - x) * d / length, y + (ly - y) * d / length
            if any(o.x0 <= px <= o.x1 and o.y0 <= py <= o.y1 for o in near):
                return False
        return True

    def label_point(self, x: float, y: float, text: str, color: str) -> None:
        """Label a point; where no spot is free, a number beside it and the text in the legend."""
        text = cut(text)
        if self.place(x, y, text, color):
            return
        n = sum(1 for k in self.legend if k.mark == "number") + 1
        if self.place(x, y, str(n), color, self.s.small):
            self.legend.append(Key(f"{n}: {text}", color, mark="number"))

    def keep_off(self, points: Sequence[tuple[float, float]], step: float = 4.0) -> None:
        """Texts keep off the polyline through ``points`` (canvas pixels): small boxes along it, ``step`` apart,
        so that a label is never drawn across a roof or the line between two marks."""
        for (xa, ya), (xb, yb) in pairwise(points):
            n = max(math.ceil(math.hypot(xb - xa, yb - ya) / step), 1)
            for k in range(n + 1):
                x, y = xa + (xb - xa) * k / n, ya + (yb - ya) * k / n
                self.lines.append(Box(x - step / 2, y - step / 2, x + step / 2, y + step / 2))

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
        """The figure: shapes, the legend column (every entry; the canvas grows to hold them) in its own group,
        then every text in one group."""
        x, y = self.x1 + 12, self.legend_top
        keys: list[str] = []
        for k in self.legend:
            lines = self._wrap(cut(k.text), self.s.small, self.s.right - SWATCH - 19, most=8)
            while any(self.box(x + SWATCH + 5, y + 8 + 12 * n, text, "start", self.s.small).overlaps(o)
                      for n, text in enumerate(lines) for o, _ in self.boxes):
                y += 6                                  # below a tick label that reaches into the column
            if y + 12 * len(lines) + 8 > self.height:
                self.height = y + 12 * len(lines) + 8
            keys += self._swatch(k, x, y + 4)
            for n, text in enumerate(lines):
                self.text(x + SWATCH + 5, y + 8 + 12 * n, text, size=self.s.small, color=self.s.text, free=True)
            y += 12 * len(lines) + 6
        return "\n".join([
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.s.width}" height="{self.height:.0f}" '
            f'viewBox="0 0 {self.s.width} {self.height:.0f}" font-family="{self.s.font}">',
            f"<defs>{defs}</defs>" if defs else "",
            '<rect width="100%" height="100%" fill="white"/>',
            *self.shapes, '<g id="legend">', *keys, "</g>", '<g id="labels">', *self.texts, "</g>",
            "</svg>"]).replace("\n\n", "\n") + "\n"

    def _swatch(self, k: Key, x: float, y: float) -> list[str]:
        """A legend entry's swatch, SWATCH pixels wide and centred on height ``y``: its background or box, its
        line, then its marker, as the plot draws them."""
        out = []
        if k.back or k.fill:
            out.append(f'<rect x="{x:g}" y="{y - 6:g}" width="{SWATCH}" height="12" fill="{k.back or k.fill}"'
                       + (f' stroke="{self.s.frame}"/>' if k.fill else "/>"))
        if k.dash is not None:
            out.append(line(x, y, x + SWATCH, y, k.color, k.width, k.dash))
        if k.mark == "number":                          # the key's number in the point's colour
            out.append(marker("dot", x + SWATCH / 2, y, k.color))
        elif k.mark:
            out.append(marker(k.mark, x + SWATCH / 2, y, k.color, 7.0 if k.mark == "ring" else 4.0))
        return out


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


KEYED = ' class="keyed"'   # a plotted line that a legend entry names, drawn in that entry's stroke


def _path(points: Sequence[tuple[float, float]], color: str, width: float = 2.0, dash: str = "",
          extra: str = KEYED) -> str:
    """A polyline through canvas ``points``; ``dash`` its dash pattern ("" solid)."""
    d = " ".join(f"{'M' if i == 0 else 'L'}{x:.1f},{y:.1f}" for i, (x, y) in enumerate(points))
    pattern = f' stroke-dasharray="{dash}"' if dash else ""
    return f'<path d="{d}" fill="none" stroke="{color}" stroke-width="{width:g}"{pattern}{extra}/>'


MARKS = "#555555"          # a legend marker standing for every chip's marks (the roof entries give their colours)


def roofline(roofs: list[dict[str, Any]], points: list[dict[str, Any]], title: str) -> str:
    """Each chip's roof min(peak, BW·I) for every compute dtype a plotted point runs at (the fp16 roof and the
    int8/fp8 one where a claim computes there), and each cell's baseline (circle) and claim (triangle) at
    (arithmetic intensity, attained FLOP/s) of the theoretical layer. Labels keep off roofs, marks and the
    lines between them, so that points piled at one intensity get their labels moved out on leader lines."""
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
        path = [(sx(x), sy(y)) for x, y in ((x_lo, r["bandwidth"] * x_lo), (ridge, r["peak"]), (x_hi, r["peak"]))]
        dash = "" if r["dtype"] in ("fp16", "bf16") else "5,3"
        c.shapes.append(_path(path, color, dash=dash))
        c.keep_off(path)
        c.legend.append(Key(f"{r['hardware']} {r['dtype']} roof: {_si(r['peak'], 'FLOP/s')}, ridge {ridge:.0f} "
                            f"FLOP/B", color, dash=dash))
    for p in points:
        color = STYLE.lines[chips.index(p["hardware"]) % len(STYLE.lines)]
        bx, by = sx(p["base_intensity"]), sy(p["base_flops"])
        cx, cy = sx(p["claim_intensity"]), sy(p["claim_flops"])
        c.shapes.append(line(bx, by, cx, cy, color, 1, "3,2"))
        c.keep_off([(bx, by), (cx, cy)])
        c.shapes.append(marker("circle", bx, by, color))
        c.shapes.append(marker("triangle", cx, cy, color, 5.0))
        c.boxes.append((Box(cx - 6, cy - 6, cx + 6, cy + 5), ""))   # labels keep off the markers
        c.boxes.append((Box(bx - 5, by - 5, bx + 5, by + 5), ""))
    for p in points:
        color = STYLE.lines[chips.index(p["hardware"]) % len(STYLE.lines)]
        c.label_point(sx(p["claim_intensity"]), sy(p["claim_flops"]), p["label"], color)
    c.legend += [Key("baseline: the theoretical layer at full efficiency (colour: its chip)", MARKS, mark="circle"),
                 Key("claim, dashed from its baseline", MARKS, dash="3,2", width=1, mark="triangle")]
    return c.svg()


PAYS = "#ffffff"           # the pays contour: white dashes, apart from the black edge of fitting in any grey
PAYS_DASH = "5,3"
EDGE = "#000000"           # the edge of fitting in memory: a solid black line
SCALE = "gain-scale"       # the colour bar's gradient
MOST_PANELS = 6            # heatmap panels (chips) in one figure: past it the canvas would be taller than a screen


@record
class Panel:
    """One chip's bound over context × batch (rows: batches, bottom up; columns: contexts)."""

    hardware: str
    contexts: list[int]
    batches: list[int]
    gains: list[list[float]]
    fits: list[list[bool]]
    min_gain: float

    def classes(self) -> list[list[int]]:
        """Per cell: 0 a side does not fit, 1 both fit and the bound is below min_gain, 2 it pays."""
        return [[0 if not f else 2 if g >= self.min_gain else 1 for g, f in zip(row, frow, strict=True)]
                for row, frow in zip(self.gains, self.fits, strict=True)]


def _borders(classes: list[list[int]], x0: float, y1: float, cw: float, ch: float,
             between: Callable[[int, int], bool]) -> str:
    """The edges between neighbouring cells whose classes ``between`` tells apart, as one SVG path's data
    (rows from the bottom up); the frame is not an edge."""
    segs = []
    for j, row in enumerate(classes):
        y = y1 - (j + 1) * ch
        for i, k in enumerate(row):
            x = x0 + i * cw
            if i and between(row[i - 1], k):
                segs.append(f"M{x:.2f},{y:.2f} V{y + ch:.2f}")
            if j and between(classes[j - 1][i], k):
                segs.append(f"M{x:.2f},{y + ch:.2f} H{x + cw:.2f}")
    return " ".join(segs)


def _nice_ticks(lo: float, hi: float, most: int = 6) -> list[float]:
    """At most ``most`` round values inside [lo, hi], a step of 1, 2, 2.5 or 5 × 10^k: the colour bar's ticks."""
    span = hi - lo
    for k in range(math.floor(math.log10(span / most)), math.ceil(math.log10(span)) + 1):
        for m in (1, 2, 2.5, 5):
            step = m * 10.0 ** k
            values = [round(n * step, 9) for n in range(math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9) + 1)]
            if len(values) <= most:
                return values
    return [lo, hi]


def _context(ctx: int) -> str:
    return f"{ctx / 1024:g}k" if ctx >= 1024 else str(ctx)


def heatmap(panels: list[Panel], title: str) -> str:
    """The bound over context × batch, one panel per chip stacked on one colour scale (a colour bar with ticked
    gains): a fitting cell coloured by its bound (viridis), a cell where the baseline or the claim does not fit
    hatched and uncoloured, the edge of fitting a solid black line and the pays contour (where the bound
    crosses min_gain) white dashes, so that a reader tells the two apart."""
    shared = all(p.contexts == panels[0].contexts for p in panels)
    gap = 22 if shared else 40                       # between panels: the next one's title (and these ticks)
    rows = max(len(p.batches) for p in panels)
    each = max(14.0 * rows, {1: 344.0, 2: 160.0}.get(len(panels), 120.0))
    top = 64                                         # the title, then the first panel's title
    height = top + len(panels) * each + (len(panels) - 1) * gap + STYLE.bottom
    c = Canvas(title, "context (tokens, log-spaced)", "batch (sequences, log-spaced)",
               replace(STYLE, top=top, height=round(height)), frame=False)
    shown = [g for p in panels for row, frow in zip(p.gains, p.fits, strict=True)
             for g, f in zip(row, frow, strict=True) if f]
    lo, hi = (min(shown), max(shown)) if shown else (1.0, 1.0)
    flat = hi <= lo + 0.005

    def colour(g: float) -> str:
        return viridis(0.0 if flat else (g - lo) / (hi - lo))

    edges = pays = 0
    for n, p in enumerate(panels):
        py0 = top + n * (each + gap)
        py1 = py0 + each
        c.text(c.x0, py0 - 6, p.hardware, free=True)
        nx, ny = len(p.contexts), len(p.batches)
        cw, ch = (c.x1 - c.x0) / nx, each / ny
        values = cw >= c.measure("0.00×", STYLE.small) + 3 and ch >= STYLE.small + 4
        for j, b in enumerate(p.batches):
            y = py1 - (j + 1) * ch
            for i, ctx in enumerate(p.contexts):
                x = c.x0 + i * cw
                g, ok = p.gains[j][i], p.fits[j][i]
                fill = colour(g) if ok else f"url(#{NO_FIT})"
                what = f"{g:.3f}x" if ok else "does not fit"
                c.shapes.append(f'<rect x="{x:.2f}" y="{y:.2f}" width="{cw:.2f}" height="{ch:.2f}" fill="{fill}">'
                                f'<title>{escape(p.hardware)}, context {ctx:,}, batch {b:,}: {what}</title></rect>')
                if ok and values:
                    dark = flat or (g - lo) / (hi - lo) < 0.55
                    c.text(x + cw / 2, y + ch / 2 + 3, f"{g:.2f}×", anchor="middle", size=STYLE.small,
                           color="white" if dark else STYLE.text)
            c.text(c.x0 - 5, py1 - (j + 0.5) * ch + 4, f"{b:,}", anchor="end")
        classes = p.classes()
        fit_edge = _borders(classes, c.x0, py1, cw, ch, lambda a, b: (a == 0) != (b == 0))
        contour = _borders(classes, c.x0, py1, cw, ch, lambda a, b: a != 0 and b != 0 and a != b)
        if fit_edge:
            edges += 1
            c.shapes.append(f'<path d="{fit_edge}" fill="none" stroke="{EDGE}" stroke-width="2"{KEYED}/>')
        if contour:
            pays += 1
            c.shapes.append(f'<path d="{contour}" fill="none" stroke="{PAYS}" stroke-width="2.5" '
                            f'stroke-dasharray="{PAYS_DASH}"{KEYED}/>')
        c.frame(c.x0, py0, c.x1, py1)
        if not shared or n == len(panels) - 1:
            for i, ctx in enumerate(p.contexts):
                c.text(c.x0 + (i + 0.5) * cw, py1 + 15, _context(ctx), anchor="middle", gap=3)
    if shown:
        _colour_bar(c, lo, hi, sorted({p.min_gain for p in panels}), min(each * len(panels), 180.0))
    gains = "/".join(f"{g:g}×" for g in sorted({p.min_gain for p in panels}))
    if any(not f for p in panels for row in p.fits for f in row):
        c.legend.append(Key("the baseline or the claim does not fit in memory: no gain", fill=f"url(#{NO_FIT})"))
    if edges:
        c.legend.append(Key("solid: the edge of fitting in memory", EDGE, dash=""))
    if pays:
        c.legend.append(Key(f"dashed: the bound crosses {gains} (it pays on the brighter side)", PAYS,
                            dash=PAYS_DASH, width=2.5, back=viridis(0.15)))
    elif shown:
        where = "every" if all(k != 1 for p in panels for row in p.classes() for k in row) else "no"
        c.legend.append(Key(f"the bound reaches {gains} in {where} cell that fits"))
    stops = "".join(f'<stop offset="{k / (len(_VIRIDIS) - 1):g}" stop-color="#{r:02x}{g:02x}{b:02x}"/>'
                    for k, (r, g, b) in enumerate(_VIRIDIS))
    defs = (f'<pattern id="{NO_FIT}" patternUnits="userSpaceOnUse" width="6" height="6">'
            f'<rect width="6" height="6" fill="white"/><path d="M0,6 L6,0" stroke="#8c8c8c" stroke-width="1"/>'
            f'</pattern><linearGradient id="{SCALE}" x1="0" y1="1" x2="0" y2="0">{stops}</linearGradient>')
    return c.svg(defs)


def _colour_bar(c: Canvas, lo: float, hi: float, min_gains: list[float], height: float) -> None:
    """Atop the legend column: the shared colour scale from lo (bottom) to hi (top), ticked at round gains, its
    title naming the quantity and its unit, and each min_gain marked across it in the pays contour's style."""
    x, y0 = c.x1 + 12, c.y0 + 18
    c.text(x, c.y0 + 4, "theoretical bound on gain (×)", size=STYLE.small, free=True)
    flat = hi <= lo + 0.005
    fill = viridis(0.0) if flat else f"url(#{SCALE})"
    c.shapes.append(f'<rect x="{x}" y="{y0:g}" width="14" height="{height:g}" fill="{fill}" stroke="{STYLE.frame}" '
                    f'class="colour-bar"/>')

    def at(v: float) -> float:
        return y0 + height / 2 if flat else y0 + height - (v - lo) / (hi - lo) * height

    for v in [lo] if flat else _nice_ticks(lo, hi):
        y = at(v)
        if c.text(x + 20, y + 3.5, f"{v:g}×", size=STYLE.small, column=True, gap=1):
            c.shapes.append(line(x + 14, y, x + 18, y, STYLE.text, 1, extra=' class="tick"'))
    for g in min_gains:
        if not flat and lo < g < hi:
            c.shapes.append(line(x, at(g), x + 14, at(g), PAYS, 2.5, PAYS_DASH))
    c.legend_top = y0 + height + 12


SERIES_DASH = "6,3"        # the claim's line in the latency figures (the baseline's is solid)
LOG_RATES = 4.0            # a latency–rate figure whose rates span more than this factor has a log rate axis
TICK_GAP_PX = 32.0         # the closest two rate labels sit (a label is ~4 characters of 11 px type)


def latency_throughput(series: list[dict[str, Any]], slo_s: float | None, title: str) -> str:
    """Tokens/s per GPU against TPOT over the grid's batches, one line per side (baseline solid with dots, claim
    dashed with triangles, the legend drawn alike); the SLO as a vertical line and, on each side, the largest
    batch that meets it ringed."""
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
        c.shapes.append(line(x, c.y0, x, c.y1, "#555555", 1, "4,3", KEYED))
        c.legend.append(Key(f"SLO: TPOT ≤ {slo_s * 1e3:g} ms", "#555555", dash="4,3", width=1))
    rings = []
    for n, s in enumerate(series):
        color, dash, mark = STYLE.lines[n % len(STYLE.lines)], SERIES_DASH if n else "", "triangle" if n else "dot"
        pts = list(zip(s["tpot_s"], s["tokens_per_s_per_gpu"], s["batch"], strict=True))
        c.shapes.append(_path([(sx(t), sy(r)) for t, r, _ in pts], color, dash=dash))
        c.keep_off([(sx(t), sy(r)) for t, r, _ in pts])
        for t, r, b in pts:
            x, y = sx(t), sy(r)
            tip = f'{escape(s["name"])} batch {b:g}: {t * 1e3:.2f} ms, {r:,.0f} tok/s'
            c.shapes.append(marker(mark, x, y, color, 4.0 if n else 3.0, tip))
            c.boxes.append((Box(x - 4, y - 4, x + 4, y + 4), ""))
        meets = [p for p in pts if slo_s is None or p[0] <= slo_s]
        if meets:
            t, r, b = meets[-1]
            c.shapes.append(marker("ring", sx(t), sy(r), color, 7.0))
            rings.append((sx(t), sy(r), f"{s['name']}: batch {b:g}", color))
        c.legend.append(Key(f"{s['name']}", color, dash=dash, mark=mark))
    if rings and slo_s:
        c.legend.append(Key("ringed: the largest batch within the SLO", MARKS, mark="ring"))
    for x, y, text, color in rings:
        c.label_point(x, y, text, color)
    return c.svg()


def latency_rate(series: list[dict[str, Any]], slo: dict[str, tuple[float, str]], title: str) -> str:
    """TTFT and time-between-tokens (each at the percentile its SLO holds at, named in ``labels``) against the
    offered rate (requests/s, ticked at the simulated rates), baseline solid with dots, claim dashed with
    triangles (the legend drawn alike); each SLO (bound, percentile) a dotted horizontal line in its metric's
    colour."""
    rates = [r for s in series for r in s["rate_rps"]]
    times = [t for s in series for k in ("ttft", "tbt") for t in s[k] if t and t > 0]
    if not rates or not times:
        return ""
    c = Canvas(title, "offered load (requests/s)", "latency (log scale)")
    span = times + [v for v, _ in slo.values()]
    y_lo, y_hi = min(span) / 1.5, max(span) * 1.5
    if max(rates) > LOG_RATES * min(rates):          # rates an order apart: a log axis keeps the low ones apart
        x_lo, x_hi = min(rates) / 1.15, max(rates) * 1.15
        sx = _log_scale(x_lo, x_hi, c.x0, c.x1)
    else:
        pad = (max(rates) - min(rates)) * 0.08 or max(rates) * 0.25
        x_lo, x_hi = max(min(rates) - pad, 0.0), max(rates) + pad

        def sx(v: float) -> float:
            return c.x0 + (v - x_lo) / (x_hi - x_lo) * (c.x1 - c.x0)

    sy = _log_scale(y_lo, y_hi, c.y1, c.y0)
    ticks: list[float] = []
    for r in sorted(set(rates)):                     # a label no closer than TICK_GAP_PX to the last one kept
        if not ticks or sx(r) - sx(ticks[-1]) >= TICK_GAP_PX:
            ticks.append(r)
    c.ticks_x(ticks, sx, lambda v: f"{v:.3g}", x_lo, x_hi)
    c.ticks_y([m * d for d in _decades(y_lo, y_hi) for m in (1, 2, 5)], sy, _seconds, y_lo, y_hi)
    labels = series[0]["labels"]
    metrics = (("ttft", labels["ttft"], STYLE.lines[0]), ("tbt", labels["tbt"], STYLE.lines[1 % len(STYLE.lines)]))
    for key, name, color in metrics:
        if key in slo:
            bound, at = slo[key]
            c.shapes.append(line(c.x0, sy(bound), c.x1, sy(bound), color, 1, "2,4", KEYED))
            c.legend.append(Key(f"SLO: {name} ≤ {_seconds(bound)}", color, dash="2,4", width=1))
        for n, sd in enumerate(series):
            pts = [(r, t) for r, t in zip(sd["rate_rps"], sd[key], strict=True) if t and t > 0]
            if not pts:
                continue
            dash, mark = (SERIES_DASH, "triangle") if n else ("", "dot")
            c.shapes.append(_path([(sx(r), sy(min(t, y_hi))) for r, t in pts], color, dash=dash))
            for r, t in pts:
                x, y = sx(r), sy(min(t, y_hi))
                tip = f'{escape(sd["name"])} {name} at {r:g} req/s: {_seconds(t)}'
                c.shapes.append(marker(mark, x, y, color, 4.0 if n else 3.0, tip))
                c.boxes.append((Box(x - 4, y - 4, x + 4, y + 4), ""))
            c.legend.append(Key(f"{name}, {sd['name']}", color, dash=dash, mark=mark))
    for n, sd in enumerate(series):                  # the rates the verdict reads: each side's largest at the SLO
        best = sd.get("largest")
        if best:
            dash = SERIES_DASH if n else ""
            color = STYLE.lines[2 % len(STYLE.lines)]      # a third colour: neither metric's
            c.shapes.append(line(sx(best), c.y0, sx(best), c.y1, color, 1.5, dash, KEYED))
            c.legend.append(Key(f"largest rate at the SLO, {sd['name']}: {best:.3g} req/s", color, dash=dash,
                                width=1.5))
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
