"""The figures as a reader sees them: every shipped card's figures rendered to pixels (resvg) and checked by
geometry. Each text carries the box the layout reserved for it (data-box); the boxes must be disjoint and
inside the canvas, and every pixel the text actually inks must lie inside its box — so no label overlaps
another or is clipped on the picture itself. A heatmap cell where a side does not fit must carry no colour.
The gain heatmap reads through its colour bar (one panel per chip, one scale), its pays contour looks unlike
its edge of fitting, the legend's swatches are drawn as the plot draws its lines and marks, point labels keep
off the roofs, and the serving figure is ticked at the rates it simulated."""

import io
import itertools
import math
import re
from pathlib import Path

import pytest

import triage
from triage.report.figures import to_png
from triage.report.memo import figure_data

resvg = pytest.importorskip("resvg_py")
np = pytest.importorskip("numpy")
Image = pytest.importorskip("PIL.Image")

ROOT = Path(__file__).parent.parent.parent
CARDS = sorted((ROOT / "claims").glob("*.yaml"))
FONTS = [str(p) for p in Path("/usr/share/fonts").rglob("DejaVuSans.ttf")]
BOX = re.compile(r'data-box="([-\d.]+) ([-\d.]+) ([-\d.]+) ([-\d.]+)"')


def pixels(svg: str) -> "np.ndarray":
    """The figure as an RGB array (height × width × 3), rendered by resvg with the system's DejaVu Sans."""
    png = bytes(resvg.svg_to_bytes(svg_string=svg, font_files=FONTS or None, skip_system_fonts=bool(FONTS)))
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int32)


def plot_only(svg: str) -> str:
    """The figure without its legend group (the swatches), so that a search for plotted marks finds no key."""
    start = svg.index('<g id="legend">')
    return svg[:start] + svg[svg.index("</g>", start) + 4:]


def legend_only(svg: str) -> str:
    start = svg.index('<g id="legend">')
    return svg[start:svg.index("</g>", start)]


def labels_only(svg: str) -> str:
    head = svg[:svg.index(">", svg.index("<svg")) + 1]
    group = svg[svg.index('<g id="labels">'):svg.index("</g>", svg.index('<g id="labels">')) + 4]
    return f'{head}<rect width="100%" height="100%" fill="white"/>{group}</svg>'


# the fast set's cards for the every-card checks (the rest run in the full suite): the course's own, a weight
# format, a serving card, speculation
FAST = ("kv2x", "awq", "sarathi-serve", "speculative-decoding")
EVERY_CARD = [p.stem if p.stem in FAST else pytest.param(p.stem, marks=pytest.mark.slow) for p in CARDS]


class _PerCard(dict):
    """Each card's figures, drawn when a test first asks for that card: a test of four cards prices four, not
    every shipped card (the fast set's largest cost was this fixture drawing all 44 up front)."""

    def __missing__(self, card: str) -> dict:
        self[card] = figure_data(triage.evaluate(ROOT / "claims" / f"{card}.yaml"))
        return self[card]


@pytest.fixture(scope="module")
def figures():
    return _PerCard()


@pytest.mark.slow
def test_every_memo_has_its_figures(figures):
    # the default matrix has a workload with traffic (serve-conv): its memo draws the serving figure too
    for card in (p.stem for p in CARDS):
        assert set(figures[card]) == {"roofline", "gain", "latency", "serving"}, card


@pytest.mark.slow
@pytest.mark.parametrize("card", [p.stem for p in CARDS])
def test_no_label_overlaps_another_or_leaves_the_canvas_on_the_picture(figures, card):
    for name, svg in figures[card].items():
        width, height = (float(v) for v in re.search(r'width="(\d+)" height="(\d+)"', svg).groups())
        boxes = [tuple(map(float, m.groups())) for m in BOX.finditer(svg)]
        assert boxes, (card, name)
        for i, (x0, y0, x1, y1) in enumerate(boxes):
            assert 0 <= x0 < x1 <= width and 0 <= y0 < y1 <= height, (card, name, boxes[i])
            for u0, v0, u1, v1 in boxes[i + 1:]:
                assert not (x0 < u1 and u0 < x1 and y0 < v1 and v0 < y1), (card, name, boxes[i], (u0, v0, u1, v1))
        ink = (pixels(labels_only(svg)) < 200).any(axis=2)              # every pixel a text darkened
        inside = np.zeros_like(ink)
        for x0, y0, x1, y1 in boxes:
            inside[max(int(y0) - 1, 0):int(y1) + 2, max(int(x0) - 1, 0):int(x1) + 2] = True
        stray = np.argwhere(ink & ~inside)
        assert len(stray) == 0, (card, name, stray[:5].tolist())


