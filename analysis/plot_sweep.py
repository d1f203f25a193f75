#!/usr/bin/python3
"""Paper figures of a design sweep, from results.jsonl or results.csv: a Pareto plot or a line plot.

Usage:
  /usr/bin/python3 analysis/plot_sweep.py out/sweeps/smoke/results.jsonl --out fig/smoke
      [--x summary.latency_s:min --y summary.tops:max] [--color array.rows] [--workload mlp1]
      [--where KEY=VALUE ...] [--logx] [--logy] [--label-front]
  /usr/bin/python3 analysis/plot_sweep.py out/sweeps/tpu-bandwidth --kind line --out fig/bw
      --x weight_memory.bandwidth_gb_per_s --y summary.latency_s --group array.rows
      --workload mlp0 --where clock_mhz=700 [--logx] [--logy]

Input: the sweep runner's results.jsonl (one JSON object per line: point, index, workload,
batch, params {...}, status "ok"|"failed", error, metrics {...}; other keys are ignored),
results.csv (columns point, index, workload, batch, status, error, then parameters and
metrics by name), or a sweep directory holding either. A last line cut short by a killed
write is skipped, as the runner does; any other malformed line is an error.

--kind pareto (default): --x/--y name a metric (or a parameter, or batch) with the direction
that is better: ":min" or ":max" (default x:min, y:max), as in an experiment's `pareto:` list.
Failed points are left out and counted in the title. The Pareto front (points no other point
beats in both) is drawn as a black dashed step line (no series is black) and printed as a
table. --color colours points by a parameter or metric (numbers: a colour scale; text: a
palette); by default by workload when there are several.

--kind line: --y (a metric, default summary.latency_s) against --x (a parameter), one line per
value of --group. Every other parameter must be fixed, by the sweep or by --where KEY=VALUE
and --workload: two points of one line at the same x are an error naming what differs.

Axis labels, units and scaling (µs, M inferences/s, MiB, ...) come from metric_labels.py,
the one catalogue of labels; the layout is constrained, so no label is clipped.
Writes OUT.pdf and OUT.png. Malformed input: one-line error, exit status 2.
"""
import argparse
import csv
import json
import math
import os
import sys

import matplotlib.ticker as ticker

import metric_labels as labels
import report_io
import style

FIXED_CSV = ["point", "index", "workload", "batch", "status", "error"]
# Series colours: Okabe-Ito without black, which is the Pareto front's alone.
SERIES = [c for c in style.OKABE_ITO if c != "#000000" and c != "#F0E442"] + ["#F0E442"]
FRONT = "#000000"


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
            raise report_io.InputError(f"{path}:{n}: not a sweep result row (invalid JSON: {e.msg})") from e
        if not isinstance(row, dict):
            raise report_io.InputError(f"{path}:{n}: not a sweep result row (not an object)")
        for key in ("status", "metrics"):
            if key not in row:
                raise report_io.InputError(f"{path}:{n}: not a sweep result row (missing '{key}')")
        if not isinstance(row["metrics"], dict) or not isinstance(row.get("params", {}), dict):
            raise report_io.InputError(f"{path}:{n}: 'metrics' and 'params' must be objects")
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
            raise report_io.InputError(f"{path}: empty file (expected a header line)") from None
        if "status" not in header:
            raise report_io.InputError(f"{path}: not a sweep results.csv (no 'status' column in the header)")
        rows = []
        for n, cells in enumerate(reader, 2):
            if not cells:
                continue
            if len(cells) != len(header):
                raise report_io.InputError(f"{path}:{n}: {len(cells)} fields, the header has {len(header)}")
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
            raise report_io.InputError(f"{path}: no results.jsonl or results.csv in this directory")
    try:
        rows = read_csv(path) if path.endswith(".csv") else read_jsonl(path)
    except OSError as e:
        raise report_io.InputError(f"{path}: cannot read: {e.strerror}") from e
    except UnicodeDecodeError:
        raise report_io.InputError(f"{path}: not a sweep result file (not UTF-8 text)") from None
    if not rows:
        raise report_io.InputError(f"{path}: no result rows")
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


