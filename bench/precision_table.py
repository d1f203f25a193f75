#!/usr/bin/python3
"""Latency, throughput and SQNR per precision policy: one Markdown table.

Usage: /usr/bin/python3 bench/precision_table.py [--arch configs/tpu-v1.yaml]
       [--policies int8,int16,first-last-int16] WORKLOAD.yaml ...
Each (workload, policy) is one `tessera run --functional` (SQNR at batch 1).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("workloads", nargs="+")
    p.add_argument("--arch", default="configs/tpu-v1.yaml")
    p.add_argument("--policies", default="int8,int16,first-last-int16")
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "tessera"))
    args = p.parse_args()
    print("| workload | policy | latency | inferences/s | TOPS | peak TOPS | output SQNR | worst layer SQNR | saturated |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for w in args.workloads:
            for policy in args.policies.split(","):
                out = os.path.join(tmp, "r")
                proc = subprocess.run([args.bin, "run", "-q", "-a", args.arch, "-w", w, "-p", policy, "--functional",
                                       "-o", out], cwd=ROOT, capture_output=True, text=True)
                if proc.returncode != 0:
                    sys.exit(f"precision_table: {w} {policy}: {proc.stderr.strip()}")
                r = json.load(open(os.path.join(out, "report.json")))
                s, f = r["summary"], r["functional"]
                layers = [l for l in f["layers"] if l.get("sqnr_db") is not None]
                worst = min(layers, key=lambda l: l["sqnr_db"]) if layers else None
                sat = sum(l.get("saturated", 0) for l in f["layers"])
                sq = f.get("output_sqnr_db")
                worst_text = f"{worst['name']} {worst['sqnr_db']:.1f} dB" if worst else "-"
                sq_text = "exact" if sq is None else f"{sq:.1f} dB"
                print(f"| {r['workload']['name']} | {policy} | {s['latency_s'] * 1e3:.3f} ms | {s['inferences_per_s']:.0f}"
                      f" | {s['tops']:.2f} | {s['peak_tops']:.2f} | {sq_text} | {worst_text} | {sat} |")


if __name__ == "__main__":
    main()
