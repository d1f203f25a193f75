#!/usr/bin/python3
"""Roofline figure in the style of the TPU paper (Jouppi et al., ISCA 2017, Figs. 5-8).

Usage:
  /usr/bin/python3 analysis/plot_roofline.py out/*/report.json --out docs/figures/roofline
      [--flavour weight|dram] [--platforms tpu-v1,k80,...] [--layers] [--title TEXT]
      [--width 3.3] [--height 2.7] [--no-labels] [--panels]

Log-log: x is operational intensity, y is tera-operations per second. One roof per
platform: the accelerator of the reports at each precision they ran (its peak for
that precision and its weight-memory bandwidth), and every baseline found in the
reports' "baselines" arrays (write them with `tessera run --baseline ...`). Each
workload is a point under each platform's roof at its achieved TOPS, labelled with
the workload name on the accelerator's roof.

Flavours (DESIGN.md §6): "weight" (default; the paper's x-axis) = MAC operations per
byte of weight memory read; "dram" = operations per byte of all off-chip traffic.
--layers plots each matrix layer of a single report instead of whole workloads.
Writes OUT.pdf and OUT.png. Malformed input: one-line error, exit status 2.
"""
import argparse
import math
import sys

import report_io
import style


def accel_roof(report, flavour):
    """(peak_tops, bandwidth_gb_per_s, x, achieved) of the accelerator in one report."""
    roof = report["roofline"]
    path = report["_path"]
    peak = report_io.number(roof["peak_tops"], f"{path}: roofline.peak_tops")
    tops = report_io.number(report["summary"]["tops"], f"{path}: summary.tops")
    if flavour == "weight":
        wm = roof["weight_memory"]
        bw = report_io.number(wm["bandwidth_gb_per_s"], f"{path}: roofline.weight_memory.bandwidth_gb_per_s")
        x = report_io.number(report["summary"]["oi_macs_per_weight_byte"], f"{path}: summary.oi_macs_per_weight_byte")
    else:
        if "dram" not in roof:
            raise report_io.InputError(f"{path}: roofline has no 'dram' entry")
        bw = report_io.number(roof["dram"]["bandwidth_gb_per_s"], f"{path}: roofline.dram.bandwidth_gb_per_s")
        x = report_io.number(roof["dram"]["oi_ops_per_byte"], f"{path}: roofline.dram.oi_ops_per_byte")
    return peak, bw, x, tops


def baseline_roof(report, b, flavour):
    path = report["_path"]
    roof = b["roofline"]
    what = f"{path}: baseline {b['name']}"
    peak = report_io.number(roof.get("peak_tops"), f"{what}: roofline.peak_tops")
    tops = report_io.number(b["summary"]["tops"], f"{what}: summary.tops")
    if flavour == "weight":
        wm = roof.get("weight_memory") or {}
        bw = report_io.number(wm.get("bandwidth_gb_per_s"), f"{what}: roofline.weight_memory.bandwidth_gb_per_s")
        oi = wm.get("oi_macs_per_byte")
        if oi is None and "oi_ops_per_byte" in wm:
            oi = wm["oi_ops_per_byte"] / 2
        x = report_io.number(oi, f"{what}: roofline.weight_memory.oi_macs_per_byte")
    else:
        d = roof.get("dram") or {}
        bw = report_io.number(d.get("bandwidth_gb_per_s"), f"{what}: roofline.dram.bandwidth_gb_per_s")
        x = report_io.number(d.get("oi_ops_per_byte"), f"{what}: roofline.dram.oi_ops_per_byte")
    return peak, bw, x, tops


def attainable(peak, bw, x, flavour):
    """TOPS under the roof at intensity x (MACs/byte for 'weight', ops/byte for 'dram')."""
    ops_per_byte = 2 * x if flavour == "weight" else x
    return min(peak, bw * 1e9 * ops_per_byte / 1e12)


