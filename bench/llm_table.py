#!/usr/bin/python3
"""Runs the Llama-2-7B workloads (prefill and one decode step, generated on demand by
workloads/onnx/generate_models.py) on every shipped config and prints a Markdown table:
latency, TOPS, roofline bound (weight memory: memory- or compute-bound), weight bytes and
PCIe bytes, prefill beside decode (docs/workloads.md, "LLM workloads").

  /usr/bin/python3 workloads/onnx/generate_models.py --out build/workloads/onnx llama2_7b_prefill llama2_7b_decode
  /usr/bin/python3 bench/llm_table.py --build build --tokens 512
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(tessera, arch, model, shapes):
    with tempfile.TemporaryDirectory() as out:
        cmd = [tessera, "run", "-q", "-a", arch, "-w", model, "--out", out]
        for s in shapes:
            cmd += ["--input-shape", s]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            return {"error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[0]}
        with open(os.path.join(out, "report.json")) as f:
            return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="build directory (tessera, workloads/onnx)")
    ap.add_argument("--tokens", type=int, default=512, help="prefill length and KV-cache length of the decode step")
    ap.add_argument("--configs", nargs="*", help="configs (default: every configs/*.yaml)")
    args = ap.parse_args()
    tessera = os.path.join(args.build, "tessera")
    models = os.path.join(args.build, "workloads", "onnx")
    for m in ("llama2_7b_prefill", "llama2_7b_decode"):
        if not os.path.exists(os.path.join(models, m + ".onnx")):
            sys.exit("%s: not generated; run: /usr/bin/python3 workloads/onnx/generate_models.py --out %s "
                     "llama2_7b_prefill llama2_7b_decode" % (m, models))
    configs = args.configs or sorted(glob.glob(os.path.join(ROOT, "configs", "*.yaml")))
    n = args.tokens
    print("| config | phase | latency | tokens/s | TOPS (of peak) | bound | weight bytes | PCIe bytes to device |")
    print("|---|---|---|---|---|---|---|---|")
    for arch in configs:
        name = os.path.splitext(os.path.basename(arch))[0]
        for phase, model, shapes, tokens in (
                ("prefill %d" % n, "llama2_7b_prefill", ["input_ids=1,%d" % n], n),
                ("decode (cache %d)" % n, "llama2_7b_decode", ["sequence=1", "past=%d" % n], 1)):
            r = run(tessera, arch, os.path.join(models, model + ".onnx"), shapes)
            if "error" in r:
                print("| %s | %s | %s | | | | | |" % (name, phase, r["error"][:120]))
                continue
            s, roof = r["summary"], r["roofline"]["weight_memory"]
            print("| %s | %s | %.2f ms | %.1f | %.2f (%.0f%%) | %s | %.2f GB | %.1f MB |" % (
                name, phase, s["latency_s"] * 1e3, tokens / s["latency_s"], s["tops"], 100 * s["tops"] / s["peak_tops"],
                roof["bound"], s["weight_memory_bytes"] / 1e9, s["pcie_bytes_to_device"] / 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
