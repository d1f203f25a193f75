#!/usr/bin/python3
"""Latency breakdown by cause: per layer of one report, or per workload across reports.

Usage:
  /usr/bin/python3 analysis/plot_breakdown.py out/tpu-v1/cnn1/report.json --out fig/cnn1-layers
      [--per layer] [--baseline k80] [--top 30]
  /usr/bin/python3 analysis/plot_breakdown.py out/*/report.json --out fig/apps
      [--per workload] [--baselines haswell-e5-2699v3,k80] [--absolute]

Accelerator bars split its cycles into the report's causes (DESIGN.md §6):
array active, weight shift, weight stall, input stall, RAW stall, non-matrix, PCIe.
Baseline bars split a modelled baseline's time into the term that bound each layer's
kernel (compute, DRAM, on-chip), launch/dispatch overhead and the host link; a
measured baseline has one term, measured.

--per layer (default for one report): stacked bars of time per layer; with
--baseline NAME the bars are that baseline's layers instead of the accelerator's;
--top N keeps the N slowest layers (in graph order). Host I/O outside any layer is
its own bar.
--per workload (default for several reports): for each workload, one bar for the
accelerator and one per baseline in --baselines (default: every baseline the
reports share), normalised to 100% with each bar's latency written above it;
--absolute plots seconds instead.
Writes OUT.pdf and OUT.png. Malformed input: one-line error, exit status 2.
"""
import argparse
import sys

import report_io
import style

TERMS = style.BASELINE_TERMS + ["measured"]
TERM_COLORS = dict(style.BASELINE_TERM_COLORS, measured="#777777")
TERM_LABELS = dict(style.LABELS, measured="measured")


def fmt_seconds(s):
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


def accel_layer_seconds(report):
    """[(label, {bucket: seconds})] per layer, plus host I/O outside layers."""
    clock_hz = report_io.number(report["arch"].get("clock_mhz"), f"{report['_path']}: arch.clock_mhz") * 1e6
    rows = []
    for i, layer in enumerate(report["layers"]):
        cycles = layer.get("cycles")
        if not isinstance(cycles, dict):
            raise report_io.InputError(f"{report['_path']}: layers[{i}] has no 'cycles' breakdown")
        rows.append((layer.get("name", str(i)),
                     {b: report_io.number(cycles.get(b, 0), f"{report['_path']}: layers[{i}].cycles.{b}") / clock_hz
                      for b in style.ACCEL_BUCKETS}))
    host = report["summary"].get("host_io_cycles")
    if isinstance(host, dict) and sum(host.get(b, 0) for b in style.ACCEL_BUCKETS) > 0:
        rows.append(("host I/O", {b: host.get(b, 0) / clock_hz for b in style.ACCEL_BUCKETS}))
    return rows


def baseline_layer_terms(b, path):
    """{term: seconds} for each layer of a baseline, plus the host link as its own row."""
    rows = []
    for i, layer in enumerate(b.get("layers", [])):
        lat = report_io.number(layer.get("latency_s"), f"{path}: baseline {b['name']} layers[{i}].latency_s")
        terms = dict.fromkeys(TERMS, 0.0)
        if b.get("measured"):
            terms["measured"] = lat
        else:
            over = layer.get("overhead_s", 0.0)
            bound = layer.get("bound", "compute")
            kernel = max(lat - over, 0.0)
            key = {"compute": "compute", "memory": "memory", "on_chip": "on_chip"}.get(bound)
            if key is None:  # overhead-bound: the kernel still ran; attribute it to its largest term
                parts = {"compute": layer.get("compute_s", 0), "memory": layer.get("dram_s", 0),
                         "on_chip": layer.get("on_chip_s", 0)}
                key = max(parts, key=parts.get)
            terms[key] += kernel
            terms["overhead"] += over
        rows.append((layer.get("name", str(i)), terms))
    link = b["summary"].get("host_link_s", 0.0) or 0.0
    if link > 0:
        rows.append(("host link", dict(dict.fromkeys(TERMS, 0.0), host_link=link)))
    return rows


