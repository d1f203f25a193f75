#!/usr/bin/python3
"""Reading Tessera's outputs for the analysis scripts: report.json files (`tessera run`), with
the checks that make a malformed one a one-line error, and the error every script reports
in one line with exit status 2 (InputError, main_guard).

Split from style.py (issue 32 item 6), which keeps the figures' look.
"""
import csv
import json
import math
import os
import sys


class InputError(Exception):
    """A malformed or unusable input file: reported in one line, exit status 2."""


# ----------------------------------------------------------------------------- inputs

REPORT_REQUIRED = {
    "arch": ["name"],
    "workload": ["name", "batch"],
    "summary": ["latency_s", "inferences_per_s", "tops", "peak_tops", "oi_macs_per_weight_byte", "cycles"],
    "roofline": ["peak_tops", "weight_memory"],
    "layers": [],
}


def read_csv_rows(path, what, columns):
    """A CSV's rows as dicts of strings. A file that cannot be read, is not CSV text, or whose
    header lacks one of `columns`, is an InputError naming `path` and `what` it should be."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}") from e
    except (UnicodeDecodeError, csv.Error) as e:
        raise InputError(f"{path}: not {what} ({e})") from e
    if rows:
        missing = [c for c in columns if c not in rows[0]]
        if missing:
            raise InputError(f"{path}: not {what} (no column {', '.join(missing)})")
    return rows


def load_report(path):
    """Reads and checks a Tessera report.json (or a directory holding one)."""
    if os.path.isdir(path):
        path = os.path.join(path, "report.json")
    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not a Tessera report (invalid JSON at line {e.lineno}: {e.msg})") from e
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not a Tessera report (not UTF-8 text)") from e
    if not isinstance(report, dict):
        raise InputError(f"{path}: not a Tessera report (the top level is not an object)")
    for section, keys in REPORT_REQUIRED.items():
        if section not in report:
            raise InputError(f"{path}: not a Tessera report (missing '{section}')")
        for key in keys:
            if not isinstance(report[section], dict) or key not in report[section]:
                raise InputError(f"{path}: not a Tessera report (missing '{section}.{key}')")
    if not isinstance(report["layers"], list):
        raise InputError(f"{path}: not a Tessera report ('layers' is not a list)")
    baselines = report.get("baselines", [])
    if not isinstance(baselines, list):
        raise InputError(f"{path}: 'baselines' is not a list")
    for i, b in enumerate(baselines):
        for key in ("name", "summary", "roofline"):
            if not isinstance(b, dict) or key not in b:
                raise InputError(f"{path}: baselines[{i}] has no '{key}' (write it with tessera run --baseline)")
        for key in ("latency_s", "tops"):
            if key not in b["summary"]:
                raise InputError(f"{path}: baselines[{i}].summary has no '{key}'")
    report["_path"] = path
    return report


def load_reports(paths):
    if not paths:
        raise InputError("no report given")
    return [load_report(p) for p in paths]


def number(value, what):
    """A finite float, or InputError naming `what`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{what}: expected a number, got {value!r}")
    return float(value)


def accel_precision(report):
    """The accelerator's operand precision in a report: its matrix layers' dtypes ("int8", "int8 x int16", ...)."""
    for where in (report.get("workload", {}), report):
        if isinstance(where.get("precision"), str):
            return where["precision"]
    modes = []
    for layer in report["layers"]:
        if layer.get("macs", 0) and "a_dtype" in layer:
            a, b = layer["a_dtype"], layer.get("b_dtype", layer["a_dtype"])
            mode = a if a == b else f"{a} x {b}"
            if mode not in modes:
                modes.append(mode)
    return "/".join(modes) if modes else "int8"


def baselines_of(report):
    return report.get("baselines", []) or []


def spec_of(b):
    """The spec a baseline entry came from ("a100" for "a100:fp16")."""
    return b.get("spec") or b["name"].split(":")[0]


def main_guard(main):
    """Runs main(argv) and maps InputError to a one-line message and exit status 2."""
    prog = os.path.basename(sys.argv[0])
    try:
        return main(sys.argv[1:]) or 0
    except InputError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
