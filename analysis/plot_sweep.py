#!/usr/bin/python3
"""Scatter of a design sweep with its Pareto front, from results.jsonl or results.csv.

Usage:
  /usr/bin/python3 analysis/plot_sweep.py out/sweeps/smoke/results.jsonl --out fig/smoke
      --x summary.latency_s:min --y summary.tops:max [--color array.rows] [--workload mlp1]
      [--logx] [--logy] [--label-front]

Input: the sweep runner's results.jsonl (one JSON object per line: point, index, workload,
batch, params {...}, status "ok"|"failed", error, metrics {...}; other keys are ignored),
results.csv (columns point, index, workload, batch, status, error, then parameters and
metrics by name), or a sweep directory holding either. A last line cut short by a killed
write is skipped, as the runner does; any other malformed line is an error.

--x/--y name a metric (or a parameter, or batch) with the direction that is better:
":min" or ":max" (default x:min, y:max), as in an experiment's `pareto:` list. Failed
points are left out and counted in the legend. The Pareto front (points no other point
beats in both) is drawn as a step line and printed as a table. --color colours points
by a parameter or metric (numbers: a colour scale; text: a palette); by default by
workload when there are several.
Writes OUT.pdf and OUT.png. Malformed input: one-line error, exit status 2.
"""
import argparse
import csv
import json
import math
import os
import sys

import style

FIXED_CSV = ["point", "index", "workload", "batch", "status", "error"]


def _num(text):
    try:
        v = float(text)
    except (TypeError, ValueError):
        return text
    return v if math.isfinite(v) else text


