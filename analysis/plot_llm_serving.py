#!/usr/bin/python3
"""Figures of `tessera serve-llm` runs (docs/serving.md, "LLM serving").

Usage:
  build/tessera serve-llm -a configs/tpu-v6e.yaml -m workloads/llm/llama-3-8b.yaml \\
      --trace workloads/llm/traces/conversation-1k.csv --slo-ttft-ms 2000 --slo-tpot-ms 100 --out out/llm/v6e
  /usr/bin/python3 analysis/plot_llm_serving.py out/llm/v6e [out/llm/h100 ...] --out fig/llm [--label v6e --label H100]

Each argument is a serve-llm output directory (report.json, requests.csv, timeline.csv, curve.csv).
Writes four figures, each OUT-NAME.pdf and .png:
  latency-cdf        CDFs of TTFT, TPOT and end-to-end latency per request (requests.csv), SLOs dashed
  throughput-vs-rate output tokens/s, and TTFT/TPOT p99, against the request rate (curve.csv), SLO lines
  kv-occupancy       KV-cache occupancy over time, preemptions marked (timeline.csv; replica 0)
  cost               energy (and $, where the run had prices) per million output tokens at the headline run
Labels and units come from metric_labels.py. Malformed input: one-line error, exit 2.
"""
import argparse
import csv
import json
import os
import sys

import metric_labels
import report_io
import report_io
import style

REQUEST_COLUMNS = ["arrival_s", "ttft_ms", "tpot_ms", "e2e_ms", "output_tokens"]
CURVE_COLUMNS = ["replicas", "rate_per_s", "output_tokens_per_s", "ttft_p99_ms", "tpot_p99_ms", "slo_ttft_ms", "slo_tpot_ms"]
TIMELINE_COLUMNS = ["replica", "start_s", "seconds", "kv_occupancy", "preempted"]


def read_csv(path, columns):
    """Rows of a CSV as dicts of floats for `columns`, each error naming file:line."""
    rows = report_io.read_csv_rows(path, "a CSV of tessera serve-llm", columns)
    out = []
    for i, r in enumerate(rows, start=2):
        row = {}
        for c in columns:
            try:
                row[c] = report_io.number(float(r[c]), f"{path}:{i}: {c}")
            except (TypeError, ValueError):
                raise report_io.InputError(f"{path}:{i}: {c}: expected a number, got {r[c]!r}") from None
        out.append(row)
    return out


def load_run(directory):
    report_path = os.path.join(directory, "report.json")
    try:
        with open(report_path, encoding="utf-8") as f:
            report = json.load(f)
    except OSError as e:
        raise report_io.InputError(f"{report_path}: cannot read: {e.strerror}") from e
    except ValueError as e:
        raise report_io.InputError(f"{report_path}: not JSON ({e})") from e
    if report.get("tool") != "tessera serve-llm" or "result" not in report:
        raise report_io.InputError(f"{report_path}: not a report.json of tessera serve-llm")
    curve_path = os.path.join(directory, "curve.csv")
    return {
        "dir": directory,
        "report": report,
        "requests": read_csv(os.path.join(directory, "requests.csv"), REQUEST_COLUMNS),
        "timeline": read_csv(os.path.join(directory, "timeline.csv"), TIMELINE_COLUMNS),
        "curve": read_csv(curve_path, CURVE_COLUMNS) if os.path.exists(curve_path) else [],
        "curve_targets": curve_targets(curve_path) if os.path.exists(curve_path) else [],
    }


def curve_targets(path):
    """The target column of curve.csv (one block of rows per target: the run's, then --baseline's)."""
    with open(path, encoding="utf-8", newline="") as f:
        return [r.get("target", "") for r in csv.DictReader(f)]


def curve_lines(run):
    """[(target name, [points])] of a run's curve.csv, in file order."""
    lines = []
    for name, point in zip(run["curve_targets"], run["curve"]):
        if not lines or lines[-1][0] != name:
            lines.append((name, []))
        lines[-1][1].append(point)
    return lines


