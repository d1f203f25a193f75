#!/usr/bin/python3
"""Tables (and figures) of the accelerator against its CPU/GPU baselines on the TPU paper's apps.

One command regenerates everything in docs/baselines.md's generated section and the
figures in docs/figures/ (from the repository root):

  /usr/bin/python3 analysis/baseline_table.py --tessera build/tessera --out out/baselines \\
      --update-doc docs/baselines.md --figures docs/figures

With --tessera it first runs, for each of the six apps (workloads/tpu/*.yaml) at its own
batch, `tessera run --arch configs/tpu-v1.yaml --baseline all`, and MLP0 at batches
16, 64, 200 and 250 with the paper's CPU and GPU (the paper's Table 4), into --out.
Without --tessera it reads the reports already in --out (or the report.json files given
as arguments). Then it prints the tables as Markdown, replaces the text between the
"BEGIN GENERATED" and "END GENERATED" marks of --update-doc with them, and with
--figures draws the roofline, breakdown, speed-up and batch figures there.

Tables: each app's latency on every platform at the same batch; performance relative
to the paper's CPU next to the paper's Table 6; and the MLP0 serving table next to the
paper's Table 4. Malformed input: one-line error, exit status 2.
"""
import argparse
import math
import os
import sys

import doc_sections
import report_io
import style
from run_tessera import run_checked, run_plots

APPS = ["mlp0", "mlp1", "lstm0", "lstm1", "cnn0", "cnn1"]
CPU, GPU = "haswell-e5-2699v3", "k80"
MODERN = ["xeon-8480", "epyc-9654", "a100", "h100-sxm", "h200"]
MLP0_BATCHES = [16, 64, 200, 250]

# Jouppi et al., ISCA 2017, Table 6: K80 (one die) and TPU performance relative to the
# Haswell CPU (one die), per app, with geometric (GM) and weighted (WM) means.
PAPER_TABLE6 = {
    "GPU/CPU": [2.5, 0.3, 0.4, 1.2, 1.6, 2.7, 1.1, 1.9],
    "TPU/CPU": [41.0, 18.5, 3.5, 1.2, 40.3, 71.0, 14.5, 29.2],
    "TPU/GPU": [16.7, 60.0, 8.0, 1.0, 25.4, 26.3, 13.2, 15.3],
}
# Table 1: share of the TPUs' deployed workload by app type (MLP 61%, LSTM 29%, CNN 5%);
# each type's share is split evenly between its two apps for our weighted mean.
DEPLOYED = {"mlp0": 30.5, "mlp1": 30.5, "lstm0": 14.5, "lstm1": 14.5, "cnn0": 2.5, "cnn1": 2.5}
# Table 4: MLP0 at the 7 ms 99th-percentile limit: (platform, batch, 99th% response ms, IPS).
PAPER_TABLE4 = [("CPU", 16, 7.2, 5482), ("CPU", 64, 21.3, 13194), ("GPU", 16, 6.7, 13461), ("GPU", 64, 8.3, 36465),
                ("TPU", 200, 7.0, 225000), ("TPU", 250, 10.0, 280000)]


def run_tessera(binary, out):
    runs = [(app, None, os.path.join(out, app), "all") for app in APPS]
    runs += [("mlp0", b, os.path.join(out, "mlp0-batch", f"b{b}"), f"{CPU},{GPU}") for b in MLP0_BATCHES]
    for app, batch, d, baselines in runs:
        cmd = [binary, "run", "--quiet", "--arch", "configs/tpu-v1.yaml", "--workload", f"workloads/tpu/{app}.yaml",
               "--out", d, "--baseline", baselines]
        if batch:
            cmd += ["--batch", str(batch)]
        print("+ " + " ".join(cmd), file=sys.stderr)
        run_checked(cmd, binary)


def geomean(v):
    return math.exp(sum(math.log(x) for x in v) / len(v))


def wmean(v, apps):
    w = [DEPLOYED[a] for a in apps]
    return sum(x * y for x, y in zip(v, w)) / sum(w)


def f2(x):
    return f"{x:.2f}" if x < 10 else f"{x:.1f}"


def fmt_s(s):
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


def by_app(reports):
    out = {}
    for r in reports:
        name = r["workload"]["name"]
        if name in out and out[name]["workload"]["batch"] != r["workload"]["batch"]:
            raise report_io.InputError(f"{r['_path']}: a second {name} report at another batch; give one report per app")
        out[name] = r
    missing = [a for a in APPS if a not in out]
    if missing:
        raise report_io.InputError(f"no report for {', '.join(missing)} (needed: {', '.join(APPS)})")
    return out