def read_jsonl(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    # The text after the last newline is a killed write's partial line (or empty).
    complete, tail = lines[:-1], lines[-1]
    for n, line in enumerate(complete, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise style.InputError(f"{path}:{n}: not a sweep result row (invalid JSON: {e.msg})") from e
        if not isinstance(row, dict):
            raise style.InputError(f"{path}:{n}: not a sweep result row (not an object)")
        for key in ("status", "metrics"):
            if key not in row:
                raise style.InputError(f"{path}:{n}: not a sweep result row (missing '{key}')")
        if not isinstance(row["metrics"], dict) or not isinstance(row.get("params", {}), dict):
            raise style.InputError(f"{path}:{n}: 'metrics' and 'params' must be objects")
        rows.append({"point": str(row.get("point", row.get("index", n))), "workload": row.get("workload", ""),
                     "batch": row.get("batch"), "index": row.get("index"), "status": row["status"],
                     "error": row.get("error"), "params": row.get("params", {}) or {}, "metrics": row["metrics"]})
    if tail.strip():
        print(f"{os.path.basename(sys.argv[0])}: note: {path}: skipped an incomplete last line", file=sys.stderr)
    return rows


def read_csv(path):
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.reader(f)
        try:
            header = next(reader)
        except StopIteration:
            raise style.InputError(f"{path}: empty file (expected a header line)") from None
        if "status" not in header:
            raise style.InputError(f"{path}: not a sweep results.csv (no 'status' column in the header)")
        rows = []
        for n, cells in enumerate(reader, 2):
            if not cells:
                continue
            if len(cells) != len(header):
                raise style.InputError(f"{path}:{n}: {len(cells)} fields, the header has {len(header)}")
            rec = dict(zip(header, cells))
            values = {k: _num(v) for k, v in rec.items() if k not in FIXED_CSV and v != ""}
            rows.append({"point": rec.get("point", str(n)), "workload": rec.get("workload", ""),
                         "batch": _num(rec.get("batch")), "index": rec.get("index"), "status": rec["status"],
                         "error": rec.get("error") or None, "params": values, "metrics": values})
    return rows


def read_results(path):
    if os.path.isdir(path):
        for name in ("results.jsonl", "results.csv"):
            if os.path.exists(os.path.join(path, name)):
                path = os.path.join(path, name)
                break
        else:
            raise style.InputError(f"{path}: no results.jsonl or results.csv in this directory")
    try:
        rows = read_csv(path) if path.endswith(".csv") else read_jsonl(path)
    except OSError as e:
        raise style.InputError(f"{path}: cannot read: {e.strerror}") from e
    except UnicodeDecodeError:
        raise style.InputError(f"{path}: not a sweep result file (not UTF-8 text)") from None
    if not rows:
        raise style.InputError(f"{path}: no result rows")
    return path, rows


def value(row, key):
    for where in (row["metrics"], row["params"]):
        if key in where:
            return where[key]
    if key in ("batch", "workload", "point", "index"):
        return row.get(key)
    return None


def parse_axis(spec, default_dir):
    name, _, direction = spec.rpartition(":") if spec.endswith((":min", ":max")) else (spec, "", default_dir)
    return name, direction or default_dir


def pareto(points, xdir, ydir):
    """Indices of points that no other point beats or equals in both and beats in one."""
    sx = 1 if xdir == "min" else -1
    sy = 1 if ydir == "min" else -1
    order = sorted(range(len(points)), key=lambda i: (sx * points[i][0], sy * points[i][1]))
    front, best = [], math.inf
    for i in order:
        y = sy * points[i][1]
        if y < best:
            front.append(i)
            best = y
    return front


def parser():
    """The command line (also the defaults of the options for `make_figure`)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("results", help="results.jsonl, results.csv, or a sweep output directory")
    ap.add_argument("--out", "-o", required=True, help="output path without extension (writes .pdf and .png)")
    ap.add_argument("--x", default="summary.latency_s:min", help="metric[:min|:max] on the x axis")
    ap.add_argument("--y", default="summary.tops:max", help="metric[:min|:max] on the y axis")
    ap.add_argument("--color", help="parameter or metric to colour points by")
    ap.add_argument("--workload", help="keep only this workload's points")
    ap.add_argument("--logx", action="store_true")
    ap.add_argument("--logy", action="store_true")
    ap.add_argument("--label-front", action="store_true", help="write each front point's id next to it")
    ap.add_argument("--title")
    ap.add_argument("--width", type=float, default=style.SINGLE_COLUMN_IN)
    ap.add_argument("--height", type=float, default=2.5)
    return ap


def make_figure(path, rows, args):
    """The scatter and Pareto front of result rows (read_results' form; `path` names them in
    messages) under the options `args` (parser()'s). Returns (figure, front), front being
    [(row, (x, y))] along the front."""
    xkey, xdir = parse_axis(args.x, "min")
    ykey, ydir = parse_axis(args.y, "max")
    if args.workload:
        rows = [r for r in rows if r["workload"] == args.workload]
        if not rows:
            raise style.InputError(f"{path}: no rows of workload '{args.workload}'")
    ok = [r for r in rows if r["status"] == "ok"]
    failed = len(rows) - len(ok)
    pts, kept = [], []
    for r in ok:
        x, y = value(r, xkey), value(r, ykey)
        if x is None or y is None:
            missing = xkey if x is None else ykey
            have = ", ".join(sorted(set(r["metrics"]) | set(r["params"])))
            raise style.InputError(f"{path}: point {r['point']} has no '{missing}' (it has: {have})")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in (x, y)):
            raise style.InputError(f"{path}: point {r['point']}: '{xkey}' and '{ykey}' must be numbers, got {x!r}, {y!r}")
        if (args.logx and x <= 0) or (args.logy and y <= 0):
            continue
        pts.append((float(x), float(y)))
        kept.append(r)
    if not pts:
        raise style.InputError(f"{path}: no successful point to plot ({failed} failed)")

    fig, ax = style.figure(args.width, args.height)
    color_key = args.color or ("workload" if len({r["workload"] for r in kept}) > 1 else None)
    if color_key:
        cvals = [value(r, color_key) for r in kept]
        if all(v is None for v in cvals):
            raise style.InputError(f"{path}: no point has '{color_key}' (for --color)")
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in cvals if v is not None)
        if numeric and len({v for v in cvals if v is not None}) > 6:
            sc = ax.scatter([p[0] for p in pts], [p[1] for p in pts], c=[v if v is not None else math.nan for v in cvals],
                            cmap="viridis", s=9, linewidths=0, zorder=2)
            cb = fig.colorbar(sc, ax=ax, pad=0.02)
            cb.set_label(color_key, fontsize=7)
            cb.ax.tick_params(labelsize=6)
        else:
            cats = sorted({v for v in cvals if v is not None}, key=lambda v: (str(type(v)), v))
            for i, c in enumerate(cats):
                sel = [p for p, v in zip(pts, cvals) if v == c]
                ax.scatter([p[0] for p in sel], [p[1] for p in sel], s=9, linewidths=0, zorder=2,
                           color=style.OKABE_ITO[(i + 1) % len(style.OKABE_ITO)], label=f"{color_key} = {c:g}"
                           if isinstance(c, float) else f"{color_key} = {c}")
    else:
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=9, linewidths=0, color="#0072B2", zorder=2,
                   label="design points")

    front = pareto(pts, xdir, ydir)
    fx = [pts[i][0] for i in front]
    fy = [pts[i][1] for i in front]
    ax.step(fx, fy, where="post", color="#D55E00", lw=0.9, zorder=3, label="Pareto front")
    ax.scatter(fx, fy, s=18, facecolors="none", edgecolors="#D55E00", linewidths=0.8, zorder=4)
    if args.label_front:
        for i in front:
            ax.annotate(kept[i]["point"], pts[i], xytext=(3, 3), textcoords="offset points", fontsize=5)
    if args.logx:
        ax.set_xscale("log")
    if args.logy:
        ax.set_yscale("log")
    arrow = {"min": "lower is better", "max": "higher is better"}
    ax.set_xlabel(f"{xkey} ({arrow[xdir]})")
    ax.set_ylabel(f"{ykey} ({arrow[ydir]})")
    title = args.title or f"{len(pts)} design points" + (f", {failed} failed (not shown)" if failed else "")
    ax.set_title(title)
    ax.legend(loc="best", fontsize=6)
    return fig, [(kept[i], pts[i]) for i in front]


def main(argv):
    args = parser().parse_args(argv)
    xkey, xdir = parse_axis(args.x, "min")
    ykey, ydir = parse_axis(args.y, "max")
    path, rows = read_results(args.results)
    fig, front = make_figure(path, rows, args)
    for p in style.save(fig, args.out):
        print(p)
    print(f"Pareto front ({xkey}:{xdir}, {ykey}:{ydir}):")
    for row, (x, y) in front:
        params = ", ".join(f"{k}={v}" for k, v in sorted(row["params"].items()) if k not in (xkey, ykey))
        print(f"  {row['point']}: {xkey}={x:g} {ykey}={y:g}  {params}")
    return 0


if __name__ == "__main__":
    sys.exit(style.main_guard(main))