def parse_where(specs):
    """[(key, text)] from --where KEY=VALUE options."""
    out = []
    for spec in specs or []:
        key, eq, text = spec.partition("=")
        if not eq or not key:
            raise report_io.InputError(f"--where '{spec}': expected KEY=VALUE, e.g. clock_mhz=700")
        out.append((key.strip(), text.strip()))
    return out


def matches(v, text):
    """Whether a row's value `v` is the --where value `text` (as text, or as the same number)."""
    if v is None:
        return text in ("", "null", "None")
    if labels.fmt(v) == text or str(v) == text:
        return True
    a, b = labels.numeric(v), labels.numeric(_num(text))
    return a is not None and b is not None and a == b


def select(path, rows, args):
    """The rows of --workload and every --where KEY=VALUE; (kept, failed count)."""
    if getattr(args, "workload", None):
        rows = [r for r in rows if r["workload"] == args.workload]
        if not rows:
            raise report_io.InputError(f"{path}: no rows of workload '{args.workload}'")
    for key, text in parse_where(getattr(args, "where", None)):
        have = [value(r, key) for r in rows]
        if all(v is None for v in have):
            raise report_io.InputError(f"{path}: --where {key}={text}: no point has '{key}'")
        kept = [r for r, v in zip(rows, have) if matches(v, text)]
        if not kept:
            values = ", ".join(sorted({labels.fmt(v) for v in have if v is not None}))
            raise report_io.InputError(f"{path}: --where {key}={text}: no point has that value ({key} takes: {values})")
        rows = kept
    ok = [r for r in rows if r["status"] == "ok"]
    return ok, len(rows) - len(ok)


