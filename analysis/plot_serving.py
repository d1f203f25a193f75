#!/usr/bin/python3
"""Latency-throughput curves of `tessera serve` (its curve.csv).

Usage:
  build/tessera serve -a configs/tpu-v1.yaml -w workloads/tpu/mlp0.yaml -b 200 --host haswell-tpu-server \\
      --replicas 4 --latency-bound-ms 7 --curve 20 --out out/serve/x4
  /usr/bin/python3 analysis/plot_serving.py out/serve/x1 out/serve/x4 --out fig/serving-mlp0 \\
      [--percentile p99] [--per-replica] [--limit-ms 7] [--label "1 TPU per host" --label "4 TPUs per host"]

Each argument is a curve.csv or a directory holding one. Every (platform, replicas, batch,
policy) of every file is one line: the latency at --percentile (p50, p90, p99 or p999;
default p99) against the throughput, for the whole host or, with --per-replica, per
accelerator. --limit-ms draws the latency bound. --label names the files in the legend (one
per file, in order). Writes OUT.pdf and OUT.png. Malformed input: one-line error, exit 2.
"""
import argparse
import os
import sys

import report_io
import report_io
import style

COLUMNS = ["platform", "replicas", "batch", "policy", "load", "offered_per_s", "throughput_per_s", "per_replica_per_s",
           "p50_ms", "p90_ms", "p99_ms", "p999_ms", "mean_ms"]
PERCENTILES = ["p50", "p90", "p99", "p999"]


def load_curve(path):
    """{(platform, replicas, batch, policy): [row dicts with floats]} in file order."""
    if os.path.isdir(path):
        path = os.path.join(path, "curve.csv")
    rows = report_io.read_csv_rows(path, "a curve.csv of tessera serve", COLUMNS)
    if not rows:
        raise report_io.InputError(f"{path}: no curve points (run tessera serve with --curve N)")
    out = {}
    for i, r in enumerate(rows, start=2):
        key = (r["platform"], r["replicas"], r["batch"], r["policy"])
        point = {}
        for c in COLUMNS[4:]:
            try:
                point[c] = report_io.number(float(r[c]), f"{path}:{i}: {c}")
            except (TypeError, ValueError):
                raise report_io.InputError(f"{path}:{i}: {c}: expected a number, got {r[c]!r}") from None
        out.setdefault(key, []).append(point)
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("curves", nargs="+", help="curve.csv files (or directories holding one)")
    ap.add_argument("--out", "-o", required=True, help="output path without extension (writes .pdf and .png)")
    ap.add_argument("--percentile", default="p99", help="p50, p90, p99 or p999 (default p99)")
    ap.add_argument("--per-replica", action="store_true", help="throughput per accelerator instead of per host")
    ap.add_argument("--limit-ms", type=float, help="draw this latency bound")
    ap.add_argument("--label", action="append", help="legend name of each file, in order")
    ap.add_argument("--title")
    ap.add_argument("--width", type=float, default=style.SINGLE_COLUMN_IN)
    ap.add_argument("--height", type=float)
    args = ap.parse_args(argv)
    if args.percentile not in PERCENTILES:
        raise report_io.InputError(f"--percentile must be one of {', '.join(PERCENTILES)}, got {args.percentile!r}")
    if args.label and len(args.label) != len(args.curves):
        raise report_io.InputError(f"give one --label per curve file ({len(args.curves)}), got {len(args.label)}")
    if args.limit_ms is not None and not args.limit_ms > 0:
        raise report_io.InputError(f"--limit-ms must be > 0, got {args.limit_ms:g}")

    files = [load_curve(p) for p in args.curves]
    fig, ax = style.figure(args.width, args.height)
    col = f"{args.percentile}_ms"
    x_col = "per_replica_per_s" if args.per_replica else "throughput_per_s"
    index = 0
    for f, curves in enumerate(files):
        for (platform, replicas, batch, policy), points in curves.items():
            label = f"{platform} x{replicas}, batch {batch}" + ("" if policy == "fixed" else f", {policy}")
            if args.label:
                label = f"{args.label[f]}: {label}" if len(curves) > 1 else args.label[f]
            key = "accelerator" if platform.startswith("tpu") or platform not in style.PLATFORM_COLORS else platform
            color = style.platform_color(key, index) if len(files) == 1 else style.OKABE_ITO[(5 + 2 * index) % 8]
            ax.plot([p[x_col] for p in points], [p[col] for p in points], marker=style.platform_marker(key, index),
                    color=color, label=label, ms=3)
            index += 1
    if args.limit_ms:
        ax.axhline(args.limit_ms, color="#D55E00", ls=":", lw=1.0)
        ax.annotate(f"{args.limit_ms:g} ms bound", xy=(0.01, args.limit_ms), xycoords=("axes fraction", "data"),
                    xytext=(0, 2), textcoords="offset points", fontsize=6, color="#D55E00", ha="left", va="bottom")
    ax.set_yscale("log")
    from matplotlib import ticker

    ax.yaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(ticker.NullFormatter())
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v / 1e3:g}k" if v else "0"))
    ax.set_xlabel("requests/s per accelerator" if args.per_replica else "requests/s per host")
    ax.set_ylabel(f"{args.percentile} latency (ms)")
    ax.set_title(args.title or f"{args.percentile} latency vs throughput")
    ax.legend(loc="upper left", fontsize=6)
    for p in style.save(fig, args.out):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(report_io.main_guard(main))
