#!/usr/bin/python3
"""Shared style of Tessera's paper figures (analysis/plot_*.py).

One look for every figure: sized for a two-column paper (3.3 in single-column,
6.9 in double-column), 8 pt text, vector PDF with embedded TrueType fonts
(pdf.fonttype 42) plus a 300 dpi PNG, colour-blind-safe colours (Okabe-Ito) with
one fixed colour per platform and per cause, so a platform looks the same in
every figure.

This module holds the look only. The scripts' other jobs have their own modules (issue 32
item 6): reading report.json files and sweep results, with InputError and `main_guard` (a
one-line "script: error: ..." message, exit status 2), in report_io.py; writing tables and
the docs' generated sections in doc_sections.py; running tessera in run_tessera.py; axis
labels and units of sweep figures in metric_labels.py.
"""
import os
import tempfile

import matplotlib

from doc_sections import umask_file_mode
from report_io import accel_precision, spec_of

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SINGLE_COLUMN_IN = 3.3
DOUBLE_COLUMN_IN = 6.9

# Okabe-Ito palette (Wong, Nature Methods 2011): distinguishable with colour-blindness.
OKABE_ITO = ["#000000", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7"]

# Fixed colours for the shipped platforms; others get the remaining palette in order.
PLATFORM_COLORS = {
    "accelerator": "#0072B2",
    "haswell-e5-2699v3": "#E69F00",
    "k80": "#009E73",
    "xeon-8480": "#D55E00",
    "epyc-9654": "#CC79A7",
    "a100": "#56B4E9",
    "h100-sxm": "#000000",
    "h200": "#7F7F7F",
    "host": "#F0E442",
}
PLATFORM_MARKERS = {
    "accelerator": "*",
    "haswell-e5-2699v3": "s",
    "k80": "^",
    "xeon-8480": "D",
    "epyc-9654": "P",
    "a100": "v",
    "h100-sxm": "o",
    "h200": "X",
    "host": "h",
}
_EXTRA = ["#882255", "#44AA99", "#999933", "#AA4499", "#117733", "#332288", "#DDCC77", "#88CCEE"]

# The accelerator's cycle breakdown (DESIGN.md §6), in the report's order, and the
# baselines' time terms. Blues/greens for the array doing work, warm colours for stalls.
ACCEL_BUCKETS = ["array_active", "weight_shift", "weight_stall", "input_stall", "raw_stall", "non_matrix", "pcie"]
ACCEL_BUCKET_COLORS = {
    "array_active": "#0072B2",
    "weight_shift": "#56B4E9",
    "weight_stall": "#D55E00",
    "input_stall": "#E69F00",
    "raw_stall": "#CC79A7",
    "non_matrix": "#009E73",
    "pcie": "#999999",
}
BASELINE_TERMS = ["compute", "memory", "on_chip", "overhead", "host_link"]
BASELINE_TERM_COLORS = {
    "compute": "#332288",
    "memory": "#882255",
    "on_chip": "#44AA99",
    "overhead": "#DDCC77",
    "host_link": "#BBBBBB",
}
LABELS = {
    "array_active": "array active",
    "weight_shift": "weight shift",
    "weight_stall": "weight stall",
    "input_stall": "input stall",
    "raw_stall": "RAW stall",
    "non_matrix": "non-matrix",
    "pcie": "PCIe",
    "compute": "compute",
    "memory": "DRAM",
    "on_chip": "on-chip",
    "overhead": "launch/dispatch",
    "host_link": "host link",
}


def use():
    """Applies the figure style (call before creating figures)."""
    plt.rcParams.update({
        "pdf.fonttype": 42,  # embed TrueType fonts (no Type 3) in PDF
        "ps.fonttype": 42,
        "font.family": "DejaVu Sans",
        "font.size": 8,
        "axes.titlesize": 8,
        "axes.labelsize": 8,
        "xtick.labelsize": 7,
        "ytick.labelsize": 7,
        "legend.fontsize": 6.5,
        "legend.frameon": False,
        "axes.linewidth": 0.6,
        "lines.linewidth": 1.2,
        "lines.markersize": 4,
        "xtick.major.width": 0.6,
        "ytick.major.width": 0.6,
        "xtick.minor.width": 0.4,
        "ytick.minor.width": 0.4,
        "axes.grid": True,
        "grid.linewidth": 0.3,
        "grid.alpha": 0.5,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "savefig.dpi": 300,
        "savefig.bbox": "tight",
        "savefig.pad_inches": 0.02,
        "figure.dpi": 100,
        "svg.fonttype": "none",
        "pdf.compression": 6,
        # No creation dates in the output: the same inputs give the same PDF.
    })


def figure(width=SINGLE_COLUMN_IN, height=None, **kwargs):
    """A figure of the paper's column width; height defaults to a 4:3 aspect."""
    use()
    if height is None:
        height = width * 0.75
    return plt.subplots(figsize=(width, height), **kwargs)


def platform_color(key, index=0):
    return PLATFORM_COLORS.get(key, _EXTRA[index % len(_EXTRA)])


def platform_marker(key, index=0):
    return PLATFORM_MARKERS.get(key, "osD^vP*X"[index % 8])


def save(fig, out_base):
    """Writes OUT_BASE.pdf and OUT_BASE.png (each via a temporary file and a rename); returns the paths.

    OUT_BASE may end in .pdf or .png; the extension is replaced.
    """
    base, ext = os.path.splitext(out_base)
    if ext.lower() not in (".pdf", ".png"):
        base = out_base
    directory = os.path.dirname(base) or "."
    os.makedirs(directory, exist_ok=True)
    paths = []
    for fmt in ("pdf", "png"):
        path = f"{base}.{fmt}"
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=f".{fmt}", dir=directory)
        os.close(fd)
        try:
            # Fixed metadata: no creation date, so the PDF is the same for the same inputs.
            metadata = {"CreationDate": None, "Creator": "Tessera analysis"} if fmt == "pdf" else {"Software": None}
            fig.savefig(tmp, format=fmt, metadata=metadata)
            os.chmod(tmp, umask_file_mode())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        paths.append(path)
    plt.close(fig)
    return paths