def run_label(run):
    t = run["report"]["target"]
    return f"{t['name']} x{t['replicas']}"


def color(i):
    return style.OKABE_ITO[(5 + 2 * i) % 8] if i else style.PLATFORM_COLORS["accelerator"]


def slo_line(ax, value_ms, scale, horizontal=False):
    """The SLO `value_ms` (the report's ms) on an axis whose values are report value x `scale`."""
    if value_ms and value_ms > 0:
        (ax.axhline if horizontal else ax.axvline)(value_ms * scale, color="#D55E00", ls=":", lw=1.0)
        return True
    return False


def latency_cdf(runs, labels, out, width):
    fig, axes = style.figure(width, width * 0.42, ncols=3)
    for ax, key in zip(axes, ["ttft_ms", "tpot_ms", "e2e_ms"]):
        def values(run):
            # A request of one token has no TPOT.
            return sorted(r[key] for r in run["requests"] if key != "tpot_ms" or r["output_tokens"] > 1)
        label, scale = metric_labels.axis(key, [v for run in runs for v in values(run)])
        for i, run in enumerate(runs):
            xs = values(run)
            if xs:
                ax.step([x * scale for x in xs], [(k + 1) / len(xs) for k in range(len(xs))], where="post", color=color(i),
                        label=labels[i])
        if key in runs[0]["report"]["slo"]:
            slo_line(ax, runs[0]["report"]["slo"][key], scale)
        ax.set_xlabel(label)
        ax.set_ylim(0, 1.0)
    axes[0].set_ylabel("fraction of requests")
    axes[0].legend(loc="lower right")
    return style.save(fig, f"{out}-latency-cdf")


def throughput_vs_rate(runs, labels, out, width):
    fig, (top, bottom) = style.figure(width, width * 1.1, nrows=2, sharex=True)
    rates = [p["rate_per_s"] for run in runs for p in run["curve"]]
    xlabel, xs = metric_labels.axis("rate_per_s", rates)
    _, ts = metric_labels.axis("output_tokens_per_s", [p["output_tokens_per_s"] for run in runs for p in run["curve"]])
    lat = [p[c] for run in runs for p in run["curve"] for c in ("ttft_p99_ms", "tpot_p99_ms")]
    _, ls = metric_labels.axis("ttft_ms", lat)
    index = 0
    for i, run in enumerate(runs):
        lines = curve_lines(run)
        for name, c in lines:
            label = labels[i] if len(lines) == 1 else (name if len(runs) == 1 else f"{labels[i]}: {name}")
            top.plot([p["rate_per_s"] * xs for p in c], [p["output_tokens_per_s"] * ts for p in c], marker="o", ms=3,
                     color=color(index), label=label)
            bottom.plot([p["rate_per_s"] * xs for p in c], [p["ttft_p99_ms"] * ls for p in c], marker="o", ms=3,
                        color=color(index), label=f"{label}: TTFT p99")
            bottom.plot([p["rate_per_s"] * xs for p in c], [p["tpot_p99_ms"] * ls for p in c], marker="s", ms=3,
                        ls="--", color=color(index), label=f"{label}: TPOT p99")
            index += 1
        rep = run["report"]
        if rep.get("mode") == "max-rate" and rep.get("feasible"):
            top.axvline(rep["rate_per_s"] * xs, color=color(i), ls=":", lw=0.8)
    slo = runs[0]["report"]["slo"]
    for key in ("ttft_ms", "tpot_ms"):
        if slo_line(bottom, slo[key], ls, horizontal=True):
            bottom.annotate(f"{'TTFT' if key == 'ttft_ms' else 'TPOT'} SLO {slo[key]:g} ms", xy=(0.01, slo[key] * ls),
                            xycoords=("axes fraction", "data"), xytext=(0, 2), textcoords="offset points", fontsize=6,
                            color="#D55E00")
    top.set_ylabel(metric_labels.axis("output_tokens_per_s", [p["output_tokens_per_s"] for r in runs for p in r["curve"]])[0])
    bottom.set_ylabel(f"p99 latency ({metric_labels.axis('ttft_ms', lat)[0].rsplit('(', 1)[1]}")
    bottom.set_yscale("log")
    from matplotlib import ticker

    bottom.yaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    bottom.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    bottom.yaxis.set_minor_formatter(ticker.NullFormatter())
    bottom.set_xlabel(xlabel)
    top.legend(loc="upper left")
    bottom.legend(loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=2, fontsize=5.5)
    return style.save(fig, f"{out}-throughput-vs-rate")