def collect(reports, flavour, wanted, layers):
    """Platforms keyed by (kind, name, precision): roof and points [(label, x, y)]."""
    platforms = {}

    def add(key, label, color_key, peak, bw, point):
        p = platforms.setdefault(key, {"label": label, "color_key": color_key, "peak": peak, "bw": bw, "points": []})
        if not math.isclose(p["peak"], peak, rel_tol=1e-9) or not math.isclose(p["bw"], bw, rel_tol=1e-9):
            # Same platform name, other figures (a different config under the same name): keep apart.
            key = key + (f"{peak:g}/{bw:g}",)
            p = platforms.setdefault(key, {"label": f"{label} [{peak:g} TOPS, {bw:g} GB/s]", "color_key": color_key,
                                           "peak": peak, "bw": bw, "points": []})
        if point is not None:
            p["points"].append(point)

    for r in reports:
        name = r["arch"]["name"]
        if not wanted or name in wanted or "accelerator" in wanted:
            peak, bw, x, tops = accel_roof(r, flavour)
            if layers:
                add(("accel", name, report_io.accel_precision(r)), style.accel_label(r), "accelerator", peak, bw, None)
                for lp in r["roofline"].get("layers", []):
                    lx = lp.get("oi_ops_per_weight_byte", 0) / 2
                    if lx > 0 and lp.get("achieved_tops", 0) > 0:
                        add(("accel", name, report_io.accel_precision(r)), style.accel_label(r), "accelerator", peak, bw,
                            (lp["name"], lx, lp["achieved_tops"]))
            else:
                add(("accel", name, report_io.accel_precision(r)), style.accel_label(r), "accelerator", peak, bw,
                    (r["workload"]["name"], x, tops))
        for b in report_io.baselines_of(r):
            if wanted and b["name"] not in wanted:
                continue
            peak, bw, x, tops = baseline_roof(r, b, flavour)
            key = ("base", b["name"], b.get("precision", ""))
            if layers:
                add(key, style.short_baseline_label(b), report_io.spec_of(b), peak, bw, None)
                for lp in b["roofline"].get("layers", []):
                    lx = lp.get("oi_ops_per_weight_byte", 0) / 2
                    if lx > 0 and lp.get("achieved_tops", 0) > 0:
                        add(key, style.short_baseline_label(b), report_io.spec_of(b), peak, bw, (lp["name"], lx, lp["achieved_tops"]))
            else:
                add(key, style.short_baseline_label(b), report_io.spec_of(b), peak, bw, (r["workload"]["name"], x, tops))
    return platforms


ACCEL_LINESTYLES = ["-", "-.", ":", (0, (6, 1.5, 1, 1.5, 1, 1.5))]
ACCEL_MARKERS = ["*", "p", "H", "8"]


# Label positions tried in turn (offset in points, alignment): the first whose text box
# overlaps no label placed before and no marker is taken.
LABEL_CANDIDATES = [(-3, 3, "right", "bottom"), (3, -3, "left", "top"), (3, 3, "left", "bottom"),
                    (-3, -3, "right", "top"), (0, 7, "center", "bottom"), (0, -7, "center", "top"),
                    (-3, 10, "right", "bottom"), (3, -10, "left", "top")]


def place_labels(ax, pending):
    """Annotates each (label, x, y, color, j) without overlapping earlier labels or the points."""
    if not pending:
        return
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    # Markers as small boxes in display coordinates (about 4 pt across).
    pad = 2.0 * fig.dpi / 72
    taken = []
    for _, x, y, _, _ in pending:
        px, py = ax.transData.transform((x, y))
        taken.append((px - pad, py - pad, px + pad, py + pad))

    def overlaps(b):
        return any(b[0] < t[2] and t[0] < b[2] and b[1] < t[3] and t[1] < b[3] for t in taken)

    for label, x, y, color, j in pending:
        start = j % 2  # alternate the first choice along x, as neighbours tend to sit diagonally
        order = [LABEL_CANDIDATES[start], LABEL_CANDIDATES[1 - start]] + LABEL_CANDIDATES[2:]
        ann = None
        for dx, dy, ha, va in order:
            if ann is not None:
                ann.remove()
            ann = ax.annotate(label, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=5.5, color=color,
                              ha=ha, va=va)
            e = ann.get_window_extent(renderer)
            gap = fig.dpi / 72  # keep a point of space between neighbouring labels
            box = (e.x0 - gap, e.y0, e.x1 + gap, e.y1)
            if not overlaps(box):
                break
        taken.append(box)


def draw(ax, items, index, args, lo, hi, ylim, label_points, accel_index=0):
    """Roofs and points of `items` [(key, platform)] on one axis; accel_index tells the
    accelerator's precisions apart (line style and marker)."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    grid = [lo * (hi / lo) ** (j / 400) for j in range(401)]
    pending = []  # labels, placed once every point of the axis is drawn
    for key, p in items:
        color = style.platform_color(p["color_key"], index)
        marker = style.platform_marker(p["color_key"], index)
        ls = "--"
        if key[0] == "accel":
            ls = ACCEL_LINESTYLES[accel_index % len(ACCEL_LINESTYLES)]
            marker = ACCEL_MARKERS[accel_index % len(ACCEL_MARKERS)]
        lw = 1.0 if key[0] == "base" else 1.4
        ax.plot(grid, [attainable(p["peak"], p["bw"], x, args.flavour) for x in grid], color=color, lw=lw, ls=ls,
                zorder=2)
        # The legend entry shows the roof's line and the marker of its points, so a reader can
        # tell which point is which baseline's (issue 33).
        ax.plot([], [], color=color, lw=lw, ls=ls, marker=marker, ms=6 if key[0] == "accel" else 4,
                markeredgecolor="white", markeredgewidth=0.3, label=p["label"])
        for j, (label, x, y) in enumerate(sorted(p["points"], key=lambda pt: pt[1])):
            ax.plot([x], [y], marker=marker, color=color, ms=6 if key[0] == "accel" else 4, ls="none",
                    markeredgecolor="white", markeredgewidth=0.3, zorder=3)
            if label_points and not args.no_labels:
                pending.append((label, x, y, color, j))
    ax.set_xlim(lo, hi)
    ax.set_ylim(*ylim)
    place_labels(ax, pending)  # after the limits: it measures in display coordinates
    if args.flavour == "weight":
        ax.set_xlabel("Operational intensity: MAC ops / weight byte")
    else:
        ax.set_xlabel("Operational intensity: ops / off-chip byte")
    ax.set_ylabel("TeraOps/s")
    ax.grid(True, which="major")
    ax.grid(False, which="minor")


def parser():
    """The command line (also the defaults of the options for `make_figure`)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("reports", nargs="+", help="report.json files (or directories holding one)")
    ap.add_argument("--out", "-o", required=True, help="output path without extension (writes .pdf and .png)")
    ap.add_argument("--flavour", choices=["weight", "dram"], default="weight")
    ap.add_argument("--platforms", help="comma-separated platforms to draw: arch names and baseline names (default: all)")
    ap.add_argument("--layers", action="store_true", help="plot each matrix layer (use with one report)")
    ap.add_argument("--title")
    ap.add_argument("--width", type=float, default=style.SINGLE_COLUMN_IN)
    ap.add_argument("--height", type=float, default=2.7)
    ap.add_argument("--no-labels", action="store_true", help="do not label workload points")
    ap.add_argument("--panels", action="store_true",
                    help="one panel per platform (the paper's Figs. 5-7), double-column width by default")
    return ap