def parser():
    """The command line (also the defaults of the options for `make_figure`)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("results", help="results.jsonl, results.csv, or a sweep output directory")
    ap.add_argument("--out", "-o", required=True, help="output path without extension (writes .pdf and .png)")
    ap.add_argument("--kind", choices=["pareto", "line"], default="pareto",
                    help="pareto (default): scatter and Pareto front; line: --y against --x, one line per --group")
    ap.add_argument("--x", help="pareto: metric[:min|:max] (default summary.latency_s:min); line: the parameter")
    ap.add_argument("--y", help="pareto: metric[:min|:max] (default summary.tops:max); line: the metric "
                                "(default summary.latency_s)")
    ap.add_argument("--group", help="line: one line per value of this parameter (or workload)")
    ap.add_argument("--color", help="pareto: parameter or metric to colour points by")
    ap.add_argument("--workload", help="keep only this workload's points")
    ap.add_argument("--where", action="append", metavar="KEY=VALUE", help="keep only points with KEY=VALUE (repeatable)")
    ap.add_argument("--logx", action="store_true")
    ap.add_argument("--logy", action="store_true")
    ap.add_argument("--label-front", action="store_true", help="write each front point's id next to it")
    ap.add_argument("--title")
    ap.add_argument("--width", type=float, default=style.SINGLE_COLUMN_IN)
    ap.add_argument("--height", type=float, default=2.5)
    return ap


def _numbers(path, r, keys):
    out = []
    for key in keys:
        v = value(r, key)
        if v is None:
            have = ", ".join(sorted(set(r["metrics"]) | set(r["params"])))
            raise report_io.InputError(f"{path}: point {r['point']} has no '{key}' (it has: {have})")
        n = labels.numeric(v)
        if n is None:
            raise report_io.InputError(f"{path}: point {r['point']}: '{key}' must be a number, got {v!r}")
        out.append(float(n))
    return out


def _sort_key(v):
    n = labels.numeric(v)
    return (0, n, "") if n is not None else (1, 0, str(v))


def _axes(ax, xkey, ykey, xs, ys, args):
    """Scales and labels both axes from the catalogue; returns the scales (plot value = value * scale)."""
    (xlabel, sx), (ylabel, sy) = labels.axis(xkey, xs), labels.axis(ykey, ys)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    for axis, log, name in ((ax.xaxis, args.logx, "x"), (ax.yaxis, args.logy, "y")):
        if log:
            # Plain numbers at 1, 2, 5 per decade (0.2, 0.5, 1, 2 ms), not 10^0 alone.
            (ax.set_xscale if name == "x" else ax.set_yscale)("log")
            axis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: labels.fmt(float(f"{v:.6g}"))))
            axis.set_minor_formatter(ticker.NullFormatter())
        else:
            ax.ticklabel_format(axis=name, useOffset=False, style="plain")
    return sx, sy


def make_figure(path, rows, args):
    """The scatter and Pareto front of result rows (read_results' form; `path` names them in
    messages) under the options `args` (parser()'s). Returns (figure, front), front being
    [(row, (x, y))] along the front. With args.kind == "line", make_lines's figure and []."""
    if getattr(args, "kind", "pareto") == "line":
        return make_lines(path, rows, args), []
    xkey, xdir = parse_axis(args.x or "summary.latency_s:min", "min")
    ykey, ydir = parse_axis(args.y or "summary.tops:max", "max")
    ok, failed = select(path, rows, args)
    pts, kept = [], []
    for r in ok:
        x, y = _numbers(path, r, (xkey, ykey))
        if (args.logx and x <= 0) or (args.logy and y <= 0):
            continue
        pts.append((x, y))
        kept.append(r)
    if not pts:
        raise report_io.InputError(f"{path}: no successful point to plot ({failed} failed)")

    fig, ax = style.figure(args.width, args.height, layout="constrained")
    sx, sy = _axes(ax, xkey, ykey, [p[0] for p in pts], [p[1] for p in pts], args)
    spts = [(p[0] * sx, p[1] * sy) for p in pts]
    color_key = args.color or ("workload" if len({r["workload"] for r in kept}) > 1 else None)
    categorical = False  # a legend entry per value of color_key (else a colour bar, or one series)
    if color_key:
        cvals = [value(r, color_key) for r in kept]
        if all(v is None for v in cvals):
            raise report_io.InputError(f"{path}: no point has '{color_key}' (for --color)")
        nums = [labels.numeric(v) for v in cvals]
        if all(n is not None for n, v in zip(nums, cvals) if v is not None) and len({v for v in cvals if v is not None}) > 6:
            clabel, cs = labels.axis(color_key, [n for n in nums if n is not None])
            sc = ax.scatter([p[0] for p in spts], [p[1] for p in spts],
                            c=[n * cs if n is not None else math.nan for n in nums],
                            cmap="viridis", s=9, linewidths=0, zorder=2)
            cb = fig.colorbar(sc, ax=ax, pad=0.02)
            cb.set_label(clabel, fontsize=7)
            cb.ax.tick_params(labelsize=6)
        else:
            categorical = True
            cats = sorted({v for v in cvals if v is not None}, key=_sort_key)
            for i, c in enumerate(cats):
                sel = [p for p, v in zip(spts, cvals) if v == c]
                ax.scatter([p[0] for p in sel], [p[1] for p in sel], s=9, linewidths=0, zorder=2,
                           color=SERIES[i % len(SERIES)], label=labels.legend(color_key, c))
    else:
        ax.scatter([p[0] for p in spts], [p[1] for p in spts], s=9, linewidths=0, color=SERIES[0], zorder=2,
                   label="design points")

    front = pareto(pts, xdir, ydir)
    fx = [spts[i][0] for i in front]
    fy = [spts[i][1] for i in front]
    # The front in black, a colour no series has, dashed, its points ringed.
    ax.step(fx, fy, where="post", color=FRONT, lw=0.9, ls="--", zorder=3, label="Pareto front")
    ax.scatter(fx, fy, s=22, facecolors="none", edgecolors=FRONT, linewidths=0.8, zorder=4)
    if args.label_front:
        for i in front:
            ax.annotate(kept[i]["point"], spts[i], xytext=(3, 3), textcoords="offset points", fontsize=5)
    title = args.title or f"{len(pts)} design points" + (f", {failed} failed (not shown)" if failed else "")
    ax.set_title(title)
    legend_title = labels.name(color_key) if categorical else None
    entries = len(ax.get_legend_handles_labels()[0])
    if entries > 3:
        # Many series would cover points inside the axes: beside them (the layout makes room).
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize=6,
                  title=legend_title, title_fontsize=6)
    else:
        ax.legend(loc="best", fontsize=6, title=legend_title, title_fontsize=6)
    return fig, [(kept[i], pts[i]) for i in front]


