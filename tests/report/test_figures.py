"""The figures as a reader sees them: every shipped card's figures rendered to pixels (resvg) and checked by
geometry. Each text carries the box the layout reserved for it (data-box); the boxes must be disjoint and
inside the canvas, and every pixel the text actually inks must lie inside its box — so no label overlaps
another or is clipped on the picture itself. A heatmap cell where a side does not fit must carry no colour."""

import io
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


def labels_only(svg: str) -> str:
    head = svg[:svg.index(">", svg.index("<svg")) + 1]
    group = svg[svg.index('<g id="labels">'):svg.index("</g>", svg.index('<g id="labels">')) + 4]
    return f'{head}<rect width="100%" height="100%" fill="white"/>{group}</svg>'


@pytest.fixture(scope="module")
def figures():
    return {p.stem: figure_data(triage.evaluate(p)) for p in CARDS}


def test_every_memo_has_its_figures(figures):
    # the default matrix has a workload with traffic (serve-conv): its memo draws the serving figure too
    for card, figs in figures.items():
        assert set(figs) == {"roofline", "gain", "latency", "serving"}, card


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


@pytest.mark.parametrize("card", [p.stem for p in CARDS])
def test_no_point_sits_above_its_chips_roofs(figures, card):
    # a roofline plots steps at full efficiency: no step can attain more than its chip's highest roof
    svg = figures[card]["roofline"]
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
