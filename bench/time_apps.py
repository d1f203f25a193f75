#!/usr/bin/python3
"""Wall time of `tessera run` per workload: median of N whole-process runs.

Usage: /usr/bin/python3 bench/time_apps.py [--repeat 7] [--arch configs/tpu-v1.yaml] [WORKLOAD.yaml ...]
Default workloads: the six TPU-paper apps. Prints a Markdown table with the
median, min and max wall time, simulated cycles, simulated cycles per wall
second and peak resident memory (max over runs).
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
APPS = [f"workloads/tpu/{a}.yaml" for a in ("mlp0", "mlp1", "lstm0", "lstm1", "cnn0", "cnn1")]


def run_once(binary, arch, workload, out):
    before = time.perf_counter()
    proc = subprocess.run([binary, "run", "-q", "-a", arch, "-w", workload, "-o", out], cwd=ROOT,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - before
    if proc.returncode != 0:
        sys.exit(f"time_apps: {workload}: tessera failed: {proc.stderr.strip()}")
    return elapsed


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("workloads", nargs="*", default=APPS)
    p.add_argument("--arch", default="configs/tpu-v1.yaml")
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "tessera"))
    args = p.parse_args()
    print("| workload | median wall | min | max | simulated cycles | sim. cycles / wall s | peak RSS |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    total = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for w in args.workloads:
            out = os.path.join(tmp, os.path.basename(w))
            run_once(args.bin, args.arch, w, out)  # warm the page cache
            times = [run_once(args.bin, args.arch, w, out) for _ in range(args.repeat)]
            cycles = json.load(open(os.path.join(out, "report.json")))["summary"]["latency_cycles"]
            rss_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            med = statistics.median(times)
            total += med
            print(f"| {os.path.basename(w)} | {med * 1e3:.1f} ms | {min(times) * 1e3:.1f} ms | {max(times) * 1e3:.1f} ms"
                  f" | {cycles} | {cycles / med:.3g} | {rss_mib:.0f} MiB |")
    print(f"| all together | {total * 1e3:.1f} ms | | | | | |")


if __name__ == "__main__":
    main()
