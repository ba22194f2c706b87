"""Pictures of a counterexample (matplotlib, Agg): expected vs the student's, wrong cells marked.

    picture(cx, language)  -> PNG bytes, or None when there is nothing worth drawing
    data_uri(png)          -> "data:image/png;base64,..." for a self-contained HTML page

`cx` is a TestResult.counterexample (report/model.py, built by properties/_harness.py).  What is
drawn depends on its "kind":

    mask      two boolean grids (query i down, key j across), wrong cells outlined in red
    weights   two heatmaps of attention weights in [0, 1], values written in small grids
    encoding  one line per column over the position t (expected dashed), and both tables as heatmaps
    tensor    heatmaps of expected, the student's, and their difference (only when asked for)
    shape     the expected and the actual shape as two rectangles, to scale

Words come from report/messages.py in the report's language; Chinese only where a CJK font is
installed (else English), so that a picture never shows an empty box: every character drawn is in
the font in use (`missing_glyphs`, checked by tests/test_report_views.py).  A grid's cells are at least
MIN_CELL pixels wide; weights and tensors get a colour bar; drawing prints nothing.
"""

import base64
import functools
import io
import json
import math

PNG_DPI = 100


def data_uri(png):
    """The "data:image/png;base64,..." URI of the PNG bytes `png`, for a self-contained HTML page."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


# ---------------------------------------------------------------- set-up

_FONT = None
# CJK fonts in order of preference, when more than one is installed; any other installed font that
# holds every Chinese character of the catalogue serves too (found by its characters, not its name)
CJK_NAMES = (
    "WenQuanYi Zen Hei",
    "Noto Sans CJK SC",
    "Source Han Sans SC",
    "Noto Sans SC",
    "Source Han Sans CN",
    "WenQuanYi Micro Hei",
    "Sarasa Gothic SC",
    "Noto Sans CJK TC",
    "Noto Sans CJK HK",
    "Noto Sans CJK JP",
    "Noto Sans CJK KR",
    "Source Han Sans",
    "Microsoft YaHei",
    "PingFang SC",
    "SimHei",
    "Droid Sans Fallback",
    "Noto Serif CJK SC",
    "Source Han Serif SC",
    "AR PL UMing CN",
    "AR PL UKai CN",
    "AR PL UMing",
    "AR PL UKai",
)
# parts of a font's name or file name that make it worth a look first (what decides is its characters)
_CJK_HINTS = (
    "cjk",
    "hansans",
    "hanserif",
    "wqy",
    "wenquanyi",
    "zenhei",
    "microhei",
    "simhei",
    "yahei",
    "pingfang",
    "heiti",
    "songti",
    "fallback",
    "uming",
    "ukai",
    "sarasa",
    "notosanssc",
    "notosanstc",
    "notoserifsc",
)


@functools.lru_cache(maxsize=1)
def cjk_characters():
    """Every Chinese character (and CJK punctuation) the pictures can draw: those of the message
    catalogue and of the labels it translates.  A font is used for Chinese only when it holds them all."""
    from .messages import _CJK, GLOSSARY, HEADS, MESSAGES

    words = [w for v in MESSAGES.values() for w in (v[0], *v[2:])]
    words += [w for k, v in GLOSSARY.items() for w in (k, v[0])] + [zh for zh, _ in HEADS]
    return frozenset(ch for w in words for ch in _CJK.findall(w))


def _open_font(path, face_index=0):
    """matplotlib's FT2Font of the face `face_index` of the font file `path` (a face other than the
    first of a .ttc needs matplotlib 3.10 or later: before, matplotlib used the first face only)."""
    from matplotlib.ft2font import FT2Font

    return FT2Font(str(path), face_index=face_index) if face_index else FT2Font(str(path))


def font_covers(path, characters, face_index=0):
    """Whether the font file `path` (its face `face_index`) has a glyph for every one of `characters`."""
    try:
        font = _open_font(path, face_index)
    except Exception:  # noqa: BLE001 - an unreadable font file holds nothing
        return False
    return all(font.get_char_index(ord(ch)) for ch in characters)


def _looks_cjk(name, path):
    key = (name + " " + str(path).rsplit("/", 1)[-1]).lower()
    key = key.replace(" ", "").replace("-", "").replace("_", "")
    return name in CJK_NAMES or any(h in key for h in _CJK_HINTS)


def _rank(f):
    """The order a font (a font_manager.FontEntry) is tried in: known names first, in CJK_NAMES's
    order, then the others (those that look CJK first) by name; in a family, the upright regular
    face first."""
    weight = f.weight if isinstance(f.weight, int) else 400
    return (
        CJK_NAMES.index(f.name) if f.name in CJK_NAMES else len(CJK_NAMES),
        not _looks_cjk(f.name, f.fname),
        f.style != "normal",
        abs(weight - 400),
        f.name,
        f.fname,
        getattr(f, "index", 0),
    )


def _fontconfig_chinese_files():
    """The font files fontconfig says support Chinese (`fc-list :lang=zh`), or None without fontconfig."""
    import shutil
    import subprocess

    if not shutil.which("fc-list"):
        return None
    try:
        out = subprocess.run(
            ["fc-list", "--format", "%{file}\n", ":lang=zh"], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {line for line in out.splitlines() if line}


def _cjk_font():
    """The name of an installed font that holds every Chinese character the pictures draw, or "".

    The candidates are the fonts of matplotlib's font list whose name looks CJK, and the font files
    fontconfig lists for Chinese, whatever they are called (without fontconfig, and no candidate
    yet, every font file); the first, in the order of `_rank`, that holds them all is used.
    matplotlib's list is cached on disk and may predate a font's installation: a file it lacks is
    added to it, so the choice does not depend on the cache's age.  When the first of CJK_NAMES is
    in matplotlib's list, fontconfig is not asked (nothing would be preferred to it)."""
    from matplotlib import font_manager

    fm = font_manager.fontManager
    chars = cjk_characters()

    def best(entries):
        for f in sorted(entries, key=_rank):
            if font_covers(f.fname, chars, getattr(f, "index", 0)):
                return f.name
        return ""

    looks = [f for f in fm.ttflist if _looks_cjk(f.name, f.fname)]
    name = best(looks)
    if name == CJK_NAMES[0]:
        return name
    listed = {f.fname for f in fm.ttflist}
    files = _fontconfig_chinese_files()
    if files is None:
        if name:
            return name
        files = set(font_manager.findSystemFonts()) | listed
    for path in sorted(files - listed):
        try:
            fm.addfont(path)
        except Exception:  # noqa: BLE001 - an unreadable font file: try the next
            continue
    return best(looks + [f for f in fm.ttflist if f.fname in files])


