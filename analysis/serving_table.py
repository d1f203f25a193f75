#!/usr/bin/python3
"""The serving results of docs/serving.md: the TPU paper's Table 4 reproduced, MLP0's
latency-throughput curve with 1 and 4 TPUs per host, and MLPerf Server on ResNet-50.

One command regenerates the generated sections of docs/serving.md and its figure (from the
repository root; a few minutes on one core, most of it the two MLPerf Server searches):

  /usr/bin/python3 analysis/serving_table.py --tessera build/tessera --out out/serving \\
      --update-doc docs/serving.md --figures docs/figures [--skip-mlperf]

Table 4 (MLP0, per die, host time included). The host model configs/hosts/haswell-tpu-server.yaml
gives the shape of the host's CPU time; its one scale is calibrated on the TPU's batch-200 row
(225,000 requests/s per die, 4 dies per host, p99 7.0 ms). Every other number is predicted
with that scale: for each row, the p99 at the paper's rate, and the highest rate whose p99
stays within the paper's p99 for the row. The CPU (2 dies per server) and GPU (4 K80 cards,
8 dies) rows come from the same queue with the baselines' batch times. The exact commands
are printed with the tables. Malformed input: one-line error, exit status 2.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys

import doc_sections
import report_io

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

TPU, CPU, GPU = "tpu-v1", "haswell-e5-2699v3", "k80"
# Dies per server (Jouppi et al., ISCA 2017, Table 2): the replicas behind one host.
DIES = {TPU: 4, CPU: 2, GPU: 8}
LABEL = {TPU: "TPU (tpu-v1)", CPU: "CPU (Haswell die)", GPU: "GPU (K80 die)"}
# Table 4: platform, batch, 99th-percentile response (ms), inferences/s per die, % of max.
PAPER_TABLE4 = [
    (CPU, 16, 7.2, 5482, 42),
    (CPU, 64, 21.3, 13194, 100),
    (GPU, 16, 6.7, 13461, 37),
    (GPU, 64, 8.3, 36465, 100),
    (TPU, 200, 7.0, 225000, 80),
    (TPU, 250, 10.0, 280000, 100),
]
CALIBRATION_ROW = (TPU, 200)
HOST = "haswell-tpu-server"
WORKLOAD = "workloads/tpu/mlp0.yaml"
ARCH = "configs/tpu-v1.yaml"
RESNET = "${build}/workloads/onnx/resnet50.onnx"
MLPERF_CONFIGS = ["configs/tpu-v1.yaml", "configs/tpu-v1-hbm.yaml"]
MLPERF_ARGS = ["-b", "1,2,4,8,16", "--policy", "fixed,deadline", "--mlperf", "server", "--latency-bound-ms", "15"]


def shown(cmd):
    return " ".join(shlex.quote(c) for c in cmd)


class Runner:
    def __init__(self, tessera, out):
        self.tessera, self.shown_out, self.commands = tessera, out, []
        self.out = os.path.abspath(out)
        self.cache = os.path.join(self.out, "cache")

    def serve(self, name, args):
        """Runs `tessera serve ARGS --out OUT/NAME` (or reuses its serving.json) and returns it."""
        out = os.path.join(self.out, name)
        cmd = ["build/tessera", "serve"] + args + ["--out", os.path.join(self.shown_out, name)]
        self.commands.append(shown(cmd))
        if self.tessera:
            done = subprocess.run([self.tessera] + cmd[1:-1] + [out, "--cache", self.cache, "-q"], cwd=ROOT,
                                  capture_output=True, text=True)
            if done.returncode != 0:
                raise report_io.InputError(f"{shown(cmd)} failed (exit {done.returncode}): {done.stderr.strip()}")
        return load_serving(os.path.join(out, "serving.json"))


def load_serving(path):
    try:
        with open(path, encoding="utf-8") as f:
            s = json.load(f)
    except OSError as e:
        raise report_io.InputError(f"{path}: cannot read: {e.strerror} (run with --tessera first)") from e
    except json.JSONDecodeError as e:
        raise report_io.InputError(f"{path}: not a serving.json (invalid JSON at line {e.lineno})") from e
    if not isinstance(s, dict) or s.get("format") != "tessera-serving":
        raise report_io.InputError(f"{path}: not a serving.json of tessera serve")
    s["_path"] = path
    return s


def result(s, platform, batch, policy="fixed"):
    for r in s.get("results", []):
        if r.get("platform") == platform and r.get("batch") == batch and r.get("policy") == policy:
            return r
    raise report_io.InputError(f"{s['_path']}: no result for {platform} batch {batch} ({policy})")


def table4_runs(runner):
    """{"scale": k, "calibration": {...}, "rows": {(platform, batch): {...}}} from tessera serve runs."""
    common = ["-a", ARCH, "-w", WORKLOAD, "--host", HOST, "--curve", "0"]
    cal_rate = next(row[3] for row in PAPER_TABLE4 if row[:2] == CALIBRATION_ROW) * DIES[TPU]
    cal = runner.serve("table4-calibrate", common + ["-b", "200,250", "--replicas", str(DIES[TPU]), "--calibrate-batch", "200",
                                                     "--calibrate-rate", str(cal_rate), "--calibrate-latency-ms", "7",
                                                     "--latency-bound-ms", "7"])
    if not isinstance(cal.get("calibration"), dict):
        raise report_io.InputError(f"{cal['_path']}: no calibration")
    k = report_io.number(cal["calibration"].get("scale"), f"{cal['_path']}: calibration.scale")
    rows = {}
    for platform, batch, p99, ips, _ in PAPER_TABLE4:
        args = common + ["-b", str(batch), "--host-scale", repr(k), "--latency-bound-ms", f"{p99:g}",
                         "--rate", str(ips * DIES[platform])]
        if platform == TPU:
            args += ["--replicas", str(DIES[TPU])]
        else:
            args += ["--baseline", platform, "--replicas", f"{TPU}={DIES[TPU]},{platform}={DIES[platform]}"]
        s = runner.serve(f"table4-{platform}-b{batch}", args)
        r = result(s, platform, batch)
        what = f"{s['_path']}: {platform} batch {batch}"
        dies = DIES[platform]
        rows[(platform, batch)] = {
            "p99_at_rate_ms": report_io.number(r["at_rate"]["latency_ms"]["p99"], f"{what}: at_rate.latency_ms.p99"),
            "load_at_rate": (ips * dies) / report_io.number(r["capacity_per_s"], f"{what}: capacity_per_s"),
            "max_per_die": report_io.number(r["max_throughput_per_s"], f"{what}: max_throughput_per_s") / dies
            if r.get("feasible") else 0.0,
            "capacity_per_die": r["capacity_per_s"] / dies,
        }
    # The TPU's maximum at batch 200 under its 7 ms from the calibration run itself.
    r200 = result(cal, TPU, 200)
    rows[(TPU, 200)]["max_per_die"] = r200["max_throughput_per_s"] / DIES[TPU] if r200.get("feasible") else 0.0
    return {"scale": k, "calibration": cal["calibration"], "rows": rows}


def pct_err(ours, paper):
    return f"{100 * (ours - paper) / paper:+.0f}%"


def table4_markdown(data):
    rows = data["rows"]
    top = {}  # each platform's maximum: the capacity at its batch of the paper's 100% row
    for platform, batch, _, _, pct in PAPER_TABLE4:
        if pct == 100:
            top[platform] = rows[(platform, batch)]["capacity_per_die"]
    cal = data["calibration"]
    lines = [
        f"Host scale calibrated on the TPU batch-200 row: **{data['scale']:.4g}** (p99 {cal['achieved_ms']:.2f} ms at "
        f"{cal['per_replica_per_s']:,.0f}/s per die; {cal['device_only_ms']:.2f} ms with no host time). "
        "Per die; p99 in ms; IPS = inferences/s; *predicted* unless marked calibrated.",
        "",
        "| platform | batch | paper p99 | ours: p99 at the paper's IPS | error | paper IPS | ours: max IPS with p99 ≤ paper's | "
        "error | paper % of max | ours % of max |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for platform, batch, p99, ips, pct in PAPER_TABLE4:
        r = rows[(platform, batch)]
        calibrated = (platform, batch) == CALIBRATION_ROW
        over = r["load_at_rate"] >= 1
        at_rate = f"{r['p99_at_rate_ms']:.1f}" + (" (load ≥ 1)" if over else "")
        err = "—" if over else pct_err(r["p99_at_rate_ms"], p99)
        if calibrated:
            at_rate, err = f"{r['p99_at_rate_ms']:.2f} (calibrated)", "—"
        mx = r["max_per_die"]
        lines.append(f"| {LABEL[platform]} | {batch} | {p99:g} | {at_rate} | {err} | {ips:,} | "
                     f"{mx:,.0f} | {pct_err(mx, ips) if mx > 0 else 'none'} | {pct}% | {100 * mx / top[platform]:.0f}% |")
    lines += ["", "Slowdown from the latency limit (the maximum at the large batch over the throughput within ~7 ms at the "
              "small batch; paper: CPU and GPU 2.3–2.7×, TPU 1.2×):", ""]
    parts = []
    for platform, small in ((CPU, 16), (GPU, 16), (TPU, 200)):
        paper_small = next(row[3] for row in PAPER_TABLE4 if row[:2] == (platform, small))
        paper_top = next(row[3] for row in PAPER_TABLE4 if row[0] == platform and row[4] == 100)
        ours = top[platform] / rows[(platform, small)]["max_per_die"] if rows[(platform, small)]["max_per_die"] > 0 else 0
        parts.append(f"{LABEL[platform]} {ours:.2f}× (paper {paper_top / paper_small:.2f}×)")
    lines.append("; ".join(parts) + ".")
    return "\n".join(lines) + "\n"


def curve_runs(runner, scale):
    out = {}
    for n in (1, 4):
        out[n] = runner.serve(f"curve-x{n}", ["-a", ARCH, "-w", WORKLOAD, "-b", "200", "--host", HOST, "--host-scale",
                                              repr(scale), "--replicas", str(n), "--latency-bound-ms", "7", "--curve", "20"])
    return out


def curve_markdown(runs):
    lines = ["| TPUs per host | capacity/s per TPU | max IPS per TPU with p99 ≤ 7 ms | p99 there (ms) | host cores busy |",
             "|---:|---:|---:|---:|---:|"]
    for n, s in runs.items():
        r = result(s, TPU, 200)
        if not r.get("feasible"):
            lines.append(f"| {n} | {r['capacity_per_s'] / n:,.0f} | none | | |")
            continue
        at = r["at_max"]
        lines.append(f"| {n} | {r['capacity_per_s'] / n:,.0f} | {r['max_throughput_per_s'] / n:,.0f} | "
                     f"{at['latency_ms']['p99']:.2f} | {at['utilization']['host_cores']:.2f} |")
    return "\n".join(lines) + "\n"


def mlperf_runs(runner, build_dir):
    out = {}
    for cfg in MLPERF_CONFIGS:
        name = os.path.splitext(os.path.basename(cfg))[0]
        out[name] = runner.serve(f"mlperf-server-resnet50-{name}",
                                 ["-a", cfg, "-w", RESNET.replace("${build}", build_dir)] + MLPERF_ARGS)
    return out


def mlperf_markdown(runs):
    lines = ["| config | best batch, policy | max Poisson rate (queries/s) | p99 there (ms) | queries | over 15 ms | "
             "needed by early stopping | simulated s |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for name, s in runs.items():
        if not s.get("feasible"):
            lines.append(f"| {name} | none passes | | | | | | |")
            continue
        r = result(s, s["platform"], s["batch"], s["policy"])
        m = r["mlperf"]
        lines.append(f"| {name} | {s['batch']}, {s['policy']} | {s['max_throughput_per_s']:,.0f} | "
                     f"{s['latency_ms']['p99']:.2f} | {m['queries']:,} | {m['overlatency_queries']:,} | "
                     f"{m['queries_needed']:,} | {m['duration_s']:.0f} |")
    lines += ["", "Per batch size and policy (max Poisson rate, queries/s):", "",
              "| config | " + " | ".join(f"b{b}" for b in (1, 2, 4, 8, 16)) + " |", "|---|---|---:|---:|---:|---:|---:|"]
    lines[-1] = "|---|---|" + "---:|" * 5
    lines[-2] = "| config | policy | " + " | ".join(f"b{b}" for b in (1, 2, 4, 8, 16)) + " |"
    for name, s in runs.items():
        for policy in ("fixed", "deadline"):
            cells = []
            for b in (1, 2, 4, 8, 16):
                r = result(s, s["platform"], b, policy)
                cells.append(f"{r['max_throughput_per_s']:,.0f}" if r.get("feasible") else "none")
            lines.append(f"| {name} | {policy} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def update_doc(path, sections):
    """Replaces each "<!-- BEGIN GENERATED NAME -->" ... "<!-- END GENERATED NAME -->" block."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise report_io.InputError(f"{path}: cannot read: {e.strerror}") from e
    for name, body in sections.items():
        begin, end = f"<!-- BEGIN GENERATED {name}", f"<!-- END GENERATED {name} -->"
        b = text.find(begin)
        e = text.find(end)
        if b < 0 or e < b:
            raise report_io.InputError(f"{path}: no '{begin} ... -->' ... '{end}' block")
        line_end = text.index("\n", b) + 1
        text = text[:line_end] + body + text[e:]
    doc_sections.write_text_atomic(path, text)


