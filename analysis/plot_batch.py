#!/usr/bin/python3
"""Throughput and latency vs batch size under a latency limit (the TPU paper's Table 4).

Usage:
  for b in 8 16 32 64 128 200 250; do
    build/tessera run -a configs/tpu-v1.yaml -w workloads/tpu/mlp0.yaml -b $b -o out/batch/mlp0-b$b \\
        --baseline haswell-e5-2699v3,k80
  done
  /usr/bin/python3 analysis/plot_batch.py out/batch/mlp0-b*/report.json --limit-ms 7 --out fig/mlp0-batch
      [--table fig/mlp0-batch.md] [--baselines haswell-e5-2699v3,k80]

Reads several reports of ONE workload at different batch sizes. For the accelerator and
every baseline the reports share (or those named in --baselines) it draws latency vs
batch with the latency limit as a horizontal line (top) and throughput, inferences/s,
vs batch (bottom); a ring marks each platform's largest batch within the limit. It
prints (and with --table writes) the serving table: for each platform, the batch with
the highest throughput within the limit, its latency and inferences/s, and that
throughput as a share of the platform's best at any batch.

The paper's limit (7 ms for MLP0) is on the 99th-percentile response time of a loaded
server; a report's latency is that of one batch on an idle machine, so the table is
the best case of the paper's.
Writes OUT.pdf and OUT.png. Malformed input: one-line error, exit status 2.
"""
import argparse
import sys

import doc_sections
import report_io
import style


def series(reports, names):
    """{key: {"label", "color_key", "points": [(batch, latency_s, ips)]}} sorted by batch."""
    out = {}
    for r in reports:
        batch = int(report_io.number(r["workload"]["batch"], f"{r['_path']}: workload.batch"))
        lat = report_io.number(r["summary"]["latency_s"], f"{r['_path']}: summary.latency_s")
        ips = report_io.number(r["summary"]["inferences_per_s"], f"{r['_path']}: summary.inferences_per_s")
        s = out.setdefault(("accel", r["arch"]["name"]), {"label": style.accel_label(r), "color_key": "accelerator",
                                                          "points": []})
        s["points"].append((batch, lat, ips))
        for b in report_io.baselines_of(r):
            if b["name"] not in names:
                continue
            what = f"{r['_path']}: baseline {b['name']}"
            blat = report_io.number(b["summary"]["latency_s"], f"{what}: summary.latency_s")
            bips = b["summary"].get("inferences_per_s", batch / blat if blat > 0 else 0)
            s = out.setdefault(("base", b["name"]), {"label": style.short_baseline_label(b), "color_key": report_io.spec_of(b),
                                                     "points": []})
            s["points"].append((batch, blat, report_io.number(bips, f"{what}: summary.inferences_per_s")))
    for s in out.values():
        s["points"].sort()
        batches = [p[0] for p in s["points"]]
        if len(set(batches)) != len(batches):
            raise report_io.InputError(f"two reports of {s['label']} have the same batch size ({batches})")
    return out


def best_within(points, limit_s):
    ok = [p for p in points if p[1] <= limit_s]
    return max(ok, key=lambda p: p[2]) if ok else None