def base(r, name):
    for b in report_io.baselines_of(r):
        if b["name"] == name:
            return b
    raise report_io.InputError(f"{r['_path']}: no baseline '{name}' (run tessera with --baseline all)")


def tables(apps, mlp0_series):
    accel = apps[APPS[0]]["arch"]["name"]
    lines = []
    # 1. Latency per app and platform.
    names = [b["name"] for b in report_io.baselines_of(apps[APPS[0]])]
    names = [n for n in [CPU, GPU] + MODERN if n in names] + [n for n in names if n not in [CPU, GPU] + MODERN]
    lines += ["### Latency of one batch (same batch on every platform)", "",
              "| app | batch | " + " | ".join([accel] + [f"{style.tiny_name({'name': n})} ({base(apps[APPS[0]], n)['precision']})"
                                                          for n in names]) + " |",
              "|---|---:|" + "---:|" * (len(names) + 1)]
    for a in APPS:
        r = apps[a]
        cells = [fmt_s(r["summary"]["latency_s"])] + [fmt_s(base(r, n)["summary"]["latency_s"]) for n in names]
        lines.append(f"| {a} | {r['workload']['batch']} | " + " | ".join(cells) + " |")
    lines.append("")

    # 2. Relative performance, as the paper's Table 6.
    def ratios(num, den):
        return [den(apps[a]) / num(apps[a]) for a in APPS]

    lat_acc = lambda r: r["summary"]["latency_s"]  # noqa: E731
    lat_cpu = lambda r: base(r, CPU)["summary"]["latency_s"]  # noqa: E731
    lat_gpu = lambda r: base(r, GPU)["summary"]["latency_s"]  # noqa: E731
    ours = {"GPU/CPU": ratios(lat_gpu, lat_cpu), "TPU/CPU": ratios(lat_acc, lat_cpu), "TPU/GPU": ratios(lat_acc, lat_gpu)}
    lines += [f"### Relative performance: {accel} vs K80 vs Haswell (paper's Table 6 in brackets)", "",
              "Performance = 1 / latency at the same batch; GPU = one K80 die (fp32), CPU = one Haswell socket (fp32), "
              f"TPU = {accel} (int8). GM: geometric mean; WM: mean weighted by Table 1's deployment shares "
              "(MLP 61%, LSTM 29%, CNN 5%, split evenly between the two apps of a type).", "",
              "| ratio | " + " | ".join(APPS) + " | GM | WM |", "|---|" + "---:|" * (len(APPS) + 2)]
    for key in ("TPU/CPU", "GPU/CPU", "TPU/GPU"):
        v = ours[key]
        cells = [f"{f2(x)} ({p:g})" for x, p in zip(v + [geomean(v), wmean(v, APPS)], PAPER_TABLE6[key])]
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    lines.append("")

    # 3. Modern parts.
    modern = [n for n in MODERN if n in names]
    if modern:
        lines += [f"### Speed-up of {accel} over current parts (baseline latency / {accel} latency; < 1: the part is faster)",
                  "", "| part | precision | " + " | ".join(APPS) + " | GM |", "|---|---|" + "---:|" * (len(APPS) + 1)]
        for n in modern:
            v = [base(apps[a], n)["summary"]["latency_s"] / apps[a]["summary"]["latency_s"] for a in APPS]
            b0 = base(apps[APPS[0]], n)
            lines.append(f"| {b0.get('display_name', n)} | {b0['precision']} | " + " | ".join(f2(x) for x in v) +
                         f" | {f2(geomean(v))} |")
        lines.append("")

    # 4. MLP0 serving, as the paper's Table 4.
    if mlp0_series:
        lines += ["### MLP0 by batch size (paper's Table 4: 99th-percentile response at a 7 ms limit)", "",
                  "Ours: the latency of one batch on an idle platform; the paper's: 99th-percentile response time of a "
                  "loaded server, host overhead included.", "",
                  "| platform | batch | ours: latency | ours: inferences/s | paper: 99th% response | paper: inferences/s |",
                  "|---|---:|---:|---:|---:|---:|"]
        which = {"CPU": CPU, "GPU": GPU, "TPU": None}
        for plat, batch, p_ms, p_ips in PAPER_TABLE4:
            r = mlp0_series.get(batch)
            if r is None:
                continue
            s = r["summary"] if which[plat] is None else base(r, which[plat])["summary"]
            ips = s.get("inferences_per_s", batch / s["latency_s"])
            label = accel if plat == "TPU" else ("Haswell" if plat == "CPU" else "K80 die")
            lines.append(f"| {label} | {batch} | {s['latency_s'] * 1e3:.2f} ms | {ips:,.0f} | {p_ms:g} ms | {p_ips:,} |")
        lines.append("")
    return "\n".join(lines)


