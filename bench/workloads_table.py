#!/usr/bin/python3
"""`tessera run` on every shipped workload x every config in configs/*.yaml, as a Markdown table.

Rows: model x config, at the workload's own batch (the TPU apps' from the paper, 1 for the
others). Columns: MACs (summary.macs: every layer's, the vector unit's
included), latency (summary.latency_s, host transfers and spills included), TOPS, utilization, and
the bytes spilled to host memory and read back (summary.spill_bytes_out / spill_bytes_in).

    /usr/bin/python3 bench/workloads_table.py --build build --update docs/workloads.md

--update rewrites the part of the file between the workloads_table markers; without it the table
goes to stdout. The ONNX models come from the build (CMake target onnx_workloads).
"""
import argparse
import concurrent.futures
import json
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
BEGIN = "<!-- workloads_table:begin (bench/workloads_table.py) -->"
END = "<!-- workloads_table:end -->"

# (name shown, workload path relative to ROOT or to the ONNX dir, extra arguments)
TPU_APPS = ["mlp0", "mlp1", "lstm0", "lstm1", "cnn0", "cnn1"]
ONNX_MODELS = [
    ("resnet50", []),
    ("mobilenet_v2", []),
    ("bert_base", ["--input-shape", "input_ids=1,128"]),
    ("gpt2_prefill", ["--input-shape", "input_ids=1,128"]),
    ("gpt2_decode", ["--input-shape", "sequence=1", "--input-shape", "past=128"]),
    ("lstm_seq2seq", []),
    ("vit_b16", []),
    ("llama_tiny_prefill", ["--input-shape", "input_ids=1,32"]),
    ("llama_tiny_decode", ["--input-shape", "sequence=1", "--input-shape", "past=32"]),
    ("yolov3_tiny", []),
]


def workloads(onnx_dir):
    out = [(app, ROOT / "workloads/tpu" / f"{app}.yaml", []) for app in TPU_APPS]
    out.append(("bert_layer.yaml", ROOT / "workloads/bert_layer.yaml", []))
    out += [(name, onnx_dir / f"{name}.onnx", args) for name, args in ONNX_MODELS]
    return out


def run_one(tessera, config, name, path, args, scratch):
    out = pathlib.Path(scratch) / f"{name}-{config.stem}"
    cmd = [str(tessera), "run", "-q", "-a", str(config), "-w", str(path), "-o", str(out)] + args
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        # Paths relative to the repository, so the table reads the same from any checkout.
        message = (proc.stdout + proc.stderr).strip().replace(str(ROOT) + "/", "")
        return name, config.stem, None, message.splitlines()[-1:]
    report = json.loads((out / "report.json").read_text())
    summary = dict(report["summary"], batch=report["workload"]["batch"])
    return name, config.stem, summary, None


def human_seconds(s):
    if s >= 1e-3:
        return f"{s * 1e3:,.3f} ms"
    return f"{s * 1e6:,.1f} µs"


def human_bytes(b):
    if b == 0:
        return "0"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if b >= scale:
            return f"{b / scale:,.2f} {unit}"
    return f"{b} B"


def table(results, order, configs):
    lines = ["| model | config | batch | MACs | latency | TOPS | utilization | spilled out | read back |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name in order:
        for config in configs:
            summary, error = results[(name, config)]
            if summary is None:
                lines.append(f"| {name} | {config} | | – | error: {' '.join(error)} | | | | |")
                continue
            lines.append(
                f"| {name} | {config} | {summary['batch']} | {summary['macs']:,} | {human_seconds(summary['latency_s'])} | "
                f"{summary['tops']:.2f} | {100 * summary['utilization']:.1f}% | "
                f"{human_bytes(summary['spill_bytes_out'])} | {human_bytes(summary['spill_bytes_in'])} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="build directory holding tessera and workloads/onnx")
    ap.add_argument("--onnx-dir", help="generated ONNX models (default: BUILD/workloads/onnx)")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="runs in parallel")
    ap.add_argument("--update", help="Markdown file whose marked table to rewrite")
    a = ap.parse_args()
    build = (ROOT / a.build).resolve()
    tessera = build / "tessera"
    onnx_dir = pathlib.Path(a.onnx_dir).resolve() if a.onnx_dir else build / "workloads/onnx"
    configs = sorted((ROOT / "configs").glob("*.yaml"))
    # tpu-v1 first: the reference
    configs.sort(key=lambda c: (c.stem != "tpu-v1", c.stem))
    work = workloads(onnx_dir)
    for _, path, _ in work:
        if not path.exists():
            sys.exit(f"{path}: missing (build the onnx_workloads target)")
    results = {}
    with tempfile.TemporaryDirectory(prefix="workloads-table-") as scratch:
        with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
            futures = [pool.submit(run_one, tessera, c, name, path, args, scratch)
                       for name, path, args in work for c in configs]
            for f in futures:
                name, config, summary, error = f.result()
                results[(name, config)] = (summary, error)
    text = table(results, [w[0] for w in work], [c.stem for c in configs])
    if a.update:
        doc = pathlib.Path(a.update)
        body = doc.read_text()
        if BEGIN not in body or END not in body:
            sys.exit(f"{doc}: no {BEGIN} ... {END} markers")
        head, rest = body.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        doc.write_text(head + BEGIN + "\n\n" + text + "\n" + END + tail)
    else:
        sys.stdout.write(text)
    return 1 if any(s is None for s, _ in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