@pytest.mark.slow
@pytest.mark.parametrize("card", ["kv2x", "int8-weights", "kivi", "quest"])
def test_a_cell_where_a_side_does_not_fit_carries_no_gain_colour(figures, card):
    svg = figures[card]["gain"]
    img = pixels(svg)
    cells = re.findall(r'<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)" fill="([^"]+)"><title>'
                       r'[^<]*: ([^<]+)</title>', svg)
    hatched = [c for c in cells if c[5] == "does not fit"]
    coloured = [c for c in cells if c[5] != "does not fit"]
    assert hatched and coloured, card
    for x, y, w, h, fill, _ in hatched:
        assert fill == "url(#nofit)"
        patch = img[int(float(y)) + 3:int(float(y) + float(h)) - 3, int(float(x)) + 3:int(float(x) + float(w)) - 3]
        spread = patch.max(axis=2) - patch.min(axis=2)                  # grey and white have r = g = b
        assert spread.max() <= 8, (card, x, y)
    x, y, w, h, _, _ = coloured[0]
    centre = img[int(float(y) + float(h) / 2), int(float(x) + float(w) / 2)]
    assert centre.max() - centre.min() > 30                             # a gain cell is coloured


def test_png_on_request_is_a_png(figures):
    assert to_png(figures["kv2x"]["roofline"])[:8] == b"\x89PNG\r\n\x1a\n"


def test_figures_png_writes_pngs_beside_the_memo(tmp_path):
    from click.testing import CliRunner

    from triage.cli import main

    out = tmp_path / "memo.md"
    res = CliRunner().invoke(main, ["run", str(ROOT / "claims" / "kv2x.yaml"), "-o", str(out), "--figures", "png"])
    assert res.exit_code == 0, res.output
    for name in ("roofline", "gain", "latency"):
        assert (tmp_path / f"memo.{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"](memo.{name}.png)" in out.read_text()


def test_png_without_the_extra_is_a_user_error(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_resvg(name, *args, **kwargs):
        if name == "resvg_py":
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_resvg)
    with pytest.raises(triage.UserError, match="pip install 'llm-triage\\[png\\]'"):
        to_png("<svg xmlns='http://www.w3.org/2000/svg'/>")


def test_a_workload_grid_beyond_the_default_axes_widens_the_heatmap():
    w = {"grid": {"phase": ["decode"], "context": [4096, 4_194_304], "batch": [1, 1024]}}
    svg = figure_data(triage.evaluate(ROOT / "claims" / "kv2x.yaml", w))["gain"]
    assert "batch 1,024:" in svg and "context 4,194,304," in svg


ROOF = re.compile(r'<path d="M([\d.]+),([\d.]+) L([\d.]+),([\d.]+) L([\d.]+),([\d.]+)" fill="none" stroke="([^"]+)"')
TRIANGLE = re.compile(r'<path d="M([\d.]+),([\d.]+) L[\d.,]+ L[\d.,]+ Z" fill="([^"]+)"/>')
TICK_X = re.compile(r'<text x="([\d.]+)" y="([\d.]+)" text-anchor="middle" font-size="11" fill="#222222" '
                    r'data-box="[^"]+">([\d.]+)</text>')


def _roof_y(roof, x):
    """The roof's height (SVG y) at x: the line to the ridge, then flat."""
    x0, y0, x1, y1, _, y2 = roof
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0) if x <= x1 else y2


@pytest.mark.parametrize("card", EVERY_CARD)
def test_no_point_sits_above_its_chips_roofs(figures, card):
    # a roofline plots steps at full efficiency: no step can attain more than its chip's highest roof
    svg = plot_only(figures[card]["roofline"])
    roofs = {}
    for m in ROOF.finditer(svg):
        roofs.setdefault(m.group(7), []).append(tuple(map(float, m.groups()[:6])))
    for m in TRIANGLE.finditer(svg):
        x, top, color = float(m.group(1)), float(m.group(2)), m.group(3)
        y = top + 5                                              # the triangle's apex is 5 px above its point
        assert y >= min(_roof_y(r, x) for r in roofs[color]) - 1.0, (card, x, y)