def accel_label(report):
    return f"{report['arch']['name']} ({accel_precision(report)})"


SHORT_NAMES = {
    "haswell-e5-2699v3": "Haswell E5-2699v3",
    "k80": "K80 die",
    "xeon-8480": "Xeon 8480+",
    "epyc-9654": "EPYC 9654",
    "a100": "A100",
    "h100-sxm": "H100 SXM",
    "h200": "H200",
    "host": "this host",
}


TINY_NAMES = {
    "haswell-e5-2699v3": "Haswell",
    "k80": "K80",
    "xeon-8480": "Xeon AMX",
    "epyc-9654": "EPYC",
    "a100": "A100",
    "h100-sxm": "H100",
    "h200": "H200",
    "host": "host",
}


def tiny_name(b):
    """A few characters for tick labels."""
    tiny = TINY_NAMES.get(spec_of(b), spec_of(b))
    return tiny + (":" + b["name"].split(":", 1)[1] if ":" in b["name"] else "")


def short_name(b):
    return SHORT_NAMES.get(spec_of(b), spec_of(b))


def baseline_label(b):
    name = b.get("display_name") or b["name"]
    prec = b.get("precision")
    tag = ", measured" if b.get("measured") else ""
    return f"{name} ({prec}{tag})" if prec else name


def short_baseline_label(b):
    """'K80 die fp32', 'H100 SXM int8', 'this host fp32 (measured)': for legends of column-wide figures."""
    prec = b.get("precision")
    label = f"{short_name(b)} {prec}" if prec else short_name(b)
    return label + (" (measured)" if b.get("measured") else "")


