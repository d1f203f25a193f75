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
  sweep-<name>        each sweep's Pareto plot over its experiment's first two `pareto:`
                      axes (the ones `tessera sweep --summarize` uses; the experiment file
                      is found through the sweep's sweep.json); a sweep whose experiment has
                      no `pareto:` gets latency:min vs throughput:max when it kept both
                      metrics, else no figure and a note saying so. --sweep-x/--sweep-y
                      choose the axes for every sweep instead.
When a workload has reports at several batch sizes, the summary figures (roofline,
breakdown, speedup) use its largest batch. A report that is a sweep's design point
(SWEEP/points/<id>/report.json) has its breakdown named by the sweep, workload, batch and
the values of the parameters the sweep varies (breakdown-tpu-bandwidth-mlp0-b200-rows256-
wmem_bw34), never by the point's id. Prints the files written.
Malformed input: one-line error, exit status 2.
"""
import argparse
import json
import os
import re
import sys

import yaml

import plot_batch
import plot_breakdown
import plot_roofline
import plot_speedup
import metric_labels
import plot_sweep
import report_io


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
        here = [b["name"] for b in report_io.baselines_of(r)]
        names = here if names is None else [n for n in names if n in here]
    return names or []


def sweep_axes(results_path, rows):
    """The Pareto axes of a sweep: its experiment's first two `pareto:` entries (through
    sweep.json's experiment_file), else latency:min and throughput:max when the rows have
    both, else None."""
    manifest = os.path.join(os.path.dirname(results_path), "sweep.json")
    try:
        with open(manifest, encoding="utf-8") as f:
            experiment = json.load(f).get("experiment_file")
        with open(experiment, encoding="utf-8") as f:
            axes = (yaml.safe_load(f) or {}).get("pareto") or []
    except (OSError, ValueError, TypeError, AttributeError, yaml.YAMLError):
        axes = []
    if isinstance(axes, list) and len(axes) >= 2 and all(isinstance(a, str) for a in axes[:2]):
        return axes[0], axes[1]
    have = {k for r in rows for k in r["metrics"]}
    if {"summary.latency_s", "summary.inferences_per_s"} <= have:
        return "summary.latency_s:min", "summary.inferences_per_s:max"
    return None


def point_names(sweeps):
    """{absolute path of a point's directory: file-name part from its sweep, workload, batch and
    the values of the parameters its sweep varies}."""
    names = {}
    for s in sweeps:
        try:
            _, rows = plot_sweep.read_results(s)
        except report_io.InputError:
            continue
        varying = sorted({k for r in rows for k in r["params"]
                          if len({metric_labels.fmt(q["params"][k]) for q in rows if q["params"].get(k) is not None}) > 1})
        sweep = os.path.basename(os.path.dirname(os.path.abspath(s)))
        for r in rows:
            parts = [sweep, r["workload"] or "", f"b{metric_labels.fmt(r['batch'])}" if r["batch"] is not None else ""]
            parts += [metric_labels.slug(k, r["params"][k]) for k in varying
                      if k not in ("workload", "batch") and r["params"].get(k) is not None]
            names[os.path.join(os.path.dirname(os.path.abspath(s)), "points", r["point"])] = \
                "-".join(slug(p) for p in parts if p)
    return names


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("dir", help="directory holding report.json files and/or sweep results")
    ap.add_argument("--out", help="where the figures go (default DIR/figures)")
    ap.add_argument("--sweep-x", help="every sweep's Pareto x axis, metric:min|max (default: its experiment's)")
    ap.add_argument("--sweep-y", help="every sweep's Pareto y axis, metric:min|max (default: its experiment's)")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.dir):
        raise report_io.InputError(f"{args.dir}: not a directory")
    out = args.out or os.path.join(args.dir, "figures")
    report_paths, sweeps = find(args.dir)
    report_paths = [p for p in report_paths if not os.path.abspath(p).startswith(os.path.abspath(out) + os.sep)]
    if not report_paths and not sweeps:
        raise report_io.InputError(f"{args.dir}: no report.json or results.jsonl/results.csv below it")
    reports = [report_io.load_report(p) for p in report_paths]
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
            if any(report_io.baselines_of(r) for _, r in chosen if r["arch"]["name"] == arch):
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
    by_point = point_names(sweeps)
    for path in report_paths:
        directory = os.path.dirname(os.path.abspath(path))
        name = slug(by_point.get(directory, os.path.basename(directory)))
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
        name = slug(os.path.basename(os.path.dirname(os.path.abspath(s))))
        if not any(r["status"] == "ok" for r in rows):
            print(f"plot_all.py: note: {s}: no successful point, no sweep figure", file=sys.stderr)
            continue
        axes = sweep_axes(s, rows)
        x = args.sweep_x or (axes[0] if axes else None)
        y = args.sweep_y or (axes[1] if axes else None)
        if not x or not y:
            print(f"plot_all.py: note: {s}: its experiment has no pareto: axes and the rows lack summary.latency_s "
                  f"or summary.inferences_per_s; no sweep figure (choose one with --sweep-x and --sweep-y)",
                  file=sys.stderr)
            continue
        calls.append((plot_sweep, [s, "--x", x, "--y", y, "--out", os.path.join(out, f"sweep-{name}")]))

    for module, call in calls:
        rc = module.main(call)
        if rc:
            return rc
    return 0


if __name__ == "__main__":
    sys.exit(report_io.main_guard(main))