def commands_block(cmds):
    return "```\n" + "\n".join(cmds) + "\n```\n"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--tessera", help="the tessera executable (without it: read the serving.json files already in --out)")
    ap.add_argument("--out", "-o", required=True, help="directory for the serve runs")
    ap.add_argument("--update-doc", help="replace the generated blocks of this Markdown file")
    ap.add_argument("--figures", help="directory for serving-mlp0.pdf/.png")
    ap.add_argument("--skip-mlperf", action="store_true", help="leave out the MLPerf Server runs (the slow part)")
    args = ap.parse_args(argv)
    tessera = os.path.abspath(args.tessera) if args.tessera else None
    if tessera and not (os.path.isfile(tessera) and os.access(tessera, os.X_OK)):
        raise report_io.InputError(f"--tessera: {args.tessera} is not an executable")
    build_dir = os.path.dirname(tessera) if tessera else os.path.join(ROOT, "build")

    sections = {}
    runner = Runner(tessera, args.out)
    t4 = table4_runs(runner)
    sections["table4"] = table4_markdown(t4) + "\n" + commands_block(runner.commands)
    runner.commands = []
    curves = curve_runs(runner, t4["scale"])
    sections["curve"] = curve_markdown(curves) + "\n" + commands_block(runner.commands + [
        f"/usr/bin/python3 analysis/plot_serving.py {args.out}/curve-x1 {args.out}/curve-x4 --per-replica --limit-ms 7 "
        "--label '1 TPU per host' --label '4 TPUs per host' --out docs/figures/serving-mlp0"])
    if args.figures:
        import plot_serving

        plot_serving.main([os.path.join(runner.out, "curve-x1"), os.path.join(runner.out, "curve-x4"), "--per-replica",
                           "--limit-ms", "7", "--label", "1 TPU per host", "--label", "4 TPUs per host", "--title",
                           "MLP0 on tpu-v1, batch 200: p99 vs throughput", "--out",
                           os.path.join(args.figures, "serving-mlp0")])
    if not args.skip_mlperf:
        runner.commands = []
        runs = mlperf_runs(runner, build_dir)
        sections["mlperf"] = mlperf_markdown(runs) + "\n" + commands_block(
            [c.replace(build_dir, "build") for c in runner.commands])
    text = "\n".join(f"### {k}\n\n{v}" for k, v in sections.items())
    sys.stdout.write(text)
    if args.update_doc:
        update_doc(args.update_doc, sections)
    return 0


if __name__ == "__main__":
    sys.exit(report_io.main_guard(main))
