#!/usr/bin/python3
"""Numbers from the TPU paper that the analysis scripts compare against, each with its source.

N. P. Jouppi et al., "In-Datacenter Performance Analysis of a Tensor Processing Unit",
ISCA 2017 (arXiv:1704.04760). Section, table and figure numbers are the paper's.
"""
import math

APPS = ["mlp0", "mlp1", "lstm0", "lstm1", "cnn0", "cnn1"]

# Table 1: the TPU batch of each app ("TPU Batch Size" column).
TPU_BATCH = {"mlp0": 200, "mlp1": 168, "lstm0": 64, "lstm1": 96, "cnn0": 8, "cnn1": 32}

# Table 1: share of the deployed TPUs (July 2016) by app type: MLPs 61%, LSTMs 29%, CNNs 5%
# (the table's cells span each pair of apps). The paper does not give the split inside a
# pair; assumption: an even split, the only one that adds no information the paper does
# not give. (A split fitted to reproduce Table 6's printed WMs would be a fit, not a source:
# ../shared/reviews/fidelity-tpu.md §6.)
TYPE_SHARE = {"mlp": 61.0, "lstm": 29.0, "cnn": 5.0}
WEIGHTS = {a: TYPE_SHARE[a.rstrip("0123456789")] / 2 for a in APPS}

# Table 4: MLP0 under its 7 ms 99th-percentile response-time limit, CPU and GPU at batch 16
# (and 64, which exceeds the limit on the CPU: 21.3 ms). The only CPU/GPU batch the paper gives.
PAPER_BASELINE_BATCH = {"mlp0": 16}

# Table 5: host interaction (PCIe) time as a share of TPU execution time ("Time for host
# CPU to interact with the TPU expressed as a percent of TPU execution time"; PCIe
# communication only, not the CPU's own share of the app). A measured input for
# host-inclusive figures only (Table 6 includes host time, Sec. 7 adds it to TPU' this way);
# never part of the device-only Table 3 comparison, which excludes host overhead.
HOST_INTERACTION = {"mlp0": 0.21, "mlp1": 0.76, "lstm0": 0.11, "lstm1": 0.20, "cnn0": 0.51, "cnn1": 0.14}

# Table 3: the TPU's cycle breakdown per app, % of cycles (rows 1-8) and measured TOPS
# (row 9). Rows 1 + 4 + 5 + 6 = 100%; rows 2 + 3 split row 1 into cycles whose MACs hold
# useful weights and those that do not; rows 7 and 8 partly explain row 6; row 9 comes from
# production runs, not the counters; host overhead is excluded.
TABLE3_ROWS = [
    (1, "Array active cycles"),
    (2, "Useful MACs in 64K matrix (% peak)"),
    (3, "Unused MACs"),
    (4, "Weight stall cycles"),
    (5, "Weight shift cycles"),
    (6, "Non-matrix cycles"),
    (7, "RAW stalls"),
    (8, "Input data stalls (PCIe)"),
    (9, "TeraOps/sec (92 peak)"),
]
TABLE3 = {  # app: rows 1..9
    "mlp0": [12.7, 12.5, 0.3, 53.9, 15.9, 17.5, 3.3, 6.1, 12.3],
    "mlp1": [10.6, 9.4, 1.2, 44.2, 13.4, 31.9, 8.4, 8.8, 9.7],
    "lstm0": [8.2, 8.2, 0.0, 58.1, 15.8, 17.9, 14.6, 5.1, 3.7],
    "lstm1": [10.5, 6.3, 4.2, 62.1, 17.1, 10.3, 10.6, 2.4, 2.8],
    "cnn0": [78.2, 78.2, 0.0, 0.0, 0.0, 21.8, 3.5, 3.4, 86.0],
    "cnn1": [46.2, 22.5, 23.7, 28.1, 7.0, 18.7, 22.8, 0.6, 14.1],
}
PAPER_TOPS = {a: rows[8] for a, rows in TABLE3.items()}  # Table 3 row 9

# Table 8: maximum Unified Buffer use per app, MiB of the 24 MiB.
TABLE8_UB_MIB = {"mlp0": 11.0, "mlp1": 2.3, "lstm0": 4.8, "lstm1": 4.5, "cnn0": 1.5, "cnn1": 13.9}


def host_time_s(app, tpu_v1_device_s):
    """Table 5's host interaction for one batch: its share times TPU v1's (device) time."""
    return HOST_INTERACTION[app] * tpu_v1_device_s


def host_inclusive_s(app, device_s, tpu_v1_device_s=None):
    """Time of one batch with Table 5's host interaction added as serial time (paper Sec. 7:
    "Adding that same extra time"): the host time is a share of TPU v1's time, so a what-if
    design (TPU') keeps v1's host time; for TPU v1 itself tpu_v1_device_s is device_s."""
    return device_s + host_time_s(app, device_s if tpu_v1_device_s is None else tpu_v1_device_s)

# Table 6: performance per die relative to the Haswell CPU, host overhead included:
# the six apps, then GM and WM.
TABLE6 = {
    "GPU/CPU": [2.5, 0.3, 0.4, 1.2, 1.6, 2.7, 1.1, 1.9],
    "TPU/CPU": [41.0, 18.5, 3.5, 1.2, 40.3, 71.0, 14.5, 29.2],
    "TPU/GPU": [16.7, 60.0, 8.0, 1.0, 25.4, 26.3, 13.2, 15.3],
}

# Sec. 7, TPU': speed-ups over TPU v1 (GM, WM); None where the paper gives no number.
TPU_PRIME = {
    "gddr5": (2.6, 3.9),            # "the geometric mean increase jumps to an impressive 2.6 and the weighted mean to 3.9"
    "gddr5+host": (1.9, 3.2),       # "Adding that same extra time drops TPU' means from 2.6 to 1.9 and 3.9 to 3.2"
    "gddr5+1050": (2.9, None),      # "Doing both raises the geometric mean (2.9) but not the weighted mean"
    "1050": (None, None),           # "increasing clock rate to 1050 MHz but not helping memory makes almost no change"
}

# Sec. 7 / Fig. 11 caption: what the paper says about each curve (Fig. 11's points are not
# printed as numbers).
FIG11_TEXT = {
    ("memory", 4.0): "WM ~3x (\"performance improves 3X on average when memory increases 4X\"); MLPs and LSTMs 3x, CNNs little",
    ("clock", 4.0): "WM little; MLPs/LSTMs \"almost no impact\", CNNs \"about 2X\"",
    ("clock+", 4.0): "WM little (\"little benefit on average with or without more accumulators\")",
    ("matrix", 2.0): "WM slightly < 1 (512x512 \"slightly degrades\"; LSTM1's 600x600: 18 -> 32 us = 0.56)",
    ("matrix+", 2.0): "WM slightly < 1 (\"whether or not they get more accumulators\")",
}


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def wmean(values, apps=APPS):
    w = [WEIGHTS[a] for a in apps]
    return sum(v * x for v, x in zip(values, w)) / sum(w)