def find_baseline(report, name):
    for b in report_io.baselines_of(report):
        if b["name"] == name:
            return b
    have = ", ".join(b["name"] for b in report_io.baselines_of(report)) or "none (run tessera with --baseline)"
    raise report_io.InputError(f"{report['_path']}: no baseline '{name}'; the report has: {have}")


def per_layer(args, report):
    if args.baseline:
        b = find_baseline(report, args.baseline)
        rows = baseline_layer_terms(b, report["_path"])
        keys, colors, labels = TERMS, TERM_COLORS, TERM_LABELS
        title = f"{report['workload']['name']} on {style.short_baseline_label(b)}"
    else:
        rows = accel_layer_seconds(report)
        keys, colors, labels = style.ACCEL_BUCKETS, style.ACCEL_BUCKET_COLORS, style.LABELS
        title = f"{report['workload']['name']} on {style.accel_label(report)}"
    if not rows:
        raise report_io.InputError(f"{report['_path']}: no layers to plot")
    if args.top and len(rows) > args.top:
        keep = sorted(range(len(rows)), key=lambda i: -sum(rows[i][1].values()))[: args.top]
        rows = [rows[i] for i in sorted(keep)]
        title += f" ({args.top} slowest layers)"
    total = sum(sum(t.values()) for _, t in rows)
    scale, unit = (1e3, "ms") if total >= 1e-2 else (1e6, "µs")
    width = args.width or (style.SINGLE_COLUMN_IN if len(rows) <= 24 else style.DOUBLE_COLUMN_IN)
    fig, ax = style.figure(width, args.height or 2.2, layout="constrained")
    xs = range(len(rows))
    bottom = [0.0] * len(rows)
    used = [k for k in keys if any(t.get(k, 0) > 0 for _, t in rows)]
    for k in used:
        vals = [t.get(k, 0) * scale for _, t in rows]
        ax.bar(xs, vals, bottom=bottom, color=colors[k], label=labels[k], width=0.8, linewidth=0)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xticks(list(xs))
    ax.set_xticklabels([r[0] for r in rows], rotation=90, fontsize=5 if len(rows) > 30 else 6)
    ax.set_xlim(-0.6, len(rows) - 0.4)
    ax.set_ylabel(f"time ({unit})")
    ax.grid(True, axis="y")
    ax.grid(False, axis="x")
    ax.set_title(args.title or title)
    # Beside the axes, where no tick label reaches whatever the layer names' length; the
    # constrained layout makes room for it.
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), handlelength=1.0, borderaxespad=0.0)
    return fig


def shared_baselines(reports):
    names = None
    for r in reports:
        here = [b["name"] for b in report_io.baselines_of(r)]
        names = here if names is None else [n for n in names if n in here]
    return names or []


