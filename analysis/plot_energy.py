#!/usr/bin/python3
"""Energy of the accelerator per workload, stacked by component, or its perf/W against the baselines.

Usage:
  /usr/bin/python3 analysis/plot_energy.py out/*/report.json --out fig/energy [--absolute] [--table fig/energy.md]
  /usr/bin/python3 analysis/plot_energy.py out/*/report.json --perf-per-w --out fig/perf-per-w
      [--baselines haswell-e5-2699v3,k80] [--table fig/perf-per-w.md]

Default: one bar per report (workload), split into the components of
summary.energy_breakdown_j (mac, register, unified_buffer, accumulators, weight_fifo,
vector, dram, pcie, leakage, on) as shares of the energy; the energy per inference is
written above each bar. --absolute stacks joules per inference instead.
--perf-per-w: for each workload and baseline, the accelerator's perf/W over the
baseline's (report: baselines[].accelerator_perf_per_w_ratio), incremental (solid;
host power left out) and total (hatched; host power added), log scale, with the
geometric mean ("GM"). Baselines without power figures are left out.
Prints the numbers as a Markdown table (and writes it with --table).
Writes OUT.pdf and OUT.png. Malformed input: one-line error, exit status 2.
"""
import argparse
import math
import sys

import doc_sections
import report_io
import style

COMPONENTS = ["mac", "register", "unified_buffer", "accumulators", "weight_fifo", "vector", "dram", "pcie", "leakage",
              "on"]
COLORS = {"mac": "#1b9e77", "register": "#66a61e", "unified_buffer": "#7570b3", "accumulators": "#a6761d",
          "weight_fifo": "#e6ab02", "vector": "#e7298a", "dram": "#d95f02", "pcie": "#666666", "leakage": "#bbbbbb",
          "on": "#888888"}


def geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def human_j(j):
    for scale, unit in ((1, "J"), (1e-3, "mJ"), (1e-6, "µJ"), (1e-9, "nJ")):
        if j >= scale:
            return f"{j / scale:.3g} {unit}"
    return f"{j / 1e-12:.3g} pJ"


def labels(reports):
    archs = {r["arch"]["name"] for r in reports}
    out = [r["workload"]["name"] if len(archs) == 1 else f"{r['workload']['name']}@{r['arch']['name']}" for r in reports]
    if len(set(out)) != len(out):
        raise report_io.InputError("two reports of the same workload on the same arch; give one report per workload")
    return out


def breakdown_of(r):
    s = r["summary"]
    if "energy_breakdown_j" not in s or "energy_per_inference_j" not in s:
        raise report_io.InputError(f"{r['_path']}: no summary.energy_breakdown_j (a report from before energy: rerun tessera)")
    b = s["energy_breakdown_j"]
    batch = report_io.number(r["workload"]["batch"], f"{r['_path']}: workload.batch")
    per_inf = {c: report_io.number(b.get(c), f"{r['_path']}: summary.energy_breakdown_j.{c}") / batch for c in COMPONENTS}
    return per_inf, report_io.number(s["energy_per_inference_j"], f"{r['_path']}: summary.energy_per_inference_j")


def plot_breakdown(reports, args):
    names = labels(reports)
    data = [breakdown_of(r) for r in reports]
    fig, ax = style.figure(args.width, args.height)
    xs = range(len(reports))
    bottom = [0.0] * len(reports)
    for c in COMPONENTS:
        if args.absolute:
            ys = [d[0][c] for d in data]
        else:
            ys = [d[0][c] / d[1] if d[1] > 0 else 0 for d in data]
        if not any(ys):
            continue
        ax.bar(xs, ys, bottom=bottom, width=0.7, color=COLORS[c], label=c.replace("_", " "), linewidth=0)
        bottom = [b + y for b, y in zip(bottom, ys)]
    if args.absolute:
        ax.set_ylabel("energy per inference (J)")
    else:
        ax.set_ylim(0, 1.12)
        ax.set_ylabel("share of energy")
        for x, d in zip(xs, data):
            ax.text(x, 1.02, human_j(d[1]), ha="center", va="bottom", fontsize=5.5)
    ax.set_xticks(list(xs))
    ax.set_xticklabels(names, rotation=0 if len(names) <= 8 else 45, ha="center" if len(names) <= 8 else "right")
    ax.grid(False, axis="x")
    if args.title:
        ax.set_title(args.title)
    ax.legend(ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.12), handlelength=1.0, columnspacing=0.8)
    paths = style.save(fig, args.out)
    head = "| workload | energy/inference | " + " | ".join(COMPONENTS) + " |"
    lines = [f"Energy per inference on {reports[0]['arch']['name']} and each component's share.", "", head,
             "|---|---:|" + "---:|" * len(COMPONENTS)]
    for n, (per, tot) in zip(names, data):
        lines.append(f"| {n} | {human_j(tot)} | " +
                     " | ".join(f"{100 * per[c] / tot:.1f}%" if tot > 0 else "-" for c in COMPONENTS) + " |")
    return paths, "\n".join(lines) + "\n"