def _setup():
    """Agg backend, a CJK font when there is one (DejaVu Sans behind it for any glyph it lacks);
    returns the matplotlib.pyplot module.  Nothing is printed: matplotlib's font look-up notes
    ("findfont: Failed to find font weight normal for <the CJK font>, now using 500") are
    silenced, the font is fine."""
    global _FONT
    import logging

    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)
    if _FONT is None:
        _FONT = _cjk_font()
    plt.rcParams["font.family"] = [_FONT, "DejaVu Sans"] if _FONT else ["DejaVu Sans"]
    plt.rcParams["axes.unicode_minus"] = False
    return plt


def font_in_use():
    """The font the pictures' text is drawn with (the CJK font, or DejaVu Sans)."""
    _setup()
    return _FONT or "DejaVu Sans"


def font_file_in_use():
    """(path, face index) of the font file matplotlib draws the pictures' regular text with."""
    from matplotlib import font_manager

    path = font_manager.findfont(font_manager.FontProperties(family=font_in_use()), fallback_to_default=False)
    return str(path), getattr(path, "face_index", 0)


def missing_glyphs(fig):
    """[(text, character)] of every text in the figure `fig` with a character that none of the
    fonts it is drawn with holds (it would show as an empty box)."""
    from matplotlib import font_manager
    from matplotlib.text import Text

    fig.canvas.draw()
    out = []
    cache = {}
    for t in fig.findobj(Text):
        s = t.get_text()
        if not s or not t.get_visible():
            continue
        prop = t.get_fontproperties()
        try:
            paths = font_manager.fontManager._find_fonts_by_props(prop)
        except Exception:  # noqa: BLE001 - older matplotlib: the first font only
            paths = [font_manager.findfont(prop)]
        fonts = []
        for p in paths:  # a path, or (matplotlib 3.10+) a FontPath: a path and a face of a .ttc
            key = (str(p), getattr(p, "face_index", 0))
            if key not in cache:
                cache[key] = _open_font(*key)
            fonts.append(cache[key])
        for ch in set(s):
            if ch.isspace() or ch == "$":
                continue
            if not any(f.get_char_index(ord(ch)) for f in fonts):
                out.append((s, ch))
    return out