def update_doc(path, text):
    try:
        with open(path, encoding="utf-8") as f:
            doc = f.read()
    except OSError as e:
        raise report_io.InputError(f"{path}: cannot read: {e.strerror}") from e
    begin, end = "<!-- BEGIN GENERATED", "<!-- END GENERATED -->"
    i, j = doc.find(begin), doc.find(end)
    if i < 0 or j < i:
        raise report_io.InputError(f"{path}: no '{begin} ... -->' / '{end}' marks to replace between")
    i = doc.index("-->", i) + 3
    doc_sections.write_text_atomic(path, doc[:i] + "\n" + text + "\n" + doc[j:])


def figures(out_dir, app_paths, batch_paths):
    import plot_batch
    import plot_breakdown
    import plot_roofline
    import plot_speedup

    calls = [
        (plot_roofline, app_paths + ["--platforms", f"tpu-v1,{GPU},{CPU}", "--panels", "--height", "2.2",
                                     "--out", os.path.join(out_dir, "roofline-tpu-k80-haswell")]),
        (plot_roofline, app_paths + ["--platforms", f"tpu-v1,{GPU},{CPU}", "--out",
                                     os.path.join(out_dir, "roofline-paper-combined")]),
        (plot_roofline, app_paths + ["--platforms", "tpu-v1,xeon-8480,h100-sxm", "--panels", "--height", "2.2",
                                     "--out", os.path.join(out_dir, "roofline-tpu-xeon8480-h100")]),
        (plot_roofline, app_paths + ["--height", "2.5", "--out", os.path.join(out_dir, "roofline-all")]),
        (plot_breakdown, app_paths + ["--per", "workload", "--baselines", f"{CPU},{GPU}", "--out",
                                      os.path.join(out_dir, "breakdown-tpu-haswell-k80")]),
        (plot_breakdown, app_paths + ["--per", "workload", "--baselines", "xeon-8480,h100-sxm", "--out",
                                      os.path.join(out_dir, "breakdown-tpu-xeon8480-h100")]),
        (plot_breakdown, [app_paths[APPS.index("lstm0")], "--per", "layer", "--out",
                          os.path.join(out_dir, "breakdown-lstm0-layers")]),
        (plot_speedup, app_paths + ["--baselines", f"{CPU},{GPU}," + ",".join(MODERN), "--width", "6.9",
                                    "--out", os.path.join(out_dir, "speedup")]),
    ]
    if batch_paths:
        calls.append((plot_batch, batch_paths + ["--limit-ms", "7", "--out", os.path.join(out_dir, "batch-mlp0")]))
    run_plots(calls)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("reports", nargs="*", help="report.json files of the six apps (default: those under --out)")
    ap.add_argument("--tessera", help="tessera binary: run the apps with --baseline all first")
    ap.add_argument("--out", default="out/baselines", help="where the reports are (or go, with --tessera)")
    ap.add_argument("--update-doc", help="replace the generated section of this Markdown file")
    ap.add_argument("--figures", help="also draw the figures into this directory")
    args = ap.parse_args(argv)
    if args.tessera:
        run_tessera(args.tessera, args.out)
    paths = args.reports or [os.path.join(args.out, a, "report.json") for a in APPS]
    apps = by_app(report_io.load_reports(paths))
    series = {}
    batch_paths = []
    if not args.reports:
        for b in MLP0_BATCHES:
            p = os.path.join(args.out, "mlp0-batch", f"b{b}", "report.json")
            if os.path.exists(p):
                series[b] = report_io.load_report(p)
                batch_paths.append(p)
    text = tables(apps, series)
    if args.update_doc:
        update_doc(args.update_doc, text)
    if args.figures:
        figures(args.figures, [apps[a]["_path"] for a in APPS], batch_paths)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(report_io.main_guard(main))
