#!/usr/bin/python3
"""Draws every figure for a directory of Tessera reports and sweep results.

Usage:
  /usr/bin/python3 analysis/plot_all.py DIR [--out FIGDIR]

Finds every report.json and every results.jsonl (or results.csv without a .jsonl
beside it) under DIR and writes to FIGDIR (default DIR/figures), each as .pdf and .png:
  roofline            all reports, every platform (plot_roofline.py)
  roofline-<arch>     one panel per platform, for each arch with baselines
  breakdown           per workload, accelerator vs the baselines the reports share
  breakdown-<name>    per layer of each report (<name> = the report's directory)
  speedup             speed-up over the shared baselines (two or more workloads)
  batch-<workload>    throughput/latency vs batch, for a workload with reports at 2+ batches
  sweep-<name>        each sweep's scatter and Pareto front
When a workload has reports at several batch sizes, the summary figures (roofline,
breakdown, speedup) use its largest batch. Prints the files written.
Malformed input: one-line error, exit status 2.
"""
import argparse
import os
import re
import sys

import plot_batch
import plot_breakdown
import plot_roofline
import plot_speedup
import plot_sweep
import style


def slug(text):
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "x"


def find(root):
    reports, sweeps = [], []
    for d, dirs, files in os.walk(root):
        dirs.sort()
        if "report.json" in files:
            reports.append(os.path.join(d, "report.json"))
        if "results.jsonl" in files:
            sweeps.append(os.path.join(d, "results.jsonl"))
        elif "results.csv" in files:
            sweeps.append(os.path.join(d, "results.csv"))
    return sorted(reports), sorted(sweeps)


def shared(reports):
    names = None
    for r in reports:
        here = [b["name"] for b in style.baselines_of(r)]
        names = here if names is None else [n for n in names if n in here]
    return names or []


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("dir", help="directory holding report.json files and/or sweep results")
    ap.add_argument("--out", help="where the figures go (default DIR/figures)")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.dir):
        raise style.InputError(f"{args.dir}: not a directory")
    out = args.out or os.path.join(args.dir, "figures")
    report_paths, sweeps = find(args.dir)
    report_paths = [p for p in report_paths if not os.path.abspath(p).startswith(os.path.abspath(out) + os.sep)]
    if not report_paths and not sweeps:
        raise style.InputError(f"{args.dir}: no report.json or results.jsonl/results.csv below it")
    reports = [style.load_report(p) for p in report_paths]
    calls = []  # (module, argv)

    # One report per (arch, workload) for the summary figures: the largest batch.
    summary = {}
    for path, r in zip(report_paths, reports):
        key = (r["arch"]["name"], r["workload"]["name"])
        if key not in summary or r["workload"]["batch"] > summary[key][1]["workload"]["batch"]:
            summary[key] = (path, r)
    chosen = sorted(summary.values(), key=lambda pr: pr[0])
    chosen_paths = [p for p, _ in chosen]
    chosen_reports = [r for _, r in chosen]

    if chosen_paths:
        calls.append((plot_roofline, chosen_paths + ["--out", os.path.join(out, "roofline")]))
        for arch in sorted({r["arch"]["name"] for r in chosen_reports}):
            mine = [p for p, r in chosen if r["arch"]["name"] == arch]
            if any(style.baselines_of(r) for _, r in chosen if r["arch"]["name"] == arch):
                calls.append((plot_roofline, mine + ["--panels", "--out", os.path.join(out, f"roofline-{slug(arch)}")]))
        names = shared(chosen_reports)
        if len(chosen_paths) > 1:
            argv_b = chosen_paths + ["--per", "workload", "--out", os.path.join(out, "breakdown")]
            if names:
                argv_b += ["--baselines", ",".join(names)]
            calls.append((plot_breakdown, argv_b))
        if names and len(chosen_paths) > 1:
            calls.append((plot_speedup, chosen_paths + ["--baselines", ",".join(names), "--out",
                                                        os.path.join(out, "speedup")]))
    used = set()
    for path in report_paths:
        name = slug(os.path.basename(os.path.dirname(os.path.abspath(path))))
        while name in used:
            name += "_"
        used.add(name)
        calls.append((plot_breakdown, [path, "--per", "layer", "--top", "40", "--out",
                                       os.path.join(out, f"breakdown-{name}")]))

    series = {}
    for path, r in zip(report_paths, reports):
        series.setdefault((r["arch"]["name"], r["workload"]["name"]), {})[r["workload"]["batch"]] = path
    for (arch, wl), by_batch in sorted(series.items()):
        if len(by_batch) >= 2:
            paths = [by_batch[b] for b in sorted(by_batch)]
            calls.append((plot_batch, paths + ["--out", os.path.join(out, f"batch-{slug(wl)}-{slug(arch)}")]))

    for s in sweeps:
        _, rows = plot_sweep.read_results(s)
        ok = [r for r in rows if r["status"] == "ok"]
        keys = sorted({k for r in ok for k, v in r["metrics"].items() if isinstance(v, (int, float))})
        if not ok or not keys:
            print(f"plot_all.py: note: {s}: no successful numeric results, no sweep figure", file=sys.stderr)
            continue
        x = "summary.latency_s" if "summary.latency_s" in keys else keys[0]
        others = [k for k in keys if k != x]
        y = "summary.tops" if "summary.tops" in others else (others[0] if others else x)
        ydir = "max" if y.endswith(("tops", "utilization", "inferences_per_s")) else "min"
        name = slug(os.path.basename(os.path.dirname(os.path.abspath(s))))
        calls.append((plot_sweep, [s, "--x", f"{x}:min", "--y", f"{y}:{ydir}", "--out", os.path.join(out, f"sweep-{name}")]))

    for module, call in calls:
        rc = module.main(call)
        if rc:
            return rc
    return 0


if __name__ == "__main__":
    sys.exit(style.main_guard(main))