def per_workload(args, reports):
    names = args.baselines.split(",") if args.baselines else shared_baselines(reports)
    groups = []  # (workload, [(bar label, {key: seconds}, color set)])
    for r in reports:
        bars = []
        c = r["summary"]["cycles"]
        clock_hz = report_io.number(r["arch"].get("clock_mhz"), f"{r['_path']}: arch.clock_mhz") * 1e6
        bars.append((r["arch"]["name"], {b: report_io.number(c.get(b, 0), f"{r['_path']}: summary.cycles.{b}") / clock_hz
                                         for b in style.ACCEL_BUCKETS}))
        for n in names:
            b = find_baseline(r, n)
            terms = dict.fromkeys(TERMS, 0.0)
            for _, t in baseline_layer_terms(b, r["_path"]):
                for k, v in t.items():
                    terms[k] += v
            bars.append((style.tiny_name(b), terms))
        groups.append((r["workload"]["name"], bars))

    nbars = len(groups[0][1])
    width = args.width or (style.SINGLE_COLUMN_IN if len(groups) * nbars <= 14 else style.DOUBLE_COLUMN_IN)
    fig, ax = style.figure(width, args.height or 2.4)
    bar_w = 0.8 / nbars
    used_accel, used_base = set(), set()
    tick_pos, tick_lab = [], []
    for g, (wl, bars) in enumerate(groups):
        for j, (label, parts) in enumerate(bars):
            x = g + (j - (nbars - 1) / 2) * bar_w
            total = sum(parts.values())
            keys = style.ACCEL_BUCKETS if j == 0 else TERMS
            colors = style.ACCEL_BUCKET_COLORS if j == 0 else TERM_COLORS
            bottom = 0.0
            for k in keys:
                v = parts.get(k, 0.0)
                if v <= 0:
                    continue
                h = v if args.absolute else 100.0 * v / total
                ax.bar([x], [h], bottom=[bottom], width=bar_w * 0.9, color=colors[k], linewidth=0)
                bottom += h
                (used_accel if j == 0 else used_base).add(k)
            if not args.absolute:
                ax.text(x, 101, fmt_seconds(total), rotation=90, ha="center", va="bottom", fontsize=4.5)
            tick_pos.append(x)
            tick_lab.append(label)
        ax.text(g, -0.27, wl, transform=ax.get_xaxis_transform(), ha="center", va="top", fontsize=7)
    ax.set_xticks(tick_pos)
    ax.set_xticklabels(tick_lab, rotation=90, fontsize=5)
    ax.set_xlim(-0.5, len(groups) - 0.5)
    if args.absolute:
        ax.set_ylabel("latency (s)")
    else:
        ax.set_ylim(0, 125)
        ax.set_yticks([0, 25, 50, 75, 100])
        ax.set_ylabel("share of latency (%)")
    ax.grid(True, axis="y")
    ax.grid(False, axis="x")
    if args.title:
        ax.set_title(args.title)
    import matplotlib.patches as mpatches

    handles = [mpatches.Patch(color=style.ACCEL_BUCKET_COLORS[k], label=style.LABELS[k])
               for k in style.ACCEL_BUCKETS if k in used_accel]
    handles += [mpatches.Patch(color=TERM_COLORS[k], label=f"{TERM_LABELS[k]} (baseline)")
                for k in TERMS if k in used_base]
    ax.legend(handles=handles, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.36), handlelength=1.0,
              columnspacing=0.8)
    return fig


def parser():
    """The command line (also the defaults of the options for `make_figure`)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("reports", nargs="+", help="report.json files (or directories holding one)")
    ap.add_argument("--out", "-o", required=True, help="output path without extension (writes .pdf and .png)")
    ap.add_argument("--per", choices=["layer", "workload"], help="default: layer for one report, workload for several")
    ap.add_argument("--baseline", help="--per layer: plot this baseline's layers instead of the accelerator's")
    ap.add_argument("--baselines", help="--per workload: comma-separated baselines to show next to the accelerator")
    ap.add_argument("--top", type=int, default=0, help="--per layer: keep only the N slowest layers")
    ap.add_argument("--absolute", action="store_true", help="--per workload: seconds instead of shares")
    ap.add_argument("--title")
    ap.add_argument("--width", type=float)
    ap.add_argument("--height", type=float)
    return ap


def make_figure(reports, args):
    """The figure of loaded reports (report_io.load_report) under the options `args` (parser()'s)."""
    per = args.per or ("layer" if len(reports) == 1 else "workload")
    if per == "layer":
        if len(reports) != 1:
            raise report_io.InputError("--per layer takes exactly one report")
        return per_layer(args, reports[0])
    return per_workload(args, reports)


def main(argv):
    args = parser().parse_args(argv)
    fig = make_figure(report_io.load_reports(args.reports), args)
    for path in style.save(fig, args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(report_io.main_guard(main))