def make_lines(path, rows, args):
    """--y against the parameter --x, one line per value of --group (sorted), from the ok rows of
    --workload and --where. Two points on one line at the same x (another parameter varies) are
    an error naming the parameters to fix with --where."""
    if not args.x:
        raise report_io.InputError("a line plot needs --x PARAMETER (e.g. weight_memory.bandwidth_gb_per_s)")
    xkey, _ = parse_axis(args.x, "min")
    ykey, _ = parse_axis(args.y or "summary.latency_s", "min")
    group = args.group
    ok, failed = select(path, rows, args)
    if not ok:
        raise report_io.InputError(f"{path}: no successful point to plot ({failed} failed)")
    lines = {}
    for r in ok:
        x, y = _numbers(path, r, (xkey, ykey))
        g = value(r, group) if group else None
        lines.setdefault(g, {}).setdefault(x, []).append((y, r))
    for g, by_x in lines.items():
        for x, ys in by_x.items():
            if len(ys) > 1:
                keys = sorted({k for _, r in ys for k in set(r["params"]) | {"workload", "batch"}
                               if k not in (xkey, group) and len({labels.fmt(value(q, k)) for _, q in ys}) > 1})
                where = f"{group}={labels.fmt(g)}, " if group else ""
                choices = "; ".join(f"{k} takes " + ", ".join(sorted({labels.fmt(value(q, k)) for _, q in ys}, key=lambda t: _sort_key(_num(t))))
                                    for k in keys)
                raise report_io.InputError(
                    f"{path}: {len(ys)} points at {where}{xkey}={labels.fmt(x)} ({choices or 'identical parameters'}): "
                    f"keep one with --where KEY=VALUE" + (" or --workload" if "workload" in keys else "")
                    + " or make it the --group")
    xs = [x for by_x in lines.values() for x in by_x]
    ys = [y for by_x in lines.values() for yl in by_x.values() for y, _ in yl]
    fig, ax = style.figure(args.width, args.height, layout="constrained")
    sx, sy = _axes(ax, xkey, ykey, xs, ys, args)
    markers = "os^Dv<>P"
    for i, g in enumerate(sorted(lines, key=_sort_key)):
        pts = sorted((x, yl[0][0]) for x, yl in lines[g].items())
        ax.plot([p[0] * sx for p in pts], [p[1] * sy for p in pts], marker=markers[i % len(markers)],
                color=SERIES[i % len(SERIES)], label=labels.legend(group, g) if group else None)
    if args.logx:
        # Ticks at the swept values, which a paper reader wants to read off.
        ticks = sorted({x * sx for x in xs})
        if len(ticks) <= 8:
            ax.set_xticks(ticks)
            ax.set_xticklabels([labels.fmt(round(t, 6)) for t in ticks])
            ax.minorticks_off()
    if group:
        ax.legend(title=labels.name(group), loc="best", fontsize=6, title_fontsize=6)
    parts = [args.workload] if args.workload else []
    batches = {r["batch"] for r in ok}
    if len(batches) == 1 and None not in batches and group != "batch" and xkey != "batch":
        parts.append(f"batch {labels.fmt(next(iter(batches)))}")
    parts += [labels.legend(k, _num(t)) for k, t in parse_where(args.where)]
    title = args.title if args.title is not None else ", ".join(parts)
    if title:
        ax.set_title(title)
    return fig


def main(argv):
    args = parser().parse_args(argv)
    path, rows = read_results(args.results)
    fig, front = make_figure(path, rows, args)
    for p in style.save(fig, args.out):
        print(p)
    if args.kind == "line":
        return 0
    xkey, xdir = parse_axis(args.x or "summary.latency_s:min", "min")
    ykey, ydir = parse_axis(args.y or "summary.tops:max", "max")
    print(f"Pareto front ({xkey}:{xdir}, {ykey}:{ydir}):")
    for row, (x, y) in front:
        params = ", ".join(f"{k}={v}" for k, v in sorted(row["params"].items()) if k not in (xkey, ykey))
        print(f"  {row['point']}: {xkey}={x:g} {ykey}={y:g}  {params}")
    return 0


if __name__ == "__main__":
    sys.exit(report_io.main_guard(main))