def make_figure(reports, args):
    """The figure of loaded reports (report_io.load_report) under the options `args` (parser()'s)."""
    wanted = set(args.platforms.split(",")) if args.platforms else set()
    platforms = collect(reports, args.flavour, wanted, args.layers)
    if not platforms:
        raise report_io.InputError("nothing to plot: no platform matches --platforms")
    points = [pt for p in platforms.values() for pt in p["points"]]
    if not points:
        raise report_io.InputError("nothing to plot: the reports have no workload points with positive intensity and TOPS")

    xs = [pt[1] for pt in points if pt[1] > 0]
    ridges = []
    for p in platforms.values():
        ridge_ops = p["peak"] * 1e12 / (p["bw"] * 1e9)
        ridges.append(ridge_ops / 2 if args.flavour == "weight" else ridge_ops)
    lo = 10 ** math.floor(math.log10(max(min(xs + ridges) / 3, 1e-3)))
    hi = 10 ** math.ceil(math.log10(max(xs + ridges) * 3))
    ordered = sorted(platforms.items(), key=lambda kv: (kv[0][0] != "accel", -kv[1]["peak"]))
    accel_rank = {}
    for key, _ in ordered:
        if key[0] == "accel":
            accel_rank[key] = len(accel_rank)
    ymin = min(pt[2] for pt in points if pt[2] > 0)
    for _, p in ordered:
        ymin = min(ymin, attainable(p["peak"], p["bw"], lo, args.flavour))
    top = max(p["peak"] for p in platforms.values())
    ylim = (max(ymin / 2, top * 1e-6), top * 2.5)

    if args.panels:
        n = len(ordered)
        cols = min(n, 3)
        rows = (n + cols - 1) // cols
        width = args.width if args.width != style.SINGLE_COLUMN_IN else style.DOUBLE_COLUMN_IN
        fig, axes = style.figure(width, args.height * rows if args.height else 2.3 * rows, nrows=rows, ncols=cols,
                                 sharex=True, sharey=True, squeeze=False)
        flat = [a for row in axes for a in row]
        for i, (key, p) in enumerate(ordered):
            draw(flat[i], [(key, p)], i, args, lo, hi, ylim, label_points=True, accel_index=accel_rank.get(key, 0))
            flat[i].set_title(p["label"])
            xlabel = flat[i].get_xlabel()
            flat[i].set_xlabel("")
            if i % cols:
                flat[i].set_ylabel("")
        fig.subplots_adjust(bottom=0.2, wspace=0.12)
        fig.supxlabel(xlabel, fontsize=8, y=0.0)
        for a in flat[n:]:
            a.set_visible(False)
        if args.title:
            fig.suptitle(args.title)
    else:
        fig, ax = style.figure(args.width, args.height)
        for i, (key, p) in enumerate(ordered):
            draw(ax, [(key, p)], i, args, lo, hi, ylim, label_points=key[0] == "accel" or len(platforms) == 1,
                 accel_index=accel_rank.get(key, 0))
        if args.title:
            ax.set_title(args.title)
        if len(platforms) <= 3:
            ax.legend(loc="upper left", ncol=1, handlelength=2.2, borderaxespad=0.2)
        else:  # below the axes, so the legend never hides a roof or a point
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, handlelength=2.2, borderaxespad=0.0,
                      columnspacing=1.0)
    return fig


def main(argv):
    args = parser().parse_args(argv)
    fig = make_figure(report_io.load_reports(args.reports), args)
    for path in style.save(fig, args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(report_io.main_guard(main))