def _zh(language):
    """Chinese in the pictures: only in zh / both, and only with a CJK font (no empty boxes)."""
    return bool(_FONT) and language in ("zh", "both")


def _w(key, language):
    """A word of the catalogue for a picture: in the picture's language (English without a CJK font)."""
    from .messages import say

    return say(key, language if _zh(language) else "en", sep=" ")


def _words(language):
    """(expected, yours, difference) in the picture's language."""
    return _w("word.expected", language), _w("word.got", language), _w("word.difference", language)


# ---------------------------------------------------------------- nested lists


def _array(x):
    import numpy as np

    def num(v):
        if isinstance(v, str):
            return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}.get(v, math.nan)
        return float(v) if v is not None else math.nan

    def walk(v):
        return [walk(u) for u in v] if isinstance(v, list) else num(v)

    return np.array(walk(x), dtype=float)


def _slices(cx):
    """(label, expected 2-D, got 2-D, differs 2-D) of the slice to draw: the first one with a wrong
    entry, leading axes indexed away; None when the counterexample has no pair of arrays."""
    import numpy as np

    if "expected" not in cx or "got" not in cx:
        return None
    e, g = _array(cx["expected"]), _array(cx["got"])
    d = _array(cx["differs"]).astype(bool) if "differs" in cx else ~np.isclose(e, g, equal_nan=True)
    if e.shape != g.shape or e.ndim == 0 or e.size == 0:
        return None
    if e.ndim == 1:
        e, g, d = e[None], g[None], d[None]
    lead = ()
    if e.ndim > 2:
        flat = d.reshape(-1, *d.shape[-2:])
        k = int(np.argmax(flat.reshape(flat.shape[0], -1).any(1))) if d.any() else 0
        lead = np.unravel_index(k, d.shape[:-2])
        e, g, d = e[lead], g[lead], d[lead]
    index = list(cx.get("index", [])) + [int(i) for i in lead]
    label = cx.get("what", "") + (f"[{', '.join(map(str, index))}]" if index else "")
    return label, e, g, d


def _outline(ax, d, r0=0, c0=0):
    """A red frame around each wrong cell: one collection, drawn in one go (a patch per cell cost
    most of a picture's time when a whole table is wrong)."""
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle

    cells = [Rectangle((c - 0.5, r - 0.5), 1, 1) for r, c in zip(*d.nonzero())]
    if cells:
        ax.add_collection(PatchCollection(cells, facecolor="none", edgecolor="#e0102a", linewidth=2.5), autolim=False)


def _axes_words(kind, language):
    if kind in ("mask", "weights"):
        return _w("axis.key", language), _w("axis.query", language)
    if kind == "encoding":
        return _w("axis.dimension", language), _w("axis.position", language)
    return "", ""


