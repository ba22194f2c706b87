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

Text inside the pictures is Chinese only where a CJK font is installed (else English), so that a
picture never shows empty boxes; the page around it is bilingual anyway.
"""
import base64
import io
import math

PNG_DPI = 100


def data_uri(png):
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


# ---------------------------------------------------------------- set-up

_FONT = None


def _setup():
    """Agg backend and a CJK font when there is one; returns the matplotlib.pyplot module."""
    global _FONT
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    from matplotlib import font_manager

    if _FONT is None:
        _FONT = ""
        for f in font_manager.fontManager.ttflist:
            if any(k in f.name for k in ("WenQuanYi", "Noto Sans CJK", "Noto Serif CJK", "Source Han", "SimHei",
                                         "Droid Sans Fallback", "AR PL")):
                _FONT = f.name
                break
    if _FONT:
        plt.rcParams["font.sans-serif"] = [_FONT, "DejaVu Sans"]
    plt.rcParams["axes.unicode_minus"] = False
    return plt


def _words(language):
    """(expected, yours, difference) in the picture's language."""
    zh = bool(_FONT) and language in ("zh", "both")
    if zh and language == "zh":
        return "期望", "你的结果", "差值"
    if zh:
        return "期望 expected", "你的 yours", "差 difference"
    return "expected", "yours", "difference"


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
    from matplotlib.patches import Rectangle

    for r, c in zip(*d.nonzero()):
        ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, edgecolor="#e0102a", linewidth=2.5))


def _axes_words(kind, language):
    zh = bool(_FONT) and language == "zh"
    if kind in ("mask", "weights"):
        return ("键 j" if zh else "key j"), ("查询 i" if zh else "query i")
    if kind == "encoding":
        return ("维度" if zh else "dimension"), ("位置 t" if zh else "position t")
    return "", ""


def _ticks(ax, shape, offset=(0, 0)):
    R, C = shape
    step_r, step_c = max(1, R // 12), max(1, C // 12)
    ax.set_yticks(range(0, R, step_r))
    ax.set_yticklabels([str(offset[0] + i) for i in range(0, R, step_r)])
    ax.set_xticks(range(0, C, step_c))
    ax.set_xticklabels([str(offset[1] + i) for i in range(0, C, step_c)])


def _save(fig, plt, tight=False):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=PNG_DPI, bbox_inches="tight" if tight else None)
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
    kind = cx["kind"]
    try:
        if kind == "shape":
            return _shape_picture(cx, language)
        if kind == "encoding":
            return _encoding_picture(cx, language)
        if kind in ("mask", "weights", "tensor"):
            return _grid_picture(cx, language, kind)
    except Exception:  # noqa: BLE001 - a picture must never cost a report
        return None
    return None