def perf_per_w_series(reports, names):
    series = []
    for n in names:
        inc, tot = [], []
        for r in reports:
            b = next((b for b in report_io.baselines_of(r) if b["name"] == n), None)
            if b is None:
                raise report_io.InputError(f"{r['_path']}: no baseline '{n}' (run tessera with --baseline)")
            ratio = b.get("accelerator_perf_per_w_ratio")
            if not isinstance(ratio, dict):
                raise report_io.InputError(f"{r['_path']}: baseline '{n}' has no perf/W (its spec has no power: section)")
            inc.append(report_io.number(ratio.get("incremental"), f"{r['_path']}: {n}: accelerator_perf_per_w_ratio.incremental"))
            tot.append(report_io.number(ratio.get("total"), f"{r['_path']}: {n}: accelerator_perf_per_w_ratio.total"))
        series.append((n, style.short_baseline_label(next(b for b in report_io.baselines_of(reports[0]) if b["name"] == n)),
                       inc, tot))
    return series


def plot_perf_per_w(reports, args):
    names = labels(reports)
    if args.baselines:
        wanted = args.baselines.split(",")
    else:
        wanted = None
        for r in reports:
            here = [b["name"] for b in report_io.baselines_of(r) if isinstance(b.get("accelerator_perf_per_w_ratio"), dict)]
            wanted = here if wanted is None else [n for n in wanted if n in here]
        if not wanted:
            raise report_io.InputError("the reports share no baseline with power figures (run tessera with --baseline ...)")
    series = perf_per_w_series(reports, wanted)
    groups = names + ["GM"]
    fig, ax = style.figure(args.width, args.height)
    n = len(series)
    w = 0.8 / (2 * n)
    for i, (key, label, inc, tot) in enumerate(series):
        color = style.platform_color(key, i)
        for j, (vals, hatch, kind) in enumerate(((inc, None, "incremental"), (tot, "////", "total"))):
            xs = [g + (2 * i + j - (2 * n - 1) / 2) * w for g in range(len(groups))]
            ys = vals + [geomean(vals)]
            ax.bar(xs, [y - 1 for y in ys], bottom=1, width=w * 0.92, color=color if hatch is None else "white",
                   edgecolor=color, hatch=hatch, linewidth=0 if hatch is None else 0.6, label=f"{label}, {kind}")
    ax.axhline(1.0, color="#333333", lw=0.6)
    ax.axvline(len(names) - 0.5, color="#999999", lw=0.4, ls=":")
    ax.set_yscale("log")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=0 if len(groups) <= 8 else 45, ha="center" if len(groups) <= 8 else "right")
    ax.set_xlim(-0.5, len(groups) - 0.5)
    ax.grid(True, axis="y", which="major")
    ax.grid(False, axis="x")
    ax.set_ylabel(f"perf/W of {reports[0]['arch']['name']} over baseline")
    if args.title:
        ax.set_title(args.title)
    ax.legend(ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.14), handlelength=1.0, columnspacing=0.8)
    paths = style.save(fig, args.out)
    head = "| baseline | kind | " + " | ".join(groups) + " |"
    lines = [f"Perf/W of {reports[0]['arch']['name']} over each baseline (same batch), incremental (host power left out) "
             "and total (host power added).", "", head, "|---|---|" + "---:|" * len(groups)]
    for key, label, inc, tot in series:
        for kind, vals in (("incremental", inc), ("total", tot)):
            cells = [f"{v:.2f}" if v < 10 else f"{v:.1f}" for v in vals + [geomean(vals)]]
            lines.append(f"| {label} | {kind} | " + " | ".join(cells) + " |")
    return paths, "\n".join(lines) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("reports", nargs="+", help="report.json files, one per workload")
    ap.add_argument("--out", "-o", required=True, help="output path without extension (writes .pdf and .png)")
    ap.add_argument("--perf-per-w", action="store_true", help="perf/W over the baselines instead of the breakdown")
    ap.add_argument("--absolute", action="store_true", help="breakdown: joules per inference instead of shares")
    ap.add_argument("--baselines", help="--perf-per-w: comma-separated baselines (default: all with power figures)")
    ap.add_argument("--table", help="also write the numbers (Markdown) to this file")
    ap.add_argument("--title")
    ap.add_argument("--width", type=float, default=style.SINGLE_COLUMN_IN)
    ap.add_argument("--height", type=float, default=2.3)
    args = ap.parse_args(argv)
    reports = report_io.load_reports(args.reports)
    paths, text = plot_perf_per_w(reports, args) if args.perf_per_w else plot_breakdown(reports, args)
    if args.table:
        doc_sections.write_text_atomic(args.table, text)
        paths.append(args.table)
    sys.stdout.write(text)
    for p in paths:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(report_io.main_guard(main))
