#!/usr/bin/python3
"""Large-workload benchmark of issue 19 (not a test): whole-process `tessera run` and
`tessera compile` of LLM-sized and small-array workloads.

Usage:
  /usr/bin/python3 workloads/onnx/generate_models.py --out build/workloads/llama llama2_7b_prefill
  /usr/bin/python3 bench/scale_bench.py [--repeat 3] [--bin build/tessera] [--no-compile] [--events] [CASE ...]

CASE is one of the names below (default: all). Each figure is the median of --repeat fresh
processes, measured by /usr/bin/time -f '%e %U %S %M' (wall s, user s, sys s, peak RSS KiB):
CPU = user + sys, the better estimate of an idle machine's wall time on a loaded one.
`run` is a whole `tessera run -q` (start, import, compile, SystemC elaboration, simulation,
reports); `compile` is `tessera compile` (start, import, compile, the listing). Instructions
come from report.json (summary.instructions: the expanded program), the compact program's
size from the compile listing's header (entries at the top level / instruction templates
stored, repeats folded: issue 19); bytes per instruction = peak RSS of the
compile process / instructions (an upper bound: it includes the process, the imported
graph and the listing). With --events, one extra `--trace` run counts the model events
(busy intervals of all unit tracks) for events per CPU second (slow for big cases).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ONNX = "build/workloads/onnx"
LLAMA = "build/workloads/llama"  # generated on demand, outside the directory the build regenerates
TPU = "configs/tpu-v1.yaml"
APPS = ["mlp0", "mlp1", "lstm0", "lstm1", "cnn0", "cnn1"]
# name: (arch, workload, extra arguments, target wall s of a run or None, target MiB or None)
CASES = {
    "llama2_7b_512": (TPU, f"{LLAMA}/llama2_7b_prefill.onnx", ["--input-shape", "input_ids=1,512"], 0.5, 200),
    "llama2_7b_2048": (TPU, f"{LLAMA}/llama2_7b_prefill.onnx", ["--input-shape", "input_ids=1,2048"], 1.5, 200),
    "llama2_7b_4096": (TPU, f"{LLAMA}/llama2_7b_prefill.onnx", ["--input-shape", "input_ids=1,4096"], None, None),
    # The chip template (issue 30): TPU v6e, bf16, tensors in HBM.
    "llama2_7b_2048_v6e": ("configs/tpu-v6e.yaml", f"{LLAMA}/llama2_7b_prefill.onnx",
                           ["--input-shape", "input_ids=1,2048", "--precision", "bf16"], 2.0, 200),
    # One TPU v4 GEMM of the silicon set (bench/tpu_v4_gemm.py), 1024^3 fp16 on eight MXUs.
    "gemm_1024_v4": ("configs/tpu-v4.yaml", "bench/gemm_1024.yaml", [], 0.05, None),
    "resnet50_b1": (TPU, f"{ONNX}/resnet50.onnx", [], 0.05, None),
    "resnet50_b64": (TPU, f"{ONNX}/resnet50.onnx", ["--input-shape", "input=64,3,224,224"], None, None),
    "bert_base_b32": (TPU, f"{ONNX}/bert_base.onnx", ["--input-shape", "input_ids=32,128"], None, None),
    **{app: (TPU, f"workloads/tpu/{app}.yaml", [], None, None) for app in APPS},
    "gnmt_os32": ("bench/edge-os-32.yaml", "bench/gnmt_gemms.yaml", [], 5.0, 200),
    # The same GEMMs on smaller arrays: more tiles, the same memory (issue 19).
    "gnmt_os16x16": ("bench/edge-os-16x16.yaml", "bench/gnmt_gemms.yaml", [], None, 200),
    "gnmt_os12x14": ("bench/edge-os-12x14.yaml", "bench/gnmt_gemms.yaml", [], None, 200),
}


def timed(cmd):
    """(wall s, CPU s, peak RSS MiB) of one process, from /usr/bin/time."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
        proc = subprocess.run(["/usr/bin/time", "-o", t.name, "-f", "%e %U %S %M"] + cmd, cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            sys.exit(f"scale_bench: {' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()[-400:]}")
        wall, user, sys_, rss = t.read().split()[-4:]
    return float(wall), float(user) + float(sys_), int(rss) / 1024


def median_of(cmd, repeat):
    runs = [timed(cmd) for _ in range(repeat)]
    return (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs),
            statistics.median(r[2] for r in runs))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cases", nargs="*", default=list(CASES))
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--bin", default="build/tessera")
    p.add_argument("--no-compile", action="store_true", help="skip the `tessera compile` measurement")
    p.add_argument("--events", action="store_true", help="count model events with one extra --trace run")
    args = p.parse_args()
    for c in args.cases:
        if c not in CASES:
            sys.exit(f"scale_bench: unknown case {c} (known: {', '.join(CASES)})")
    print(f"load average before: {os.getloadavg()[0]:.1f}", file=sys.stderr)
    print("| case | run wall | run CPU | run peak RSS | compile CPU | compile peak RSS | instructions"
          " | compact (entries / templates) | instr. / compile CPU s | RSS bytes / instr. | sim. cycles"
          " | events / run CPU s | target |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.cases:
            arch, workload, extra, t_s, t_mib = CASES[name]
            if not os.path.exists(os.path.join(ROOT, workload)):
                sys.exit(f"scale_bench: {workload}: missing (see the usage: generate the ONNX models)")
            out = os.path.join(tmp, name)
            run = [args.bin, "run", "-q", "-a", arch, "-w", workload, "-o", out] + extra
            timed(run)  # warm-up (page cache)
            wall, cpu, rss = median_of(run, args.repeat)
            summary = json.load(open(os.path.join(out, "report.json")))["summary"]
            instr, cycles = summary["instructions"], summary["latency_cycles"]
            ccpu = crss = None
            compact = ""
            if not args.no_compile:
                listing = os.path.join(tmp, name + ".txt")
                comp = [args.bin, "compile", "-a", arch, "-w", workload, "-o", listing] + extra
                _, ccpu, crss = median_of(comp, args.repeat)
                with open(listing) as f:
                    for line in f:
                        if line.startswith("# compact form: "):  # "# compact form: N entries, T instruction templates, ..."
                            words = line.split()
                            compact = f"{int(words[3]):,} / {int(words[5]):,}"
                            break
                        if not line.startswith("#"):
                            break
            events = ""
            if args.events:
                trace = os.path.join(tmp, name + "-trace.json")
                subprocess.run(run + ["--trace", trace], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
                with open(trace) as f:
                    n = sum(1 for line in f if '"ph":"X"' in line)
                os.remove(trace)
                events = f"{n / cpu:.3g}" if cpu else f"{n:,} events"
            target = []
            if t_s is not None:
                target.append(f"< {t_s:g} s: " + ("met" if wall < t_s else f"missed by {wall - t_s:.2f} s (CPU {cpu:.2f} s)"))
            if t_mib is not None:
                target.append(f"< {t_mib} MiB: " + ("met" if rss < t_mib else f"missed by {rss - t_mib:.0f} MiB"))
            comp_cols = (f"{ccpu:.3f} s | {crss:.0f} MiB | {instr:,} | {compact} | {(instr / ccpu if ccpu else float('inf')):.3g} | {crss * 1048576 / instr:.0f}"
                         if ccpu is not None else f" | | {instr:,} | | | ")
            print(f"| {name} | {wall:.3f} s | {cpu:.3f} s | {rss:.0f} MiB | {comp_cols} | {cycles:,} | {events} | {'; '.join(target)} |",
                  flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}", file=sys.stderr)


if __name__ == "__main__":
    main()
