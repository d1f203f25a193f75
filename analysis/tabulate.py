#!/usr/bin/python3
"""Tabulate Tessera reports: one Markdown row per report.json.

Usage: /usr/bin/python3 analysis/tabulate.py out/tpu-v1/*/report.json [--out table.md]

Columns: workload, batch, latency, inferences/s, achieved TOPS, the TPU paper's TOPS for
the app (Jouppi et al., ISCA 2017, Table 3 row 9, measured on TPU v1 at the Table 1 batch;
analysis/tpu_paper.py; "-" for a workload that is not one of the paper's six apps), the
analytic roofline ceiling at the workload's MACs per weight byte, the achieved share of that
ceiling, and the cycle breakdown in percent of the total.
"""
import argparse
import json
import os
import sys
import tempfile

import tpu_paper

BUCKETS = ["array_active", "weight_shift", "weight_stall", "input_stall", "raw_stall", "non_matrix", "pcie"]
REQUIRED = {"arch": ["name"], "workload": ["name", "batch"],
            "summary": ["latency_s", "inferences_per_s", "tops", "peak_tops", "oi_macs_per_weight_byte", "cycles"],
            "roofline": ["weight_memory"]}


class ReportError(Exception):
    pass


def load_report(path):
    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
    except OSError as e:
        raise ReportError(f"{path}: cannot read: {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise ReportError(f"{path}: not a Tessera report (invalid JSON at line {e.lineno}: {e.msg})") from e
    if not isinstance(report, dict):
        raise ReportError(f"{path}: not a Tessera report (top level is not an object)")
    for section, keys in REQUIRED.items():
        if section not in report:
            raise ReportError(f"{path}: not a Tessera report (missing '{section}')")
        for key in keys:
            if key not in report[section]:
                raise ReportError(f"{path}: not a Tessera report (missing '{section}.{key}')")
    return report


def fmt_latency(seconds):
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.1f} us"


def paper_tops(workload):
    """The TPU paper's measured TOPS of a paper app (Table 3 row 9), else "-"."""
    tops = tpu_paper.PAPER_TOPS.get(workload)
    return f"{tops:.1f}" if tops is not None else "-"


def table(reports):
    head = ["workload", "arch", "batch", "latency", "inferences/s", "TOPS", "paper TOPS", "ceiling TOPS", "% of ceiling",
            "MACs/weight byte"] + BUCKETS
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * 2 + ["---:"] * (len(head) - 2)) + "|"]
    for r in reports:
        s = r["summary"]
        ceiling = r["roofline"]["weight_memory"]["attainable_tops"]
        total = s["cycles"]["total"] or 1
        row = [r["workload"]["name"], r["arch"]["name"], str(r["workload"]["batch"]), fmt_latency(s["latency_s"]),
               f"{s['inferences_per_s']:.0f}", f"{s['tops']:.2f}", paper_tops(r["workload"]["name"]), f"{ceiling:.2f}",
               f"{100 * s['tops'] / ceiling:.1f}%" if ceiling else "-", f"{s['oi_macs_per_weight_byte']:.0f}"]
        row += [f"{100 * s['cycles'][b] / total:.1f}%" for b in BUCKETS]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def write_atomically(path, text):
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tabulate.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reports", nargs="+", help="report.json files written by `tessera run`")
    parser.add_argument("--out", help="write the table here (default: stdout)")
    args = parser.parse_args(argv)
    try:
        reports = [load_report(p) for p in args.reports]
    except ReportError as e:
        print(f"tabulate: error: {e}", file=sys.stderr)
        return 2
    text = table(reports)
    if args.out:
        write_atomically(args.out, text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