def _grid_picture(cx, language, kind):
    import numpy as np

    s = _slices(cx)
    if s is None:
        return None
    label, e, g, d = s
    plt = _setup()
    w_exp, w_got, w_diff = _words(language)
    labels = cx.get("labels") or ["expected", "got"]
    if labels[0] == "before":
        w_exp, w_got = ("之前 before", "之后 after") if _FONT and language != "en" else ("before", "after")
    R, C = e.shape
    panels = 3 if kind == "tensor" else 2
    cell = 0.42 if max(R, C) <= 12 else 0.22
    fig_w = max(2.4, C * cell + 1.4) * panels
    fig_h = max(2.0, R * cell + 1.3)
    fig, axes = plt.subplots(1, panels, figsize=(min(fig_w, 15), min(fig_h, 8)), squeeze=False)
    annotate = R * C <= 64  # small: the values are written in the cells, no colour bar needed
    fig.subplots_adjust(left=0.8 / fig.get_figwidth() * panels / 2, right=0.98 if annotate else 0.92,
                        bottom=0.9 / fig.get_figheight(), top=1 - 0.45 / fig.get_figheight(),
                        wspace=0.35 if annotate else 0.5)
    axes = axes[0]
    xl, yl = _axes_words(kind, language)
    offset = cx.get("offset", [0, 0]) if len(cx.get("offset", [])) == 2 else (0, 0)
    if kind == "mask":
        cmap = plt.matplotlib.colors.ListedColormap(["#f1f1f1", "#2b6cb0"])
        opts = {"cmap": cmap, "vmin": 0, "vmax": 1}
    elif kind == "weights":
        opts = {"cmap": "viridis", "vmin": 0.0, "vmax": max(1.0, float(np.nanmax(np.abs(np.r_[e.ravel(), g.ravel(), 0]))))}
    else:
        lim = float(np.nanmax(np.abs(np.r_[e[np.isfinite(e)], g[np.isfinite(g)], 1e-9])))
        opts = {"cmap": "coolwarm", "vmin": -lim, "vmax": lim}
    mats = [(e, w_exp, opts), (g, w_got, opts)]
    if kind == "tensor":
        diff = g - e
        lim = float(np.nanmax(np.abs(np.r_[diff[np.isfinite(diff)], 1e-9])))
        mats.append((diff, w_diff, {"cmap": "PuOr", "vmin": -lim, "vmax": lim}))
    for ax, (m, title, o) in zip(axes, mats):
        shown = np.where(np.isfinite(m), m, np.nan)
        im = ax.imshow(shown, interpolation="nearest", aspect="equal", **o)
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
                    ax.text(c, r, text, ha="center", va="center", fontsize=8,
                            color="white" if light else "black")
        if kind != "mask" and not annotate:
            fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return _save(fig, plt, tight=True)


def _encoding_picture(cx, language):
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
    fig = plt.figure(figsize=(12, 6.2), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[1, 1.25])
    line_axes = top.subplots(1, len(cols), squeeze=False)[0]
    t = np.arange(T) + offset[0]
    for ax, c in zip(line_axes, cols):
        wrong = bool(d[:, c].any())
        ax.plot(t, e[:, c], "--", color="#2b6cb0", linewidth=1.6, marker="o" if T <= 16 else None, markersize=4,
                label=w_exp)
        ax.plot(t, g[:, c], "-", color="#e0102a" if wrong else "#1b7f3b", linewidth=1.3,
                marker="x" if T <= 16 else None, markersize=5, label=w_got)
        ax.set_title(f"{label}[:, {offset[1] + c}]" + ("  ✗" if wrong else ""), fontsize=10,
                     color="#e0102a" if wrong else "black")
        ax.set_xlabel(yl)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    line_axes[0].legend(fontsize=8)
    lim = float(np.nanmax(np.abs(np.r_[e[np.isfinite(e)], g[np.isfinite(g)], 1e-9])))
    for ax, m, title in zip(bottom.subplots(1, 2), (e, g), (w_exp, w_got)):
        im = ax.imshow(np.where(np.isfinite(m), m, np.nan), cmap="RdBu_r", vmin=-lim, vmax=lim,
                       interpolation="nearest", aspect="auto")
        _outline(ax, d)
        ax.set_title(f"{title}  {label}", fontsize=10)
        ax.set_xlabel(xl)
        ax.set_ylabel(yl)
        _ticks(ax, m.shape, offset)
        bottom.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return _save(fig, plt, tight=True)


def _shape_picture(cx, language):
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
    for ax, (h, w), shape, title, color in ((axes[0], (he, we), exp, w_exp, "#2b6cb0"),
                                            (axes[1], (hg, wg), got, w_got, "#e0102a")):
        ax.add_patch(Rectangle((0, 0), w, h, facecolor=color, alpha=0.35, edgecolor=color, linewidth=2))
        ax.set_xlim(-0.5, W + 0.5)
        ax.set_ylim(H + 0.5, -0.5)
        ax.set_aspect("equal")
        ax.set_title(f"{title}: {tuple(shape)}", fontsize=10)
        ax.set_xticks([])
        ax.set_yticks([])
    return _save(fig, plt, tight=True)
