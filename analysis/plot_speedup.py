#!/usr/bin/python3
"""Speed-up of the accelerator over its baselines, per workload, with the geometric mean.

Usage:
  /usr/bin/python3 analysis/plot_speedup.py out/*/report.json --out fig/speedup
      [--baselines haswell-e5-2699v3,k80] [--relative-to haswell-e5-2699v3] [--table fig/speedup.md]

Default: for each workload (one report each, all with baselines from `tessera run
--baseline ...`), one bar per baseline: the report's speedup_of_accelerator, i.e.
baseline latency / accelerator latency at the same batch. Log scale, a line at 1x,
and a final group "GM" with the geometric mean over the workloads.
--relative-to NAME draws the TPU paper's Table 6 view instead: the performance of the
accelerator and of every other baseline relative to baseline NAME
(NAME's latency / platform latency).
Prints the numbers as a Markdown table (and writes it with --table).
Writes OUT.pdf and OUT.png. Malformed input: one-line error, exit status 2.
"""
import argparse
import math
import sys

import doc_sections
import report_io
import style


def geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def collect(reports, names, relative_to):
    """(workload labels, [(series label, color key, [value per workload])])."""
    archs = {r["arch"]["name"] for r in reports}
    workloads = [r["workload"]["name"] if len(archs) == 1 else f"{r['workload']['name']}@{r['arch']['name']}"
                 for r in reports]
    if len(set(workloads)) != len(workloads):
        raise report_io.InputError("two reports of the same workload on the same arch; give one report per workload")
    by_name = []
    for r in reports:
        d = {b["name"]: b for b in report_io.baselines_of(r)}
        for n in names + ([relative_to] if relative_to else []):
            if n not in d:
                raise report_io.InputError(f"{r['_path']}: no baseline '{n}' (have: {', '.join(sorted(d)) or 'none'}; "
                                       "run tessera with --baseline)")
        by_name.append(d)
    series = []
    if relative_to:
        ref = [report_io.number(d[relative_to]["summary"]["latency_s"], f"{relative_to}: summary.latency_s") for d in by_name]
        accel = [report_io.number(r["summary"]["latency_s"], f"{r['_path']}: summary.latency_s") for r in reports]
        series.append((style.accel_label(reports[0]), "accelerator", [f / a for f, a in zip(ref, accel)]))
        for n in names:
            if n == relative_to:
                continue
            lat = [report_io.number(d[n]["summary"]["latency_s"], f"{n}: summary.latency_s") for d in by_name]
            series.append((style.short_baseline_label(by_name[0][n]), n, [f / x for f, x in zip(ref, lat)]))
    else:
        for n in names:
            vals = []
            for r, d in zip(reports, by_name):
                s = d[n].get("speedup_of_accelerator")
                if s is None:  # older reports: recompute from the latencies
                    s = d[n]["summary"]["latency_s"] / r["summary"]["latency_s"]
                vals.append(report_io.number(s, f"{r['_path']}: baseline {n}: speedup_of_accelerator"))
            series.append((style.short_baseline_label(by_name[0][n]), n, vals))
    return workloads, series


def table(workloads, series, relative_to, accel):
    what = (f"performance relative to {relative_to} (its latency / platform latency)" if relative_to
            else f"speed-up of {accel} (baseline latency / accelerator latency)")
    head = "| " + " | ".join(["platform"] + workloads + ["GM"]) + " |"
    lines = [f"Same batch on every platform; {what}.", "", head, "|---|" + "---:|" * (len(workloads) + 1)]
    for label, _, vals in series:
        cells = [f"{v:.2f}" if v < 10 else f"{v:.1f}" for v in vals]
        gm = geomean(vals)
        lines.append("| " + " | ".join([label] + cells + [f"{gm:.2f}" if gm < 10 else f"{gm:.1f}"]) + " |")
    return "\n".join(lines) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("reports", nargs="+", help="report.json files, one per workload")
    ap.add_argument("--out", "-o", required=True, help="output path without extension (writes .pdf and .png)")
    ap.add_argument("--baselines", help="comma-separated baselines (default: every baseline all reports have)")
    ap.add_argument("--relative-to", help="plot every platform's performance relative to this baseline")
    ap.add_argument("--table", help="also write the numbers (Markdown) to this file")
    ap.add_argument("--title")
    ap.add_argument("--width", type=float, default=style.SINGLE_COLUMN_IN)
    ap.add_argument("--height", type=float, default=2.3)
    args = ap.parse_args(argv)
    reports = report_io.load_reports(args.reports)
    if args.baselines:
        names = args.baselines.split(",")
    else:
        names = None
        for r in reports:
            here = [b["name"] for b in report_io.baselines_of(r)]
            names = here if names is None else [n for n in names if n in here]
        if not names:
            raise report_io.InputError("the reports share no baseline (run tessera with --baseline ...)")
    workloads, series = collect(reports, names, args.relative_to)
    if not series:
        raise report_io.InputError("nothing to plot")

    fig, ax = style.figure(args.width, args.height)
    groups = workloads + ["GM"]
    n = len(series)
    w = 0.8 / n
    for i, (label, key, vals) in enumerate(series):
        xs = [g + (i - (n - 1) / 2) * w for g in range(len(groups))]
        ys = vals + [geomean(vals)]
        # Bars grow from 1x (up for faster, down for slower) on the log axis.
        ax.bar(xs, [y - 1 for y in ys], bottom=1, width=w * 0.92, color=style.platform_color(key, i), label=label,
               linewidth=0)
    ax.axhline(1.0, color="#333333", lw=0.6)
    ax.axvline(len(workloads) - 0.5, color="#999999", lw=0.4, ls=":")
    ax.set_yscale("log")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=0 if len(groups) <= 8 else 45, ha="center" if len(groups) <= 8 else "right")
    ax.set_xlim(-0.5, len(groups) - 0.5)
    ax.grid(True, axis="y", which="major")
    ax.grid(False, axis="x")
    if args.relative_to:
        ref = next(b for b in report_io.baselines_of(reports[0]) if b["name"] == args.relative_to)
        ax.set_ylabel(f"perf. relative to {style.tiny_name(ref)}")
    else:
        ax.set_ylabel(f"speed-up of {reports[0]['arch']['name']}")
    if args.title:
        ax.set_title(args.title)
    ax.legend(ncol=min(n, 3), loc="upper center", bbox_to_anchor=(0.5, -0.14), handlelength=1.0, columnspacing=0.8)
    paths = style.save(fig, args.out)
    text = table(workloads, series, args.relative_to, reports[0]["arch"]["name"])
    if args.table:
        doc_sections.write_text_atomic(args.table, text)
        paths.append(args.table)
    sys.stdout.write(text)
    for p in paths:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(report_io.main_guard(main))
