#!/usr/bin/python3
"""Latency, throughput and SQNR per precision policy: one Markdown table.

Usage: /usr/bin/python3 bench/precision_table.py [--arch configs/tpu-v1.yaml]
       [--policies int8,int16,first-last-int16] [--tessera build/tessera] WORKLOAD ...
A WORKLOAD is a YAML graph or an ONNX model, optionally with input shapes after '@'
(several separated by '@'): build/workloads/onnx/bert_base.onnx@input_ids=1,128
Each (workload, policy) is one `tessera run --functional`: timing at the workload's
batch, SQNR at batch 1 (docs/precision-functional.md). "worst matrix layer" is the
lowest SQNR among fc/conv2d/matmul layers: vector layers whose reference is near zero
(a LayerNorm's row mean) have a low SQNR that says nothing about the network.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MATRIX_OPS = {"fc", "conv2d", "matmul"}


def db(v):
    return "exact" if v is None else f"{v:.1f} dB"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("workloads", nargs="+")
    p.add_argument("--arch", default="configs/tpu-v1.yaml")
    p.add_argument("--policies", default="int8,int16,first-last-int16")
    p.add_argument("--tessera", "--bin", dest="tessera", default=os.path.join(ROOT, "build", "tessera"))
    args = p.parse_args()
    print("| workload | policy | latency | inferences/s | TOPS | peak TOPS | output SQNR | worst matrix layer SQNR"
          " | saturated |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.workloads:
            path, *shapes = spec.split("@")
            for policy in args.policies.split(","):
                out = os.path.join(tmp, "r")
                cmd = [args.tessera, "run", "-q", "-a", args.arch, "-w", path, "-p", policy, "--functional", "-o", out]
                for s in shapes:
                    cmd += ["--input-shape", s]
                start = time.monotonic()
                proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
                if proc.returncode != 0:
                    sys.exit(f"precision_table: {spec} {policy}: {proc.stderr.strip()}")
                print(f"precision_table: {spec} {policy}: {time.monotonic() - start:.1f} s", file=sys.stderr)
                with open(os.path.join(out, "report.json")) as f:
                    r = json.load(f)
                s, fn = r["summary"], r["functional"]
                matrix = [l for l in fn["layers"] if l["op"] in MATRIX_OPS]
                finite = [l for l in matrix if l.get("sqnr_db") is not None]
                worst = min(finite, key=lambda l: l["sqnr_db"]) if finite else None
                if worst:
                    worst_text = f"{worst['name']} {worst['sqnr_db']:.1f} dB"
                else:
                    worst_text = "exact" if matrix else "-"
                sat = sum(l.get("saturated", 0) for l in fn["layers"])
                print(f"| {r['workload']['name']} | {policy} | {s['latency_s'] * 1e3:.3f} ms | {s['inferences_per_s']:.0f}"
                      f" | {s['tops']:.2f} | {s['peak_tops']:.2f} | {db(fn.get('output_sqnr_db'))} | {worst_text} | {sat} |",
                      flush=True)


if __name__ == "__main__":
    main()