def kv_occupancy(runs, labels, out, width):
    fig, ax = style.figure(width)
    times = [r["start_s"] + r["seconds"] for run in runs for r in run["timeline"] if r["replica"] == 0]
    xlabel, xs = metric_labels.axis("start_s", times)
    ylabel, ys = metric_labels.axis("kv_occupancy", [1.0])
    for i, run in enumerate(runs):
        t = [r for r in run["timeline"] if r["replica"] == 0]
        ax.step([(r["start_s"] + r["seconds"]) * xs for r in t], [r["kv_occupancy"] * ys for r in t], where="post",
                color=color(i), label=labels[i], lw=0.8)
        pre = [r for r in t if r["preempted"] > 0]
        if pre:
            ax.plot([(r["start_s"] + r["seconds"]) * xs for r in pre], [r["kv_occupancy"] * ys for r in pre], "x", ms=3,
                    color="#D55E00", label="preemption" if i == 0 else None)
    ax.set_ylim(0, 105)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title("KV cache over time (replica 0)")
    ax.legend(loc="lower right")
    return style.save(fig, f"{out}-kv-occupancy")


def cost(runs, labels, out, width):
    # Every target of every run: the run's own, then its --baseline ones (report.json "compared").
    bars = []
    for i, run in enumerate(runs):
        rep = run["report"]
        bars.append((labels[i], rep["result"]))
        for c in rep.get("compared", []):
            bars.append((f"{labels[i]}: {c['target']['name']}" if len(runs) > 1 else c["target"]["name"], c["result"]))
    priced = all("usd_per_million_output_tokens" in r for _, r in bars)
    key, field = ("usd_per_million", "usd_per_million_output_tokens") if priced else \
        ("energy_kwh_per_million", "energy_kwh_per_million_output_tokens")
    values = [r[field] for _, r in bars]
    fig, ax = style.figure(width, width * 0.6)
    ax.bar(range(len(bars)), values, color=[color(i) for i in range(len(bars))])
    for i, v in enumerate(values):
        ax.annotate(f"{v:.3g}", xy=(i, v), xytext=(0, 2), textcoords="offset points", ha="center", fontsize=6)
    ax.set_xticks(range(len(bars)))
    ax.set_xticklabels([b[0] for b in bars], fontsize=6)
    ax.set_ylabel(metric_labels.axis(key, values)[0])
    ax.set_title("at the headline run" + ("" if priced else " (no --usd-per-chip-hour: energy only)"))
    return style.save(fig, f"{out}-cost")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("runs", nargs="+", help="serve-llm output directories")
    ap.add_argument("--out", "-o", required=True, help="output path prefix (writes PREFIX-NAME.pdf and .png)")
    ap.add_argument("--label", action="append", help="legend name of each directory, in order")
    ap.add_argument("--width", type=float, default=style.SINGLE_COLUMN_IN)
    args = ap.parse_args(argv)
    if args.label and len(args.label) != len(args.runs):
        raise report_io.InputError(f"give one --label per directory ({len(args.runs)}), got {len(args.label)}")
    runs = [load_run(d) for d in args.runs]
    labels = args.label or [run_label(r) for r in runs]
    paths = latency_cdf(runs, labels, args.out, style.DOUBLE_COLUMN_IN)
    if any(r["curve"] for r in runs):
        paths += throughput_vs_rate(runs, labels, args.out, args.width)
    paths += kv_occupancy(runs, labels, args.out, args.width)
    paths += cost(runs, labels, args.out, args.width)
    for p in paths:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(report_io.main_guard(main))
