#!/usr/bin/python3
"""Whole-process wall time of `tessera run` per design point, against the targets.

Usage:
  /usr/bin/python3 bench/time_apps.py [--repeat 9] [--arch configs/tpu-v1.yaml] [--bin build/tessera]
                                       [--onnx-dir build/workloads/onnx] [WORKLOAD ...]

WORKLOAD is a preset name (mlp0 mlp1 lstm0 lstm1 cnn0 cnn1 resnet50 bert_base), a YAML
graph, or an ONNX file optionally followed by its input shapes as `FILE@NAME=d0,d1,...`.
Default: the six TPU-paper apps, ResNet-50 at batch 1 and BERT-base at 128 tokens.

Each run is a fresh process (start, parsing, compilation, SystemC elaboration, simulation,
the three report files); the figure is the median of --repeat runs after one warm-up.
Besides wall time it prints simulated cycles per wall second, model events per wall
second (busy intervals of all unit tracks, counted from one extra --trace run), the CPU
time (user + sys) and peak resident memory of the process (its own rusage, from wait4;
Linux carries the forking Python's resident size into the child's ru_maxrss, so the
figure is an upper bound, about 10 MiB high).
On a loaded machine the CPU time is the better estimate of an idle machine's wall time.
The last column compares the median wall time with the targets of docs/performance.md.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
APPS = ["mlp0", "mlp1", "lstm0", "lstm1", "cnn0", "cnn1"]
ONNX_PRESETS = {"resnet50": ("resnet50.onnx", []), "bert_base": ("bert_base.onnx", ["input_ids=1,128"])}
# Targets (issue 7): per design point, wall time of the whole process.
TARGET_S = {"resnet50": 0.100, "bert_base": 0.200}
ALL_APPS_TARGET_S = 0.500
RSS_TARGET_MIB = 200


def resolve(name, onnx_dir):
    """(label, workload path, extra arguments) of a preset or a path."""
    if name in APPS:
        return name, f"workloads/tpu/{name}.yaml", []
    if name in ONNX_PRESETS:
        file, shapes = ONNX_PRESETS[name]
        path = os.path.join(onnx_dir, file)
        return name, path, [a for s in shapes for a in ("--input-shape", s)]
    path, _, shapes = name.partition("@")
    extra = [a for s in shapes.split("@") if s for a in ("--input-shape", s)] if shapes else []
    return os.path.splitext(os.path.basename(path))[0], path, extra


def run_once(binary, arch, workload, extra, out, trace=None):
    """(wall seconds, CPU seconds (user + sys), peak RSS in MiB) of one `tessera run` process."""
    cmd = [binary, "run", "-q", "-a", arch, "-w", workload, "-o", out] + extra
    if trace:
        cmd += ["--trace", trace]
    before = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - before
    err = proc.stderr.read()
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"time_apps: {workload}: tessera failed (exit {proc.returncode}): {err.strip()}")
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def count_events(trace_path):
    # Line by line (one event per line), not json.load: a parsed trace would swell this
    # process, and a child's ru_maxrss starts from its parent's resident size at fork.
    with open(trace_path) as f:
        return sum(1 for line in f if '"ph":"X"' in line)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("workloads", nargs="*", default=APPS + list(ONNX_PRESETS))
    p.add_argument("--arch", default="configs/tpu-v1.yaml")
    p.add_argument("--repeat", type=int, default=9)
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "tessera"))
    p.add_argument("--onnx-dir", default=os.path.join(ROOT, "build", "workloads", "onnx"))
    args = p.parse_args()
    if args.repeat < 1:
        sys.exit("time_apps: --repeat must be at least 1")
    print(f"load average before: {os.getloadavg()[0]:.1f}", file=sys.stderr)
    print("| workload | median wall | min | max | median CPU | simulated cycles | sim. cycles / wall s | events | events / wall s"
          " | peak RSS | target |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    apps_total = apps_cpu = 0.0
    worst_rss = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.workloads:
            label, workload, extra = resolve(name, args.onnx_dir)
            if not os.path.exists(os.path.join(ROOT, workload)):
                sys.exit(f"time_apps: {workload}: no such file (ONNX models: build the project first)")
            out = os.path.join(tmp, label)
            trace = os.path.join(tmp, label + "-trace.json")
            run_once(args.bin, args.arch, workload, extra, out, trace)  # warm-up; counts the events
            events = count_events(trace)
            runs = [run_once(args.bin, args.arch, workload, extra, out) for _ in range(args.repeat)]
            times = [t for t, _, _ in runs]
            cpu = statistics.median(c for _, c, _ in runs)
            rss = max(r for _, _, r in runs)
            worst_rss = max(worst_rss, rss)
            cycles = json.load(open(os.path.join(out, "report.json")))["summary"]["latency_cycles"]
            med = statistics.median(times)
            if label in APPS:
                apps_total += med
                apps_cpu += cpu
            target = ""
            if label in TARGET_S:
                t = TARGET_S[label]
                target = f"< {t * 1e3:.0f} ms: " + ("met" if med < t else f"missed by {(med - t) * 1e3:.0f} ms")
            print(f"| {label} | {med * 1e3:.1f} ms | {min(times) * 1e3:.1f} ms | {max(times) * 1e3:.1f} ms"
                  f" | {cpu * 1e3:.1f} ms | {cycles:,} | {cycles / med:.3g} | {events:,} | {events / med:.3g} | {rss:.0f} MiB | {target} |")
    if apps_total:
        verdict = "met" if apps_total < ALL_APPS_TARGET_S else f"missed by {(apps_total - ALL_APPS_TARGET_S) * 1e3:.0f} ms"
        print(f"| six apps together | {apps_total * 1e3:.1f} ms | | | {apps_cpu * 1e3:.1f} ms | | | | | |"
              f" < {ALL_APPS_TARGET_S * 1e3:.0f} ms: {verdict} |")
    print(f"\npeak RSS of any run: {worst_rss:.0f} MiB (target < {RSS_TARGET_MIB} MiB: "
          f"{'met' if worst_rss < RSS_TARGET_MIB else 'missed'})")
    print(f"load average after: {os.getloadavg()[0]:.1f}", file=sys.stderr)


if __name__ == "__main__":
    main()