def test_tick_labels_sit_where_their_values_are():
    # log-scale ticks: equal ratios of values at equal distances, none piled at the frame's edge
    svg = figure_data(triage.evaluate(ROOT / "claims" / "kv2x.yaml"))["roofline"]
    ticks = sorted((float(v), float(x)) for x, y, v in TICK_X.findall(svg))
    assert len(ticks) >= 4
    steps = [(x2 - x1) / math.log10(v2 / v1) for (v1, x1), (v2, x2) in zip(ticks, ticks[1:], strict=False)]
    assert max(steps) - min(steps) < 0.5


def test_many_long_named_workloads_keep_every_label_or_a_numbered_key(tmp_path):
    w = {"workloads": [{"name": f"workload-with-a-rather-long-descriptive-name-number-{k:02d}",
                        "context": 256 * (k + 1), "batch": 1 + k % 4, "hardware": "a100-80gb"} for k in range(25)]}
    svg = figure_data(triage.evaluate(ROOT / "claims" / "kv2x.yaml", w))["roofline"]
    texts = re.findall(r">([^<]+)</text>", svg)
    numbers = [t for t in re.findall(r'font-size="9"[^>]*>(\d+)</text>', svg)]
    keys = [t for t in texts if re.match(r"\d+:", t)]
    labelled = [t for t in texts if re.fullmatch(r"workload-with-a-rather-long-descriptive-name-number-\d\d", t)]
    assert len(numbers) == len(keys) and len(labelled) + len(keys) == 25
    assert "…" not in svg                                # names wrap in the legend, never cut
    boxes = [tuple(map(float, m.groups())) for m in BOX.finditer(svg)]
    for i, (x0, y0, x1, y1) in enumerate(boxes):
        for u0, v0, u1, v1 in boxes[i + 1:]:
            assert not (x0 < u1 and u0 < x1 and y0 < v1 and v0 < y1)


def test_a_prefill_only_memo_says_why_it_has_one_figure(tmp_path):
    from click.testing import CliRunner

    from triage.cli import main

    w = tmp_path / "w.yaml"
    w.write_text("workloads:\n  - {name: p, phase: prefill, context: 2048, batch: 1}\n")
    out = tmp_path / "memo.md"
    assert CliRunner().invoke(main, ["run", str(ROOT / "claims" / "kv2x.yaml"), "-w", str(w), "-o",
                                     str(out)]).exit_code == 0
    text = out.read_text()
    assert "](memo.roofline.svg)" in text and "no workload here decodes" in text
    assert not (tmp_path / "memo.gain.svg").exists()


# ---- the gain heatmap: a colour bar, one panel per chip, the pays contour apart from the edge of fitting ----

CELL = re.compile(r'<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)" fill="([^"]+)"><title>'
                  r'([^,<]+), context ([\d,]+), batch ([\d,]+): ([^<]+)</title>')
BAR = re.compile(r'<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)" fill="[^"]+" stroke="[^"]+" '
                 r'class="colour-bar"/>')
BAR_TICK = re.compile(r'<line x1="[\d.]+" y1="([\d.]+)" x2="[\d.]+" y2="[\d.]+" stroke="[^"]+" stroke-width="1" '
                      r'class="tick"/>')
TEXT = re.compile(r'<text x="([-\d.]+)" y="([-\d.]+)" text-anchor="(\w+)" font-size="([\d.]+)" fill="([^"]+)"[^>]*'
                  r'>([^<]*)</text>')
KEYED = re.compile(r'<(?:path d="([^"]+)"|line x1="([\d.]+)" y1="([\d.]+)" x2="([\d.]+)" y2="([\d.]+)") '
                   r'(?:fill="none" )?stroke="([^"]+)" stroke-width="([\d.]+)"(?: stroke-dasharray="([^"]+)")? '
                   r'class="keyed"/>')
SWATCH_LINE = re.compile(r'<line x1="([\d.]+)" y1="([\d.]+)" x2="([\d.]+)" y2="[\d.]+" stroke="([^"]+)" '
                         r'stroke-width="([\d.]+)"(?: stroke-dasharray="([^"]+)")?/>')


def cells(svg):
    """The heatmap's cells: (x, y, w, h, fill, chip, context, batch, what the cell says)."""
    return [(float(x), float(y), float(w), float(h), fill, chip, int(c.replace(",", "")), int(b.replace(",", "")), what)
            for x, y, w, h, fill, chip, c, b, what in CELL.findall(svg)]


