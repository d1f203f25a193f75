#!/usr/bin/python3
"""The one catalogue of axis labels for sweep figures: what each report metric and config
parameter is called on a figure, its unit, and how its values are scaled for reading
(80e-6 s -> "80 µs", 3.2e5 inferences/s -> "0.32 M inferences/s", 25165824 B -> "24 MiB").

Every sweep figure (plot_sweep.py: Pareto and line plots), plot_all.py, and the Python
package's plot_pareto/plot_lines take their labels from `axis()`; `name()` gives a label
without a unit (legends: "array rows = 256"), `slug()` a short piece of a file name.

A key not in the catalogue still gets a unit when its name says it (`_s`, `_bytes`,
`_gb_per_s`, `_mhz`, `_j`, `_w`, `_mm2`, `cycles.`, ...), else its last dotted part and no unit.
"""
import math
import re

# Unit families: how a value in the base unit is rescaled for reading.
#   "small": SI prefixes down from the base (s -> ms, µs, ns; J -> mJ, µJ)
#   "large": SI prefixes up (k, M, G) written as words before the unit ("M inferences/s")
#   "binary": bytes in KiB, MiB, GiB
#   "fixed": as it stands
_SMALL = [(1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"), (1e-12, "p")]
_LARGE = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")]
_BINARY = [(2.0 ** 40, "TiB"), (2.0 ** 30, "GiB"), (2.0 ** 20, "MiB"), (2.0 ** 10, "KiB"), (1.0, "B")]


class Quantity:
    """label: words for the axis; unit: the base unit of the report's value; family: scaling
    (above); factor: multiplies the report's value into the base unit (0..1 fractions -> %);
    short: the key's piece of a file name."""

    def __init__(self, label, unit, family="fixed", factor=1.0, short=None):
        self.label, self.unit, self.family, self.factor, self.short = label, unit, family, factor, short


Q = Quantity
# Report metrics (docs/configs.md and the report's keys) and config parameters (docs/configs.md).
CATALOGUE = {
    # report.json summary
    "summary.latency_s": Q("latency", "s", "small", short="latency"),
    "summary.latency_cycles": Q("latency", "cycles", "large", short="latency_cycles"),
    "summary.inferences_per_s": Q("throughput", "inferences/s", "large", short="throughput"),
    "summary.tops": Q("achieved", "TOPS", short="tops"),
    "summary.peak_tops": Q("peak", "TOPS", short="peak_tops"),
    "summary.utilization": Q("MAC utilization", "%", factor=100.0, short="utilization"),
    "summary.macs": Q("MACs", "MACs", "large"),
    "summary.oi_macs_per_weight_byte": Q("operational intensity", "MAC/weight byte"),
    "summary.weight_memory_bytes": Q("weight-memory traffic", "B", "binary"),
    "summary.unified_buffer_peak_bytes": Q("unified-buffer peak use", "B", "binary"),
    "summary.energy_j": Q("energy per batch", "J", "small", short="energy"),
    "summary.energy_per_inference_j": Q("energy per inference", "J", "small", short="energy_per_inference"),
    "summary.inferences_per_j": Q("inferences per joule", "inferences/J", "large"),
    "summary.power_w": Q("power", "W", "small", short="power"),
    "summary.chip_power_w": Q("chip power", "W", "small"),
    "summary.tops_per_w": Q("efficiency", "TOPS/W", short="tops_per_w"),
    "summary.area_mm2": Q("area", "mm²", short="area"),
    "roofline.weight_memory.bound": Q("roofline bound", "TOPS"),
    "sram_bytes": Q("on-chip SRAM", "B", "binary", short="sram"),
    # config parameters
    "clock_mhz": Q("clock", "MHz", short="clock"),
    "array.rows": Q("array rows", "PEs", short="rows"),
    "array.cols": Q("array columns", "PEs", short="cols"),
    "array.dataflow": Q("dataflow", "", short="dataflow"),
    "unified_buffer.capacity": Q("unified buffer", "B", "binary", short="ub"),
    "unified_buffer.read_bytes_per_cycle": Q("unified-buffer read port", "B/cycle", short="ub_read"),
    "unified_buffer.write_bytes_per_cycle": Q("unified-buffer write port", "B/cycle", short="ub_write"),
    "accumulators.entries": Q("accumulator entries", "rows", short="acc"),
    "weight_fifo.depth_tiles": Q("weight FIFO depth", "tiles", short="fifo"),
    "weight_memory.bandwidth_gb_per_s": Q("weight-memory bandwidth", "GB/s", short="wmem_bw"),
    "weight_memory.channels": Q("weight-memory channels", "channels", short="wmem_ch"),
    "weight_memory.technology": Q("weight-memory technology", "", short="wmem"),
    "weight_memory.latency_ns": Q("weight-memory latency", "ns", short="wmem_lat"),
    "energy.dram.read_pj_per_bit": Q("DRAM read energy", "pJ/bit", short="dram_pj_bit"),
    "energy.dram.activation_nj": Q("DRAM activation energy", "J", "small", factor=1e-9, short="dram_act_nj"),
    "energy.dram.background_w": Q("DRAM background power", "W", "small", short="dram_bg_w"),
    "vector_unit.lanes": Q("vector lanes", "lanes", short="lanes"),
    "pcie.lanes": Q("PCIe lanes", "lanes", short="pcie_lanes"),
    "pcie.generation": Q("PCIe generation", "", short="pcie_gen"),
    "precision": Q("precision", "", short="precision"),
    "batch": Q("batch size", "inferences", short="b"),
    "workload": Q("workload", "", short=""),
    "input_shape.sequence": Q("sequence length", "tokens", short="seq"),
    # tessera serve-llm (docs/serving.md, "LLM serving"): report.json result, curve.csv, timeline.csv
    "ttft_ms": Q("time to first token", "s", "small", factor=1e-3, short="ttft"),
    "tpot_ms": Q("time per output token", "s", "small", factor=1e-3, short="tpot"),
    "e2e_ms": Q("end-to-end latency", "s", "small", factor=1e-3, short="e2e"),
    "inter_token_ms": Q("inter-token latency", "s", "small", factor=1e-3, short="itl"),
    "rate_per_s": Q("request rate", "requests/s", "large", short="rate"),
    "output_tokens_per_s": Q("throughput", "tokens/s", "large", short="tokens_per_s"),
    "goodput_per_s": Q("goodput", "requests/s", "large", short="goodput"),
    "kv_occupancy": Q("KV-cache occupancy", "%", factor=100.0, short="kv"),
    "start_s": Q("time", "s", "small", short="t"),
    "energy_kwh_per_million": Q("energy per million output tokens", "kWh", short="kwh_per_m"),
    "usd_per_million": Q("cost per million output tokens", "$", short="usd_per_m"),
}
CYCLE_NAMES = {"array_active": "array active", "weight_shift": "weight shift", "weight_stall": "weight stall",
               "input_stall": "input stall", "raw_stall": "RAW stall", "non_matrix": "non-matrix", "pcie": "PCIe",
               "total": "total"}

# By the key's name when the catalogue does not have it: (suffix, unit, family, factor).
_SUFFIXES = [
    ("_gb_per_s", "GB/s", "fixed", 1.0), ("_pj_per_bit", "pJ/bit", "fixed", 1.0), ("_nj", "J", "small", 1e-9), ("_per_s", "/s", "large", 1.0), ("_bytes", "B", "binary", 1.0),
    ("_mhz", "MHz", "fixed", 1.0), ("_ns", "s", "small", 1e-9), ("_s", "s", "small", 1.0),
    ("_mm2", "mm²", "fixed", 1.0), ("_pj", "J", "small", 1e-12), ("_j", "J", "small", 1.0),
    ("_w", "W", "small", 1.0), ("_cycles", "cycles", "large", 1.0), ("tops", "TOPS", "fixed", 1.0),
]


def quantity(key):
    """The catalogue's entry for `key`, or one made from its name."""
    if key in CATALOGUE:
        return CATALOGUE[key]
    m = re.fullmatch(r"summary\.(cycles|host_io_cycles|busy_cycles)\.(\w+)", key)
    if m:
        what = CYCLE_NAMES.get(m.group(2), m.group(2).replace("_", " "))
        kind = {"cycles": "", "host_io_cycles": "host I/O ", "busy_cycles": "busy "}[m.group(1)]
        return Q(f"{kind}cycles, {what}".strip(), "cycles", "large", short=f"{m.group(2)}_cycles")
    m = re.fullmatch(r"summary\.energy_breakdown_j\.(\w+)", key)
    if m:
        return Q(f"energy, {m.group(1).replace('_', ' ')}", "J", "small", short=f"{m.group(1)}_energy")
    leaf = key.rsplit(".", 1)[-1]
    for suffix, unit, family, factor in _SUFFIXES:
        if leaf.endswith(suffix) and len(leaf) > len(suffix):
            words = leaf[: -len(suffix)] if suffix.startswith("_") else leaf
            return Q(words.replace("_", " "), unit, family, factor, short=leaf)
    return Q(leaf.replace("_", " "), "", short=leaf)


def name(key):
    """The axis words of `key` without a unit ("weight-memory bandwidth")."""
    return quantity(key).label


def _prefix(family, largest):
    """(divisor, prefix) that puts `largest` (a magnitude in the base unit) in [1, 1000)."""
    table = {"small": _SMALL, "large": _LARGE, "binary": _BINARY}.get(family)
    if not table or not largest or not math.isfinite(largest):
        return 1.0, ""
    for divisor, prefix in table:
        if largest >= divisor:
            return divisor, prefix
    return table[-1]


def _unit_text(q, prefix):
    if q.family == "binary":
        return prefix or "B"
    if q.family == "large" and prefix:
        return prefix + q.unit if q.unit.startswith("/") else f"{prefix} {q.unit}"
    return prefix + q.unit


def axis(key, values=()):
    """(label with unit, scale) for an axis of `key` whose values (the report's, in the report's
    units) are `values`: plot value * scale, under "latency (µs)". The prefix puts the largest
    magnitude in [1, 1000)."""
    q = quantity(key)
    finite = [abs(v) * q.factor for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    divisor, prefix = _prefix(q.family, max(finite) if finite else 0.0)
    unit = _unit_text(q, prefix)
    label = f"{q.label} ({unit})" if unit else q.label
    return label, q.factor / divisor


def fmt(value):
    """A parameter value for a legend or a file name: 34 -> "34", 0.5 -> "0.5", "24 MiB" -> "24 MiB"."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def legend(key, value):
    """A legend entry for one value of `key`: "256 PEs" for array.rows, "mlp0" for workload,
    "weight-memory technology HBM2" for a key without a unit."""
    q = quantity(key)
    if key == "workload":
        return fmt(value)
    if q.unit and q.family == "fixed" and isinstance(value, (int, float)):
        return f"{fmt(value * q.factor)} {q.unit}"
    if q.unit and q.family in ("small", "large", "binary") and isinstance(value, (int, float)):
        label, scale = axis(key, [value])
        return f"{fmt(round(value * scale, 6))} {label[label.rfind('(') + 1:-1]}"
    return f"{q.label} {fmt(value)}"


def slug(key, value):
    """A piece of a file name for `key` = `value`: "rows256", "wmem_bw34", "mlp0"."""
    q = quantity(key)
    text = (q.short if q.short is not None else key.rsplit(".", 1)[-1]) + fmt(value)
    return re.sub(r"[^A-Za-z0-9._-]+", "", text.replace(" ", "")) or "x"


_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(B|KiB|MiB|GiB|TiB|KB|MB|GB|TB)\s*$")
_SIZE_UNITS = {"B": 1, "KiB": 2 ** 10, "MiB": 2 ** 20, "GiB": 2 ** 30, "TiB": 2 ** 40,
               "KB": 10 ** 3, "MB": 10 ** 6, "GB": 10 ** 9, "TB": 10 ** 12}


def numeric(value):
    """A number for an axis: numbers as they are, a size text ("24 MiB", as configs write
    unified_buffer.capacity) as its byte count, anything else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        m = _SIZE.match(value)
        if m:
            return float(m.group(1)) * _SIZE_UNITS[m.group(2)]
    return None
