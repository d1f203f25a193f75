"""tessera.run: one simulation (`tessera run`) as a Python call."""
import json
import os
import shutil
import subprocess
import tempfile

import pandas as pd

from ._binary import binary, environment, error_message
from ._errors import TesseraError
from .config import apply_overrides, load_arch, plain, write_yaml


class Result:
    """What `tessera run` wrote, read back.

    Attributes:
      report:  report.json as a dict (keys arch, workload, summary, layers, roofline, table3, baselines, ...)
      summary: report["summary"] (latency_s, inferences_per_s, tops, utilization, cycles, ...)
      layers:  layers.csv as a pandas DataFrame, one row per layer (index, name, op, ..., latency_s,
               cycles_array_active, ..., cycles_pcie)
      text:    the summary tessera printed
      out:     the output directory holding report.json, layers.csv and summary.md, or None when
               the run went to a temporary directory (removed)
    """

    def __init__(self, report, layers, text, out):
        self.report = report
        self.summary = report["summary"]
        self.layers = layers
        self.text = text
        self.out = out

    @property
    def arch(self):
        """report["arch"]: the configuration as Tessera resolved it."""
        return self.report["arch"]

    @property
    def workload(self):
        """report["workload"]: name, batch, precision, layers, weights, macs, ..."""
        return self.report["workload"]

    @property
    def latency_s(self):
        return self.summary["latency_s"]

    @property
    def cycles(self):
        """The cycle breakdown (array_active ... pcie, total) as a pandas Series."""
        return pd.Series(self.summary["cycles"], name="cycles")

    @property
    def baselines(self):
        """One row per baseline (--baseline): name, precision, latency_s, tops, ... from each
        baseline's summary; empty when the run had none."""
        rows = []
        for b in self.report.get("baselines", []) or []:
            row = {"name": b.get("name"), "precision": b.get("precision"), "measured": bool(b.get("measured"))}
            row.update({k: v for k, v in (b.get("summary") or {}).items() if not isinstance(v, (dict, list))})
            rows.append(row)
        return pd.DataFrame(rows)

    def __repr__(self):
        first = self.text.splitlines()[0] if self.text else f"{self.workload.get('name')} on {self.arch.get('name')}"
        return f"<tessera.Result {first}>"


def _renamed(arch, overrides):
    """`arch` (a dict) with its overrides applied and, unless they set the name themselves, named
    after them: "tpu-v1 (array.rows=128, array.cols=128)", so that the report, the summary and
    the Result say which config ran rather than the base config's name."""
    out = apply_overrides(arch, overrides)
    if overrides and "name" not in overrides:
        changes = ", ".join(f"{k}={plain(v)}" for k, v in overrides.items())
        out["name"] = f"{arch.get('name', 'arch')} ({changes})"
    return out


def _label(path, overrides):
    if not overrides:
        return path
    return f"{path} + overrides"


def _input_shape_args(input_shapes):
    if not input_shapes:
        return []
    if isinstance(input_shapes, str):
        input_shapes = [input_shapes]
    items = input_shapes.items() if isinstance(input_shapes, dict) else [(s, None) for s in input_shapes]
    args = []
    for name, dims in items:
        if dims is None:
            binding = str(name)
        elif isinstance(dims, (list, tuple)):
            binding = f"{name}=" + ",".join(str(plain(d)) for d in dims)
        else:
            binding = f"{name}={plain(dims)}"
        args += ["--input-shape", binding]
    return args