def bar_scale(svg):
    """The colour bar as a reader reads it: its rectangle, and gain → height fitted through its ticked labels."""
    x, y, w, h = map(float, BAR.search(svg).groups())
    ticks = sorted(float(y1) for y1 in BAR_TICK.findall(svg))
    labels = sorted((float(ty), float(t[:-1])) for tx, ty, _, size, _, t in TEXT.findall(svg)
                    if t.endswith("×") and float(tx) > x + w and y <= float(ty) - 3.5 <= y + h)
    assert len(ticks) == len(labels) >= 2                       # every tick labelled, at least two of them
    values = [v for _, v in labels]
    assert values == sorted(values, reverse=True)              # higher gains higher up
    slope, offset = np.polyfit(values, ticks, 1)
    assert np.allclose(np.polyval([slope, offset], values), ticks, atol=0.6)   # a linear scale
    return (x, y, w, h), lambda g: slope * g + offset


@pytest.mark.parametrize("card", ["kv2x", "int8-weights", "kivi", "quest"])
def test_the_colour_bar_reads_every_cell_colour_from_its_ticked_gains(figures, card):
    # read a cell's gain off its tooltip, find that gain on the bar by its tick labels: the same colour there
    svg = figures[card]["gain"]
    assert "theoretical bound on gain (×)" in svg                  # the scale names its quantity and unit
    (x, y, w, h), at = bar_scale(svg)
    img = pixels(svg)
    checked = 0
    for cx, cy, *_, what in cells(svg):
        if what == "does not fit":
            continue
        gain = float(what.rstrip("x"))
        cell = img[int(cy + 3.5), int(cx + 3.5)]                 # off the edge lines and any value printed in it
        row = min(max(round(at(gain)), int(y) + 1), int(y + h) - 2)
        bar = img[row, int(x + w / 2)]
        assert np.abs(cell - bar).max() <= 14, (card, what, cell.tolist(), bar.tolist())
        checked += 1
    assert checked >= 10


def test_a_flat_bound_has_a_one_colour_bar_with_its_one_gain():
    from triage.report.figures import Panel, heatmap

    svg = heatmap([Panel("a100-80gb", [1024, 2048], [1, 4], [[1.3, 1.3], [1.3, 1.3]], [[True, True], [True, False]],
                         1.1)], "flat")
    assert 'fill="url(#gain-scale)"' not in svg and ">1.3×</text>" in svg
    words = " ".join(re.findall(r'font-size="9"[^>]*>([^<]+)</text>', svg))    # the legend's lines, wrapped
    assert "the bound reaches 1.1× in every cell that fits" in words


def test_one_heatmap_panel_per_chip_on_one_colour_scale():
    w = {"workloads": [{"name": f"chat-{hw}", "context": 4096, "batch": 8, "hardware": hw}
                       for hw in ("a100-80gb", "h100-sxm", "l40s")]}
    for svg, chips in ((figure_data(triage.evaluate(ROOT / "claims" / "kv2x.yaml"))["gain"], {"a100-80gb", "h100-sxm"}),
                       (figure_data(triage.evaluate(ROOT / "claims" / "kivi.yaml", w))["gain"],
                        {"a100-80gb", "h100-sxm", "l40s"})):
        found = cells(svg)
        assert {c[5] for c in found} == chips
        extents = {}
        for x, y, cw, ch, *_rest in found:
            chip = _rest[1]
            x0, y0, x1, y1 = extents.get(chip, (x, y, x + cw, y + ch))
            extents[chip] = (min(x0, x), min(y0, y), max(x1, x + cw), max(y1, y + ch))
        panels = sorted(extents.items(), key=lambda e: e[1][1])
        for (_, a), (_, b) in itertools.pairwise(panels):
            assert a[3] < b[1]                                     # stacked, apart
        texts = [(float(tx), float(ty), t) for tx, ty, _, _, _, t in TEXT.findall(svg)]
        for chip, (x0, y0, _, _) in panels:                         # each titled with its chip, right above it
            assert any(t == chip and abs(tx - x0) < 1 and y0 - 16 < ty < y0 for tx, ty, t in texts), chip
        assert len(BAR.findall(svg)) == 1                          # one shared scale
        by_gain = {}
        for *_, fill, _chip, _, _, what in found:                    # the same gain, the same colour, any panel
            if what != "does not fit":
                by_gain.setdefault(what, []).append([int(fill[k:k + 2], 16) for k in (1, 3, 5)])
        assert all(np.ptp(np.array(fills), axis=0).max() <= 1 for fills in by_gain.values())
        assert any(len(fills) >= len(chips) for fills in by_gain.values())