def serving_table(data, limit_ms, workload):
    lines = [f"Serving {workload} within a {limit_ms:g} ms latency limit (one batch on an idle machine):", "",
             "| platform | batch | latency (ms) | inferences/s | % of max inferences/s |",
             "|---|---:|---:|---:|---:|"]
    for key, s in data.items():
        best = best_within(s["points"], limit_ms * 1e-3)
        top = max(p[2] for p in s["points"])
        if best is None:
            smallest = s["points"][0]
            lines.append(f"| {s['label']} | none (batch {smallest[0]}: {smallest[1] * 1e3:.2f} ms) | - | - | - |")
        else:
            lines.append(f"| {s['label']} | {best[0]} | {best[1] * 1e3:.2f} | {best[2]:,.0f} | {100 * best[2] / top:.0f}% |")
    return "\n".join(lines) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("reports", nargs="+", help="report.json files of one workload at different batch sizes")
    ap.add_argument("--out", "-o", required=True, help="output path without extension (writes .pdf and .png)")
    ap.add_argument("--limit-ms", type=float, default=7.0, help="latency limit in ms (default 7, the paper's MLP0 limit)")
    ap.add_argument("--baselines", help="comma-separated baselines to draw (default: those all reports share)")
    ap.add_argument("--table", help="also write the serving table (Markdown) to this file")
    ap.add_argument("--title")
    ap.add_argument("--width", type=float, default=style.SINGLE_COLUMN_IN)
    ap.add_argument("--height", type=float, default=3.6)
    args = ap.parse_args(argv)
    if not args.limit_ms > 0:
        raise report_io.InputError(f"--limit-ms must be > 0, got {args.limit_ms:g}")

    reports = report_io.load_reports(args.reports)
    workloads = sorted({r["workload"]["name"] for r in reports})
    if len(workloads) != 1:
        raise report_io.InputError(f"the reports are of several workloads ({', '.join(workloads)}); give one workload's reports")
    if args.baselines:
        names = args.baselines.split(",")
        for r in reports:
            have = {b["name"] for b in report_io.baselines_of(r)}
            for n in names:
                if n not in have:
                    raise report_io.InputError(f"{r['_path']}: no baseline '{n}' (have: {', '.join(sorted(have)) or 'none'})")
    else:
        names = None
        for r in reports:
            here = [b["name"] for b in report_io.baselines_of(r)]
            names = here if names is None else [n for n in names if n in here]
    data = series(reports, names or [])

    fig, (ax_lat, ax_ips) = style.figure(args.width, args.height, nrows=2, sharex=True)
    limit_s = args.limit_ms * 1e-3
    for i, (key, s) in enumerate(data.items()):
        color = style.platform_color(s["color_key"], i)
        marker = style.platform_marker(s["color_key"], i)
        bs = [p[0] for p in s["points"]]
        ax_lat.plot(bs, [p[1] * 1e3 for p in s["points"]], marker=marker, color=color, label=s["label"], ms=3.5)
        ax_ips.plot(bs, [p[2] for p in s["points"]], marker=marker, color=color, ms=3.5)
        best = best_within(s["points"], limit_s)
        if best is not None:
            ax_ips.plot([best[0]], [best[2]], marker="o", ms=8, mfc="none", mec=color, mew=0.9, ls="none")
    ax_lat.axhline(args.limit_ms, color="#D55E00", ls=":", lw=1.0)
    ax_lat.annotate(f"{args.limit_ms:g} ms limit", xy=(0.99, args.limit_ms), xycoords=("axes fraction", "data"),
                    xytext=(0, 2), textcoords="offset points", fontsize=6, color="#D55E00", ha="right", va="bottom")
    for ax in (ax_lat, ax_ips):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
    ax_lat.set_ylabel("latency (ms)")
    ax_ips.set_ylabel("inferences/s")
    ax_ips.set_xlabel("batch size")
    batches = sorted({p[0] for s in data.values() for p in s["points"]})
    import math

    labels, last = [], None
    for b in batches:  # skip a label that would touch the previous one on the log2 axis
        keep = last is None or math.log2(b) - math.log2(last) >= 0.6
        labels.append(str(b) if keep else "")
        last = b if keep else last
    ax_ips.set_xticks(batches)
    ax_ips.set_xticklabels(labels)
    ax_ips.minorticks_off()
    ax_lat.set_title(args.title or f"{workloads[0]}: latency and throughput vs batch")
    ax_ips.legend(*ax_lat.get_legend_handles_labels(), loc="upper center", bbox_to_anchor=(0.5, -0.32), ncol=2,
                  fontsize=6, handlelength=1.8, columnspacing=1.0)
    paths = style.save(fig, args.out)

    table = serving_table(data, args.limit_ms, workloads[0])
    if args.table:
        doc_sections.write_text_atomic(args.table, table)
        paths.append(args.table)
    sys.stdout.write(table)
    for p in paths:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(report_io.main_guard(main))