def _ticks(ax, shape, offset=(0, 0)):
    R, C = shape
    step_r, step_c = max(1, R // 12), max(1, C // 12)
    ax.set_yticks(range(0, R, step_r))
    ax.set_yticklabels([str(offset[0] + i) for i in range(0, R, step_r)])
    ax.set_xticks(range(0, C, step_c))
    ax.set_xticklabels([str(offset[1] + i) for i in range(0, C, step_c)])


def _save(fig, plt, tight=False):
    """PNG bytes of `fig`.  tight: cropped to what is drawn.  The figures are laid out by hand,
    so the figure itself is used when everything drawn lies inside it: that needs one drawing,
    where bbox_inches="tight" draws twice (about 40% of a picture's time); a figure with text
    reaching outside its canvas is drawn again, cropped, so nothing is ever cut off."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=PNG_DPI)
    if tight:
        try:
            box = fig.get_tightbbox(fig.canvas.get_renderer())
            w, h = fig.get_size_inches()
            inside = box.x0 >= -0.01 and box.y0 >= -0.01 and box.x1 <= w + 0.01 and box.y1 <= h + 0.01
        except Exception:  # noqa: BLE001 - when in doubt, crop
            inside = False
        if not inside:
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=PNG_DPI, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


# ---------------------------------------------------------------- the pictures

PICTURED = ("mask", "weights", "encoding", "shape")  # kinds drawn by default


def picture(cx, language="both", kinds=PICTURED):
    """PNG bytes of the counterexample `cx`, or None if it has nothing to draw.

    Only `kinds` are drawn: by default not "tensor" (LSTM states, outputs...), whose tables on the
    page say as much, since a picture costs about half a second and a class has many failures."""
    if not isinstance(cx, dict) or cx.get("kind") not in kinds:
        return None
    try:
        key = json.dumps(cx, sort_keys=True)
    except (TypeError, ValueError):
        return None
    return _picture(key, language, tuple(kinds))


@functools.lru_cache(maxsize=256)
def _picture(key, language, kinds):
    """The PNG of a counterexample (its JSON `key`), drawn once per process: classmates who make
    the same mistake share the pinned examples that show it, and so their pictures."""
    try:
        fig = figure(json.loads(key), language, kinds)
        if fig is None:
            return None
        return _save(fig, _setup(), tight=True)
    except Exception:  # noqa: BLE001 - a picture must never cost a report
        return None


def figure(cx, language="both", kinds=PICTURED):
    """The matplotlib figure of `picture` (tests look at its texts and sizes), or None."""
    if not isinstance(cx, dict) or cx.get("kind") not in kinds:
        return None
    kind = cx["kind"]
    if kind == "shape":
        return _shape_figure(cx, language)
    if kind == "encoding":
        return _encoding_figure(cx, language)
    if kind in ("mask", "weights", "tensor"):
        return _grid_figure(cx, language, kind)
    return None


MIN_CELL = 40  # pixels: the smallest cell of a small grid (at most 12 x 12), big enough to read its value
MIN_CELL_LARGE = 24  # pixels: the smallest cell of a larger grid (a window of at most 24 x 16)


def _grid_figure(cx, language, kind):
    """Heatmaps of expected and the student's (and their difference for "tensor"), side by side,
    wrong cells outlined; each cell at least MIN_CELL (MIN_CELL_LARGE) pixels; small grids carry
    their values, weights and tensors a colour bar.  The figure is laid out in inches, by hand."""
    import numpy as np

    s = _slices(cx)
    if s is None:
        return None
    label, e, g, d = s
    plt = _setup()
    w_exp, w_got, w_diff = _words(language)
    labels = cx.get("labels") or ["expected", "got"]
    if labels[0] == "before":
        w_exp, w_got = _w("word.before", language), _w("word.after", language)
    R, C = e.shape
    small = max(R, C) <= 12
    cs = max((MIN_CELL if small else MIN_CELL_LARGE) / PNG_DPI, min(0.55, 5.0 / max(R, C)))  # inches per cell
    annotate = small and R * C <= 64
    bar = kind in ("weights", "tensor")
    panels = 3 if kind == "tensor" else 2
    left, gap, bar_w, bar_room = 0.8, 0.45, 0.14, (0.75 if bar else 0.0)
    cell_h = max(cs, 1.2 / R)  # a grid at least as high as the axis label beside it
    cell_w = cell_h if C <= 2 else cs
    img_w, img_h = C * cell_w, R * cell_h
    slot = max(img_w, 1.9)  # room for the title above a narrow grid
    top, bottom = 0.5, 0.75
    W = panels * (left + slot + bar_room) + (panels - 1) * gap + 0.2
    H = top + img_h + bottom
    fig = plt.figure(figsize=(W, H))
    xl, yl = _axes_words(kind, language)
    offset = cx.get("offset", [0, 0]) if len(cx.get("offset", [])) == 2 else (0, 0)
    if kind == "mask":
        cmap = plt.matplotlib.colors.ListedColormap(["#f1f1f1", "#2b6cb0"])
        opts = {"cmap": cmap, "vmin": 0, "vmax": 1}
    elif kind == "weights":
        opts = {
            "cmap": "viridis",
            "vmin": 0.0,
            "vmax": max(1.0, float(np.nanmax(np.abs(np.r_[e.ravel(), g.ravel(), 0])))),
        }
    else:
        lim = float(np.nanmax(np.abs(np.r_[e[np.isfinite(e)], g[np.isfinite(g)], 1e-9])))
        opts = {"cmap": "coolwarm", "vmin": -lim, "vmax": lim}
    mats = [(e, w_exp, opts), (g, w_got, opts)]
    if kind == "tensor":
        diff = g - e
        lim = float(np.nanmax(np.abs(np.r_[diff[np.isfinite(diff)], 1e-9])))
        mats.append((diff, w_diff, {"cmap": "PuOr", "vmin": -lim, "vmax": lim}))
    x = 0.1
    for m, title, o in mats:
        x0 = x + left + (slot - img_w) / 2
        ax = fig.add_axes((x0 / W, bottom / H, img_w / W, img_h / H))
        shown = np.where(np.isfinite(m), m, np.nan)
        im = ax.imshow(shown, interpolation="nearest", aspect="auto", **o)
        _outline(ax, d)
        ax.set_title(f"{title}  {label}", fontsize=10)
        ax.set_xlabel(xl)
        ax.set_ylabel(yl)
        _ticks(ax, m.shape, offset)
        if annotate:
            for r in range(R):
                for c in range(C):
                    v = m[r, c]
                    text = ("T" if v > 0.5 else "F") if kind == "mask" else (f"{v:.2f}" if math.isfinite(v) else str(v))
                    light = kind == "mask" and v > 0.5 or kind == "weights" and v < 0.5 * o["vmax"]
                    ax.text(c, r, text, ha="center", va="center", fontsize=8, color="white" if light else "black")
        if bar:
            cax = fig.add_axes(((x0 + img_w + 0.12) / W, bottom / H, bar_w / W, img_h / H))
            cb = fig.colorbar(im, cax=cax)
            cb.ax.tick_params(labelsize=8)
            if kind == "weights":
                cb.set_label(_w("axis.weight", language), fontsize=8)
        x += left + slot + bar_room + gap
    return fig


def _encoding_figure(cx, language):
    """Top: one small plot per column (expected dashed, the student's solid) over the position t, so
    that a swapped sin / cos or a wrong frequency shows at a glance; below: both tables as heatmaps."""
    import numpy as np
    from matplotlib.ticker import MaxNLocator

    s = _slices(cx)
    if s is None:
        return None
    label, e, g, d = s
    plt = _setup()
    w_exp, w_got, _ = _words(language)
    xl, yl = _axes_words("encoding", language)
    T, D = e.shape
    offset = cx.get("offset", [0, 0]) if len(cx.get("offset", [])) == 2 else (0, 0)
    cols = list(range(min(D, 4)))
    bad_cols = [c for c in range(D) if d[:, c].any()]
    if bad_cols and not any(c in cols for c in bad_cols):
        cols = cols[:2] + bad_cols[:2]
    # laid out by hand (a grid of 2 rows): constrained layout with sub-figures costs seconds a picture
    fig = plt.figure(figsize=(12, 6.6))
    grid = fig.add_gridspec(
        2, 8, height_ratios=[1, 1.25], left=0.06, right=0.97, bottom=0.08, top=0.95, hspace=0.45, wspace=1.2
    )
    n = len(cols)
    line_axes = [fig.add_subplot(grid[0, 2 * k : 2 * k + 2]) for k in range(n)]
    t = np.arange(T) + offset[0]
    for ax, c in zip(line_axes, cols):
        wrong = bool(d[:, c].any())
        ax.plot(
            t, e[:, c], "--", color="#2b6cb0", linewidth=1.6, marker="o" if T <= 16 else None, markersize=4, label=w_exp
        )
        ax.plot(
            t,
            g[:, c],
            "-",
            color="#e0102a" if wrong else "#1b7f3b",
            linewidth=1.3,
            marker="x" if T <= 16 else None,
            markersize=5,
            label=w_got,
        )
        ax.set_title(
            f"{label}[:, {offset[1] + c}]" + (" " + _w("word.wrong", language) if wrong else ""),
            fontsize=10,
            color="#e0102a" if wrong else "black",
        )
        ax.set_xlabel(yl)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    line_axes[0].legend(fontsize=8)
    lim = float(np.nanmax(np.abs(np.r_[e[np.isfinite(e)], g[np.isfinite(g)], 1e-9])))
    for k, (m, title) in enumerate(zip((e, g), (w_exp, w_got))):
        ax = fig.add_subplot(grid[1, 4 * k : 4 * k + 4])
        im = ax.imshow(
            np.where(np.isfinite(m), m, np.nan),
            cmap="RdBu_r",
            vmin=-lim,
            vmax=lim,
            interpolation="nearest",
            aspect="auto",
        )
        _outline(ax, d)
        ax.set_title(f"{title}  {label}", fontsize=10)
        ax.set_xlabel(xl)
        ax.set_ylabel(yl)
        _ticks(ax, m.shape, offset)
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return fig


def _shape_figure(cx, language):
    exp, got = cx.get("expected_shape") or cx.get("shape"), cx.get("got_shape") or cx.get("shape")
    if "got_shape" not in cx and "expected_shape" not in cx:
        return None
    if not exp or not got or len(exp) == 0 or len(got) == 0:
        return None
    plt = _setup()
    from matplotlib.patches import Rectangle

    w_exp, w_got, _ = _words(language)

    def hw(shape):
        return (shape[-2] if len(shape) > 1 else 1), shape[-1]

    (he, we), (hg, wg) = hw(exp), hw(got)
    H, W = max(he, hg, 1), max(we, wg, 1)
    fig, axes = plt.subplots(1, 2, figsize=(7, 3.2))
    for ax, (h, w), shape, title, color in (
        (axes[0], (he, we), exp, w_exp, "#2b6cb0"),
        (axes[1], (hg, wg), got, w_got, "#e0102a"),
    ):
        ax.add_patch(Rectangle((0, 0), w, h, facecolor=color, alpha=0.35, edgecolor=color, linewidth=2))
        ax.set_xlim(-0.5, W + 0.5)
        ax.set_ylim(H + 0.5, -0.5)
        ax.set_aspect("equal")
        ax.set_title(f"{title}: {tuple(shape)}", fontsize=10)
        ax.set_xticks([])
        ax.set_yticks([])
    return fig