def _segments(d):
    """The straight pieces of a path made of M x,y V y' / M x,y H x' moves."""
    for x, y, kind, to in re.findall(r"M([\d.]+),([\d.]+) ([VH])([\d.]+)", d):
        x, y, to = float(x), float(y), float(to)
        yield (x, y, x, to) if kind == "V" else (x, y, to, y)


def _along(img, x0, y0, x1, y1):
    """The pixels under a segment (the ones its centre line crosses), its ends left out (where other lines
    meet it)."""
    n = int(max(abs(x1 - x0), abs(y1 - y0)))
    return np.array([img[int(y0 + (y1 - y0) * k / n), int(x0 + (x1 - x0) * k / n)] for k in range(2, n - 1)])


@pytest.mark.parametrize("card", ["kv2x", "kivi", "quest"])
def test_the_pays_contour_looks_unlike_the_edge_of_fitting_and_both_are_keyed(figures, card):
    svg = figures[card]["gain"]
    img = pixels(svg)
    paths = {(m.group(6), m.group(8) or ""): m.group(1) for m in KEYED.finditer(svg) if m.group(1)}
    (edge_style, edge), = [(k, d) for k, d in paths.items() if not k[1]]
    (pays_style, pays), = [(k, d) for k, d in paths.items() if k[1]]
    edge_px = np.concatenate([_along(img, *s) for s in _segments(edge)])
    pays_segments = [s for s in _segments(pays) if max(abs(s[2] - s[0]), abs(s[3] - s[1])) >= 12]
    pays_px = np.concatenate([_along(img, *s) for s in pays_segments])
    assert (edge_px.max(axis=1) < 60).mean() > 0.95                 # a solid dark line
    light = (pays_px.min(axis=1) > 225).mean()
    assert 0.4 < light < 0.85, light                               # light dashes with gaps: unlike the edge
    for s in pays_segments:                                          # every long stretch shows its dashes
        run = _along(img, *s).min(axis=1) > 225
        assert run.any() and not run.all(), s
    swatches = {(m.group(4), m.group(6) or "") for m in SWATCH_LINE.finditer(legend_only(svg))}
    assert edge_style in swatches and pays_style in swatches


# ---- legends as the plots draw; labels that keep apart; ticks at the values a figure has -----------------

MARKS = {"triangle": re.compile(r'<path d="M[\d.]+,[\d.]+ L[\d.]+,[\d.]+ L[\d.]+,[\d.]+ Z" fill="#'),
         "hollow circle": re.compile(r'<circle [^>]*fill="white" stroke="#'),
         "dot": re.compile(r'<circle [^>]*r="[34]" fill="#'),
         "ring": re.compile(r'<circle [^>]*r="7" fill="none" stroke="#')}


@pytest.mark.parametrize("card", EVERY_CARD)
def test_legend_swatches_are_drawn_as_the_plot_draws_its_lines_and_marks(figures, card):
    for name, svg in figures[card].items():
        plot, legend = plot_only(svg), legend_only(svg)
        swatches = {(m.group(4), m.group(5), m.group(6) or "") for m in SWATCH_LINE.finditer(legend)}
        drawn = {(m.group(6), m.group(7), m.group(8) or "") for m in KEYED.finditer(plot)}
        assert drawn and drawn <= swatches, (card, name, drawn - swatches)
        for mark, pattern in MARKS.items():
            if name != "gain" and pattern.search(plot):
                assert pattern.search(legend), (card, name, mark)
        assert "<rect" not in legend or name == "gain", (card, name)   # no empty box standing for a mark


def test_a_dashed_series_has_a_dashed_swatch_on_the_picture(figures):
    svg = figures["int8-weights-kv"]["serving"]
    img = pixels(svg)
    legend = legend_only(svg)
    dashed = solid = 0
    for x0, y, x1, _, _, dash in SWATCH_LINE.findall(legend):
        rows = img[int(float(y)) - 1:int(float(y)) + 2, int(float(x0)) + 1:int(float(x1)) - 1]   # a 1 px line too
        ink = (np.ptp(rows, axis=2) > 40).any(axis=0)                  # coloured (white and grey are not)
        gaps = (np.abs(rows - 255).max(axis=2).max(axis=0) < 30).sum()    # white columns between the dashes
        assert ink.any()
        if dash:
            dashed += 1
            assert gaps >= 2, (y, dash)
        else:
            solid += 1
            assert gaps == 0, y
    assert dashed >= 2 and solid >= 2


