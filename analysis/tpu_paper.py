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

# Table 5: host interaction (PCIe) time as a share of TPU execution time.
HOST_INTERACTION = {"mlp0": 0.21, "mlp1": 0.76, "lstm0": 0.11, "lstm1": 0.20, "cnn0": 0.51, "cnn1": 0.14}

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
