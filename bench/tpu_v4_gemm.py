#!/usr/bin/python3
"""TPU v4 silicon check: every measured fp16 GEMM (1,198) through `tessera run`.

(skeleton: data loading and metrics; the runner follows)
"""
import csv
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
MEASURED_DIR = os.path.join(HERE, "measured", "tpu-v4-gemm")
FILES = ("128", "1024", "4096")
CSV_NAME = "fusion_statistics_report_with_scale_sim_%s.csv"


def load_measured(directory=MEASURED_DIR):
    """The three measured files as one table (dict of numpy arrays), file order kept.
    measured_us is the mean fusion time (fusion_avg)."""
    cols = {k: [] for k in ("file", "dim_m", "dim_n", "dim_k", "measured_us", "stddev_us", "scale_sim_cycles")}
    for f in FILES:
        path = os.path.join(directory, CSV_NAME % f)
        with open(path, newline="") as fh:
            for row in csv.DictReader(fh):
                cols["file"].append(f)
                cols["dim_m"].append(int(row["dim_m"]))
                cols["dim_n"].append(int(row["dim_n"]))
                cols["dim_k"].append(int(row["dim_k"]))
                cols["measured_us"].append(float(row["fusion_avg"]))
                cols["stddev_us"].append(float(row["fusion_stddev"]))
                cols["scale_sim_cycles"].append(float(row["scale_sim_cycles"]))
    return {k: np.array(v) for k, v in cols.items()}


def ape(pred, measured):
    """Absolute percentage error of each prediction against the measurement, in %."""
    pred = np.asarray(pred, float)
    measured = np.asarray(measured, float)
    return 100.0 * np.abs(pred - measured) / measured


def error_stats(err):
    """MAPE, median and worst absolute percentage error of a set of errors (in %)."""
    err = np.asarray(err, float)
    return {"n": int(err.size), "mape": float(err.mean()), "median": float(np.median(err)),
            "worst": float(err.max())}
