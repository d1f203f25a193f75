#!/usr/bin/python3
"""Start-up benchmark of issue 19 item 4 (not a test): whole-process times of short commands.

Usage:
  /usr/bin/python3 bench/startup_bench.py [--repeat 31] [--bin build/tessera] [--bin OTHER ...]

For each binary, runs each command --repeat times, interleaved with the other binaries (so
a change in the machine's load hits all of them alike), and prints the median wall time and
the median CPU time (user + sys of the child, from getrusage) per command:

  version      `tessera --version`: dynamic loading, relocation, static initialisation
  compile_yaml `tessera compile` of the TPU-paper MLP0 (YAML): start-up, YAML, compile, listing
  run_yaml     `tessera run -q` of MLP0: the above, SystemC elaboration, simulation, reports
  compile_r50  `tessera compile` of ResNet-50 batch 1 (ONNX import)
  run_r50      `tessera run -q` of ResNet-50 batch 1 (the issue's < 50 ms whole-process target)

Also prints the dynamic loader's own statistics of `--version` (LD_DEBUG=statistics:
relocations and cycles spent relocating).
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TPU = "configs/tpu-v1.yaml"
R50 = "build/workloads/onnx/resnet50.onnx"
MLP0 = "workloads/tpu/mlp0.yaml"


def commands(binary, tmp):
    return {
        "version": [binary, "--version"],
        "compile_yaml": [binary, "compile", "-a", TPU, "-w", MLP0, "-o", os.path.join(tmp, "mlp0.txt")],
        "run_yaml": [binary, "run", "-q", "-a", TPU, "-w", MLP0, "-o", os.path.join(tmp, "mlp0")],
        "compile_r50": [binary, "compile", "-a", TPU, "-w", R50, "-o", os.path.join(tmp, "r50.txt")],
        "run_r50": [binary, "run", "-q", "-a", TPU, "-w", R50, "-o", os.path.join(tmp, "r50")],
    }


def timed(cmd):
    """(wall s, CPU s) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"startup_bench: {' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()[-400:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def loader_statistics(binary):
    env = dict(os.environ, LD_DEBUG="statistics")
    err = subprocess.run([binary, "--version"], cwd=ROOT, env=env, capture_output=True, text=True).stderr
    keep = ("total startup time in dynamic loader", "time needed for relocation", "number of relocations:",
            "number of relative relocations")
    return [" ".join(line.split()[1:]) for line in err.splitlines() if any(k in line for k in keep)][:4]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=31)
    p.add_argument("--bin", action="append", help="tessera binary (repeatable; default build/tessera)")
    args = p.parse_args()
    binaries = args.bin or ["build/tessera"]
    if not os.path.exists(os.path.join(ROOT, R50)):
        sys.exit(f"startup_bench: {R50}: missing (build the workload library: ninja -C build)")
    print(f"load average before: {os.getloadavg()[0]:.1f}", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        cmds = {b: commands(b, os.path.join(tmp, str(i))) for i, b in enumerate(binaries)}
        for i in range(len(binaries)):
            os.makedirs(os.path.join(tmp, str(i)))
        names = list(cmds[binaries[0]])
        res = {(b, n): [] for b in binaries for n in names}
        for b in binaries:  # one warm-up each (page cache)
            for n in names:
                timed(cmds[b][n])
        for _ in range(args.repeat):
            for n in names:
                for b in binaries:
                    res[(b, n)].append(timed(cmds[b][n]))
    print(f"load average after: {os.getloadavg()[0]:.1f}", file=sys.stderr)
    print(f"median of {args.repeat} runs, milliseconds")
    print("| binary | " + " | ".join(f"{n} wall | {n} CPU" for n in names) + " |")
    print("|---|" + "---:|" * (2 * len(names)))
    for b in binaries:
        cells = []
        for n in names:
            cells.append(f"{1000 * statistics.median(r[0] for r in res[(b, n)]):.1f}")
            cells.append(f"{1000 * statistics.median(r[1] for r in res[(b, n)]):.1f}")
        print(f"| {b} | " + " | ".join(cells) + " |")
    for b in binaries:
        print(f"{b}: loader: " + "; ".join(loader_statistics(b)))


if __name__ == "__main__":
    main()