def run(arch, workload, batch=None, precision=None, baselines=(), overrides=None, *, input_shapes=None,
        out=None, functional=False, trace=None, residency=None, args=(), timeout=None):
    """Compiles and simulates `workload` on `arch` with `tessera run`; returns a Result.

    arch:         a config path (configs/*.yaml) or a dict (load_arch); dicts go to a temporary YAML file
    workload:     a YAML graph or ONNX path, or a YAML graph as a dict (load_workload)
    batch:        --batch (default: the workload's own)
    precision:    --precision: int8, uint8, int16, fp8_e4m3, fp8_e5m2, fp16, bf16, first-last-int16, a policy path,
                  or a policy dict (docs/precision.md)
    baselines:    --baseline: names ("k80", "h100-sxm", "a100:fp16", "host", "all"), a list or a comma string
    overrides:    {dotted key: value} applied to the loaded arch ({"array.rows": 128, "array.cols": 128});
                  `tessera run` has no such flag, so the config is written to a temporary file
    input_shapes: ONNX bindings: {"sequence": 1, "past": 128}, {"input_ids": [1, 128]} or ["NAME=d0,d1"]
    out:          directory for report.json, layers.csv, summary.md (kept); default: a temporary one
    functional:   --functional (numerical error per layer in report["functional"])
    trace:        --trace FILE (a Perfetto timeline)
    residency:    --residency: "host" or "device" (inputs and outputs), per class as a string
                  ("inputs=device,weights=host") or a dict ({"weights": "host"}); default: the config's
    args:         further tessera run arguments, as a list
    timeout:      seconds before the run is killed (TesseraError)

    Relative paths are relative to the current directory, as on the command line. On failure
    raises TesseraError with Tessera's message and exit status; nothing is returned and, as
    tessera promises, no report is written.
    """
    exe = binary()
    labels = {}
    tmp = tempfile.mkdtemp(prefix="tessera-run-")
    try:
        if isinstance(arch, dict):
            name = str(arch.get("name", "arch"))
            arch_path = write_yaml(_renamed(arch, overrides),
                                   os.path.join(tmp, "arch.yaml"), "architecture config written by tessera (Python)")
            labels[arch_path] = f"<arch dict '{name}'>" + (" + overrides" if overrides else "")
        elif overrides:
            source = os.fspath(arch)
            arch_path = write_yaml(_renamed(load_arch(source), overrides), os.path.join(tmp, "arch.yaml"),
                                   f"{source} with overrides written by tessera (Python)")
            labels[arch_path] = _label(source, overrides)
        else:
            arch_path = os.fspath(arch)
        if isinstance(workload, dict):
            wl_path = write_yaml(workload, os.path.join(tmp, "workload.yaml"), "workload written by tessera (Python)")
            labels[wl_path] = f"<workload dict '{workload.get('name', 'workload')}'>"
        else:
            wl_path = os.fspath(workload)
        if out is None:
            out_dir = os.path.join(tmp, "out")
        else:
            out_dir = os.fspath(out)
        cmd = [exe, "run", "--arch", arch_path, "--workload", wl_path, "--out", out_dir]
        if batch is not None:
            cmd += ["--batch", str(plain(batch))]
        if isinstance(precision, dict):
            p = write_yaml(precision, os.path.join(tmp, "precision.yaml"), "precision policy written by tessera (Python)")
            labels[p] = "<precision dict>"
            cmd += ["--precision", p]
        elif precision is not None:
            cmd += ["--precision", os.fspath(precision)]
        if baselines:
            names = [baselines] if isinstance(baselines, str) else list(baselines)
            cmd += ["--baseline", ",".join(names)]
        cmd += _input_shape_args(input_shapes)
        if functional:
            cmd += ["--functional"]
        if trace is not None:
            cmd += ["--trace", os.fspath(trace)]
        if residency is not None:
            if isinstance(residency, dict):  # {"weights": "host"}: the CLI checks classes and values
                residency = ",".join(f"{k}={v}" for k, v in residency.items())
            cmd += ["--residency", str(residency)]
        cmd += [os.fspath(a) if isinstance(a, os.PathLike) else str(a) for a in args]
        if out is None:
            labels[out_dir] = "<temporary output directory>"
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, env=environment(), timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TesseraError(f"tessera run did not finish within {timeout} s (killed)", None, "", cmd) from None
        if done.returncode != 0:
            raise TesseraError(error_message(done.stderr, done.returncode, labels), done.returncode, done.stderr, cmd)
        try:
            with open(os.path.join(out_dir, "report.json"), encoding="utf-8") as f:
                report = json.load(f)
            layers = pd.read_csv(os.path.join(out_dir, "layers.csv"))
        except (OSError, ValueError) as e:
            raise TesseraError(f"tessera run succeeded but its report in {out_dir} cannot be read: {e}",
                               done.returncode, done.stderr, cmd) from e
        text = "\n".join(line for line in done.stdout.splitlines()
                         if not (out is None and line.strip().startswith("report:")))
        return Result(report, layers, text, None if out is None else os.path.abspath(out_dir))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def load_result(out):
    """A Result from an existing `tessera run --out DIR` directory (report.json, layers.csv)."""
    out = os.fspath(out)
    with open(os.path.join(out, "report.json"), encoding="utf-8") as f:
        report = json.load(f)
    layers = pd.read_csv(os.path.join(out, "layers.csv"))
    return Result(report, layers, "", os.path.abspath(out))
