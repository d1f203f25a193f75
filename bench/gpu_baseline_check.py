#!/usr/bin/python3
"""Checks a GPU baseline spec against measurements of the real part.

Tessera's CPU/GPU baselines are analytic models of datasheet parts (configs/baselines/*.yaml,
docs/baselines.md). This script puts one of them beside figures measured on the real GPU by
bench/gpu_measure.py (PyTorch, eager and CUDA-graph replay; checked in under bench/measured/):

  1. GEMMs: for every measured m x k x n (bf16 and int8), the spec's predicted kernel time for
     the same GEMM (a one-layer YAML workload, `tessera run --baseline SPEC:PRECISION`) against
     the measured time; the ratio predicted / measured and the efficiency each implies.
  2. Models: ResNet-50, ViT-B/16, BERT-base and Llama-2-7B (the workload library's ONNX files
     at the measured batch and lengths): the spec's predicted latency (kernels + per-kernel
     launch overhead; host link excluded, as the measurement starts with the inputs on the
     GPU) against the measured CUDA-graph replay (device time) and eager PyTorch.

  /usr/bin/python3 workloads/onnx/generate_models.py --out build/workloads/llama llama2_7b_prefill llama2_7b_decode
  /usr/bin/python3 bench/gpu_baseline_check.py --build build --measured bench/measured/h200-pytorch.json \\
      --update docs/baselines.md

Nothing here needs a GPU; `--update` rewrites the block between the markers
<!-- gpu-check:begin --> and <!-- gpu-check:end --> of the given Markdown file.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BEGIN, END = "<!-- gpu-check:begin -->", "<!-- gpu-check:end -->"

# Which workload file and command-line bindings reproduce each measured model
# (the shapes bench/gpu_measure.py builds; workloads/onnx/generate_models.py).
def model_run(row):
    """(label, onnx file stem, extra `tessera run` arguments) for one measured model row."""
    name = row["name"]
    if name in ("resnet50", "vit_b16"):
        return "%s, batch %d" % (name, row["batch"]), name, ["--batch", str(row["batch"])]
    if name == "bert_base":
        return ("bert_base, batch %d, %d tokens" % (row["batch"], row["sequence"]), name,
                ["--input-shape", "input_ids=%d,%d" % (row["batch"], row["sequence"])])
    if name == "llama2_7b_prefill":
        return ("Llama-2-7B prefill, %d tokens" % row["tokens"], name,
                ["--input-shape", "input_ids=1,%d" % row["tokens"]])
    if name == "llama2_7b_decode":
        return ("Llama-2-7B decode, cache %d" % row["past"], name,
                ["--input-shape", "sequence=1", "--input-shape", "past=%d" % row["past"]])
    raise ValueError("no workload for measured model '%s'" % name)


def gemm_yaml(m, k, n, dtype):
    """A one-layer workload whose only matrix layer is the GEMM m x k x n (fc: batch m)."""
    return ("name: gemm_%dx%dx%d\nbatch: %d\ndtype: %s\ninputs:\n  - {name: x, shape: [%d]}\n"
            "layers:\n  - {name: gemm, op: fc, input: x, units: %d}\n" % (m, k, n, m, dtype, k, n))


def run_tessera(tessera, arch, workload, extra, baseline):
    with tempfile.TemporaryDirectory() as out:
        cmd = [tessera, "run", "-q", "-a", arch, "-w", workload, "--out", out, "--baseline", baseline] + extra
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError("%s: %s" % (" ".join(cmd), p.stderr.strip()))
        with open(os.path.join(out, "report.json")) as f:
            return json.load(f)


def ratio(pred, meas):
    return pred / meas if meas > 0 else float("nan")


def gemm_rows(tessera, arch, spec, gemms):
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for g in gemms:
            if "ms" not in g:
                continue
            precision = "int8" if g["dtype"] == "int8" else "bf16"
            path = os.path.join(tmp, "g.yaml")
            with open(path, "w") as f:
                f.write(gemm_yaml(g["m"], g["k"], g["n"], "int8"))
            r = run_tessera(tessera, arch, path, [], "%s:%s" % (spec, precision))
            layer = r["baselines"][0]["layers"][0]
            kernel_s = layer["latency_s"] - layer["overhead_s"]
            rows.append(dict(m=g["m"], k=g["k"], n=g["n"], precision=precision, measured_us=g["ms"] * 1e3,
                             predicted_us=kernel_s * 1e6, predicted_eff=layer["efficiency"],
                             measured_tops=g["tflops"], peak_tops=r["baselines"][0]["peak_tops"]))
    return rows


def model_rows(tessera, arch, spec, precision, models, workloads):
    rows = []
    for m in models:
        if "ms" not in m:
            continue
        label, stem, extra = model_run(m)
        path = None
        for d in workloads:
            if os.path.exists(os.path.join(d, stem + ".onnx")):
                path = os.path.join(d, stem + ".onnx")
                break
        if path is None:
            sys.exit("%s.onnx: not found in %s; generate it with workloads/onnx/generate_models.py" % (
                stem, ", ".join(workloads)))
        r = run_tessera(tessera, arch, path, extra, "%s:%s" % (spec, precision))
        s = r["baselines"][0]["summary"]
        rows.append(dict(label=label, measured_eager_ms=m["ms"], measured_graph_ms=m.get("graph_ms"),
                         predicted_ms=(s["latency_s"] - s["host_link_s"]) * 1e3, kernel_ms=s["kernel_s"] * 1e3,
                         overhead_ms=s["overhead_s"] * 1e3, bound=dominant(r["baselines"][0]["layers"]),
                         accelerator_ms=r["summary"]["latency_s"] * 1e3, macs=s["macs"]))
    return rows


def dominant(layers):
    """The bound that accounts for most of the predicted time (compute, memory, on_chip, overhead)."""
    by = {}
    for l in layers:
        by[l["bound"]] = by.get(l["bound"], 0.0) + l["latency_s"]
    return max(by, key=by.get) if by else "-"


def markdown(measured, spec, arch, gemms, models):
    env = measured["env"]
    out = []
    out.append("Measured %s (%s, %d SMs; driver and clocks: %s), PyTorch %s, CUDA %s, on %s; "
               "median of %d timed runs after warm-up (`bench/measured/%s`). Predicted: "
               "`configs/baselines/%s.yaml` through Tessera's baseline model, compiled layers of "
               "`-a %s`." % (env.get("gpu", env["device"]), env.get("memory_gib", "?") and "%s GiB" % env.get("memory_gib"),
                             env.get("sms", 0), env.get("nvidia_smi", "-"), env["torch"], env.get("cuda", "-"),
                             env["date"], env["repeat"], measured.get("_file", "?"), spec, arch))
    out.append("")
    out.append("Micro-benchmarks: back-to-back small kernels through PyTorch take %.1f us each (spec "
               "`launch_us`); a device-memory copy moves %.0f GB/s counting bytes read and written "
               "(spec: bandwidth x efficiency)." % (measured["micro"]["small_kernel_us"],
                                                    measured["micro"]["copy_gb_per_s"]))
    out.append("")
    out.append("**Models** (batch and lengths as measured; the prediction excludes the host link, "
               "since the measurement starts with the inputs on the GPU):")
    out.append("")
    out.append("| workload | measured, CUDA graph | measured, eager | predicted | of which launch | predicted / graph | "
               "predicted / eager | predicted bound | TPU v1 (Tessera) |")
    out.append("|---|---:|---:|---:|---:|---:|---:|---|---:|")
    for r in models:
        g = r["measured_graph_ms"]
        out.append("| %s | %s | %.3f ms | %.3f ms | %.3f ms | %s | %.2f | %s | %.3f ms |" % (
            r["label"], "%.3f ms" % g if g else "-", r["measured_eager_ms"], r["predicted_ms"], r["overhead_ms"],
            "%.2f" % ratio(r["predicted_ms"], g) if g else "-", ratio(r["predicted_ms"], r["measured_eager_ms"]),
            r["bound"], r["accelerator_ms"]))
    out.append("")
    for precision in ("bf16", "int8"):
        rows = [g for g in gemms if g["precision"] == precision]
        if not rows:
            continue
        big = [g for g in rows if g["measured_us"] >= 50]
        out.append("**GEMMs, %s** (m x k x n; measured back to back, per GEMM; predicted kernel time without "
                   "`launch_us`; efficiency = share of the %.0f TOPS dense peak):" % (precision, rows[0]["peak_tops"]))
        out.append("")
        out.append("| m | k x n | measured | predicted | predicted / measured | measured eff. | predicted eff. |")
        out.append("|---:|---|---:|---:|---:|---:|---:|")
        for g in rows:
            out.append("| %d | %d x %d | %.1f us | %.1f us | %.2f | %.0f%% | %.0f%% |" % (
                g["m"], g["k"], g["n"], g["measured_us"], g["predicted_us"], ratio(g["predicted_us"], g["measured_us"]),
                100 * g["measured_tops"] / g["peak_tops"], 100 * g["predicted_eff"]))
        if big:
            rs = [ratio(g["predicted_us"], g["measured_us"]) for g in big]
            out.append("")
            out.append("GEMMs of at least 50 us measured (%d): predicted / measured median %.2f, range %.2f-%.2f." % (
                len(big), statistics.median(rs), min(rs), max(rs)))
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def update(path, text):
    with open(path) as f:
        doc = f.read()
    if BEGIN not in doc or END not in doc:
        sys.exit("%s: markers %s ... %s not found" % (path, BEGIN, END))
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(path, "w") as f:
        f.write(head + BEGIN + "\n" + text + END + tail)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="build directory (tessera, workloads)")
    ap.add_argument("--measured", default=os.path.join(HERE, "measured", "h200-pytorch.json"),
                    help="JSON written by bench/gpu_measure.py")
    ap.add_argument("--spec", default="h200", help="baseline spec to check (configs/baselines/NAME.yaml)")
    ap.add_argument("--arch", default=os.path.join(ROOT, "configs", "tpu-v1.yaml"),
                    help="accelerator config whose compiled layers the baseline model costs")
    ap.add_argument("--no-gemms", action="store_true", help="skip the GEMM grid")
    ap.add_argument("--update", metavar="MD", help="rewrite the gpu-check block of this Markdown file")
    args = ap.parse_args()
    tessera = os.path.join(args.build, "tessera")
    with open(args.measured) as f:
        measured = json.load(f)
    measured["_file"] = os.path.basename(args.measured)
    precision = "bf16" if measured["env"]["dtype"] == "bfloat16" else measured["env"]["dtype"]
    workloads = [os.path.join(args.build, "workloads", d) for d in ("onnx", "llama")]
    gemms = [] if args.no_gemms else gemm_rows(tessera, args.arch, args.spec, measured["gemm"])
    models = model_rows(tessera, args.arch, args.spec, precision, measured["models"], workloads)
    text = markdown(measured, args.spec, os.path.relpath(args.arch, ROOT), gemms, models)
    if args.update:
        update(args.update, text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