def _crosses(box, path_d):
    """Whether a polyline (M/L path data) passes through a text box, sampled every pixel."""
    pts = [tuple(map(float, p)) for p in re.findall(r"[ML]([\d.]+),([\d.]+)", path_d)]
    x0, y0, x1, y1 = box
    for (ax, ay), (bx, by) in itertools.pairwise(pts):
        n = max(int(math.hypot(bx - ax, by - ay)), 1)
        if any(x0 <= ax + (bx - ax) * k / n <= x1 and y0 <= ay + (by - ay) * k / n <= y1 for k in range(n + 1)):
            return True
    return False


@pytest.mark.parametrize("card", ["kv2x", "int8-weights-kv", "kivi", "fp8-inference", "course-tp2"])
def test_roofline_labels_keep_off_the_roofs_and_apart(figures, card):
    # the cells pile up near intensity 1: each label still shows (or a numbered key), off every roof line,
    # and at least 2 px from every other label
    svg = figures[card]["roofline"]
    roofs = [m.group(1) for m in KEYED.finditer(svg) if m.group(1)]
    boxes = [(tuple(map(float, m.groups())), t) for m, (*_, t) in zip(BOX.finditer(svg), TEXT.findall(svg),
                                                                      strict=True)]
    plot = [(b, t) for b, t in boxes if b[0] > 72 and b[2] < 528 and b[1] > 48 and b[3] < 408]  # in the plot
    assert plot, card
    for b, t in plot:
        assert not any(_crosses(b, d) for d in roofs), (card, t)
    for (a, s), (b, t) in itertools.combinations(plot, 2):
        gap = 1.9                                                 # LABEL_GAP, less the boxes' printed rounding
        assert not (a[0] - gap < b[2] and b[0] - gap < a[2] and a[1] - gap < b[3] and b[1] - gap < a[3]), (card, s, t)


def test_serving_ticks_sit_at_the_simulated_rates(tmp_path):
    trace = ROOT / "triage" / "data" / "traces" / "azure-llm-inference-2023" / "AzureLLMInferenceTrace_conv.csv"
    w = tmp_path / "w.yaml"
    w.write_text((ROOT / "examples" / "serving-conv.yaml").read_text()
                 .replace("../triage/data/traces/azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv", str(trace))
                 .replace("requests: 2000", "requests: 300"))
    result = triage.evaluate(ROOT / "claims" / "int8-weights-kv.yaml", w)
    svg = figure_data(result)["serving"]
    assert "offered load (requests/s)" in svg
    (cell,) = [c for c in result.to_dict()["cells"] if "serving" in c]
    rates = [r["rate_rps"] for r in cell["serving"]["baseline"]["rates"]]
    # examples/serving-conv.yaml's rates [1, 2, 4, 6] and the ones the verdict reads (issue 47)
    assert {1.0, 2.0, 4.0, 6.0} <= set(rates)
    ticks = [(float(x), float(t)) for x, y, anchor, _, _, t in TEXT.findall(svg)
             if anchor == "middle" and 400 < float(y) < 430]
    assert ticks[0][1] == 1 and ticks[-1][1] == 6                 # the ends labelled; a label that would touch
    assert {v for _, v in ticks} <= {float(f"{r:.3g}") for r in rates}    # its neighbour is dropped, no other
    (x1, v1), (x2, v2) = ticks[0], ticks[-1]

    def at(v: float) -> float:                                    # rates 6x apart: a log axis, each at its value
        return x1 + (math.log(v) - math.log(v1)) * (x2 - x1) / (math.log(v2) - math.log(v1))
    for x, v in ticks:
        assert abs(x - at(v)) < 0.6
    dots = re.findall(r'<circle cx="([\d.]+)" cy="[\d.]+" r="3" fill="#', plot_only(svg))
    points = {round(float(x), 1) for x in dots}
    assert all(any(abs(x - at(r)) < 0.6 for r in rates) for x in points)    # every point at a simulated rate
    assert len(points) == len(set(rates))                         # and every simulated rate has its point
