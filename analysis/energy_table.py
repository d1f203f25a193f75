#!/usr/bin/python3
"""Energy, power, perf/W and area of the accelerator on the TPU paper's apps, beside the paper.

One command regenerates docs/energy.md's generated section and its figures (from the
repository root):

  /usr/bin/python3 analysis/energy_table.py --tessera build/tessera --out out/energy \\
      --update-doc docs/energy.md --figures docs/figures

With --tessera it first runs, for each of the six apps (workloads/tpu/*.yaml) at its own
batch, `tessera run --arch configs/tpu-v1.yaml --baseline haswell-e5-2699v3,k80` into
--out. Without it, it reads the reports already in --out (or the report.json files given
as arguments). Then it prints the tables as Markdown and, with --update-doc, puts them
between the "BEGIN GENERATED" and "END GENERATED" marks; with --figures it draws the
energy breakdown and the perf/W chart there (analysis/plot_energy.py).

Tables: energy per inference, average power, TOPS/W and perf/W over Haswell and K80
(incremental and total) per app with their geometric (GM) and weighted (WM) means beside
the paper's Fig. 9 ranges; CNN0's power at idle, 10% load and busy beside the paper's
28 / 35.2 / 40 W; the floor plan beside the paper's. Malformed input: one-line error,
exit status 2.
"""
import argparse
import os
import sys

import baseline_table as bt
import report_io
from run_tessera import run_checked, run_plots

APPS = bt.APPS
CPU, GPU = bt.CPU, bt.GPU
# Jouppi et al., ISCA 2017, Sec. 5 / Fig. 9: perf/W of the TPU over Haswell and over the K80
# (per die), geometric mean - weighted mean, total (host server power included) and
# incremental (host power subtracted).
PAPER_FIG9 = {(CPU, "total"): (17, 34), (CPU, "incremental"): (41, 83), (GPU, "total"): (14, 16),
              (GPU, "incremental"): (25, 29)}
# Paper Table 2 and Sec. 6: TPU power per die, idle and busy (CNN0); 10% load draws 88% of busy (Fig. 10).
PAPER_IDLE_W, PAPER_BUSY_W, PAPER_10PCT = 28.0, 40.0, 0.88
# Floor plan (paper Fig. 2; percentages as reported by news.mynavi.jp): shares of a die of <= 331 mm^2.
PAPER_FLOOR = {"unified_buffer": 0.29, "matrix_unit": 0.24, "accumulators": 0.06}
PAPER_DIE_MM2 = 331


def run_tessera(binary, out):
    for app in APPS:
        cmd = [binary, "run", "--quiet", "--arch", "configs/tpu-v1.yaml", "--workload", f"workloads/tpu/{app}.yaml",
               "--out", os.path.join(out, app), "--baseline", f"{CPU},{GPU}"]
        print("+ " + " ".join(cmd), file=sys.stderr)
        run_checked(cmd, binary)


def need(r, *keys):
    v = r
    for k in keys:
        if not isinstance(v, dict) or k not in v:
            raise report_io.InputError(f"{r['_path']}: no {'.'.join(keys)} (a report from before energy: rerun tessera)")
        v = v[k]
    return v


def ratio(r, name, kind):
    b = bt.base(r, name)
    q = b.get("accelerator_perf_per_w_ratio")
    if not isinstance(q, dict):
        raise report_io.InputError(f"{r['_path']}: baseline '{name}' has no perf/W (its spec has no power: section)")
    return report_io.number(q.get(kind), f"{r['_path']}: {name}: accelerator_perf_per_w_ratio.{kind}")


def f2(x):
    return f"{x:.2f}" if x < 10 else f"{x:.1f}"


def tables(apps):
    accel = apps[APPS[0]]["arch"]["name"]
    lines = [f"### Energy and perf/W of {accel} per app (paper's Fig. 9 ranges, GM - WM, in the last row)", "",
             "Perf/W = inferences/s per watt at the same batch on every platform; the entries are the accelerator's perf/W "
             "over the baseline's. Incremental: each die's own power (Haswell socket and K80 die at the paper's measured "
             "busy power, the accelerator at its modelled average power); total: plus its share of the host server "
             "(configs: host_power_w, power.host_w). WM weights the apps by Table 1's deployment shares.", "",
             "| app | batch | energy/inference | power | TOPS/W | vs Haswell incr. | vs Haswell total | vs K80 incr. | "
             "vs K80 total |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    cols = [(CPU, "incremental"), (CPU, "total"), (GPU, "incremental"), (GPU, "total")]
    values = {c: [] for c in cols}
    for a in APPS:
        r = apps[a]
        cells = [a, str(r["workload"]["batch"]), _joules(need(r, "summary", "energy_per_inference_j")),
                 f"{need(r, 'summary', 'power_w'):.1f} W", f"{need(r, 'summary', 'tops_per_w'):.3f}"]
        for c in cols:
            v = ratio(r, *c)
            values[c].append(v)
            cells.append(f2(v))
        lines.append("| " + " | ".join(cells) + " |")
    gm = [f2(bt.geomean(values[c])) for c in cols]
    wm = [f2(bt.wmean(values[c], APPS)) for c in cols]
    lines.append("| **GM** | | | | | " + " | ".join(gm) + " |")
    lines.append("| **WM** | | | | | " + " | ".join(wm) + " |")
    lines.append("| paper (GM - WM) | | | | | " + " | ".join(f"{PAPER_FIG9[c][0]} - {PAPER_FIG9[c][1]}" for c in cols) + " |")
    lines.append("")

    cnn0 = apps["cnn0"]
    pv = need(cnn0, "summary", "power_vs_load")
    lines += [f"### Power of {accel} against load, CNN0 (paper: Table 2 and Fig. 10)", "",
              "Load: the share of time the chip runs CNN0 batches; between them it serves with no work (leakage, the on "
              "term and the weight memory's standby). Idle: not serving.", "",
              "| point | model | paper | model / paper |", "|---|---:|---:|---:|",
              f"| idle | {pv['idle_w']:.2f} W | {PAPER_IDLE_W:g} W | {pv['idle_w'] / PAPER_IDLE_W:.3f} |",
              f"| 10% load (prediction) | {pv['load_10pct_w']:.2f} W | {PAPER_10PCT * PAPER_BUSY_W:.1f} W | "
              f"{pv['load_10pct_w'] / (PAPER_10PCT * PAPER_BUSY_W):.3f} |",
              f"| busy (100% load) | {pv['busy_w']:.2f} W | {PAPER_BUSY_W:g} W | {pv['busy_w'] / PAPER_BUSY_W:.3f} |",
              f"| 10% load / busy | {100 * pv['proportionality_10pct']:.0f}% | {100 * PAPER_10PCT:.0f}% | |",
              f"| activity-driven power at full load | {pv['dynamic_w']:.2f} W | "
              f"{(1 - PAPER_10PCT) * PAPER_BUSY_W / 0.9:.2f} W (implied) | |", ""]

    area = need(cnn0, "summary", "area_breakdown_mm2")
    total = need(cnn0, "summary", "area_mm2")
    lines += [f"### Area of {accel} (paper: floor plan, Fig. 2)", "", "| block | model | share | paper share |",
              "|---|---:|---:|---:|"]
    for k, v in area.items():
        p = PAPER_FLOOR.get(k)
        lines.append(f"| {k} | {v:.1f} mm² | {100 * v / total:.1f}% | {f'~{100 * p:.0f}%' if p else '-'} |")
    lines.append(f"| die | {total:.1f} mm² | 100% | <= {PAPER_DIE_MM2} mm² |")
    return "\n".join(lines)


def _joules(j):
    for scale, unit in ((1, "J"), (1e-3, "mJ"), (1e-6, "µJ"), (1e-9, "nJ")):
        if j >= scale:
            return f"{j / scale:.3g} {unit}"
    return f"{j * 1e12:.3g} pJ"


def figures(out_dir, app_paths):
    import plot_energy

    run_plots([
        (plot_energy, app_paths + ["--out", os.path.join(out_dir, "energy-breakdown-tpu")]),
        (plot_energy, app_paths + ["--perf-per-w", "--baselines", f"{CPU},{GPU}", "--out",
                                   os.path.join(out_dir, "perf-per-w-tpu")]),
    ])


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("reports", nargs="*", help="report.json files of the six apps (default: those under --out)")
    ap.add_argument("--tessera", help="tessera binary: run the apps with the paper's CPU and GPU baselines first")
    ap.add_argument("--out", default="out/energy", help="where the reports are (or go, with --tessera)")
    ap.add_argument("--update-doc", help="replace the generated section of this Markdown file")
    ap.add_argument("--figures", help="also draw the figures into this directory")
    args = ap.parse_args(argv)
    if args.tessera:
        run_tessera(args.tessera, args.out)
    paths = args.reports or [os.path.join(args.out, a, "report.json") for a in APPS]
    apps = bt.by_app(report_io.load_reports(paths))
    text = tables(apps)
    if args.update_doc:
        bt.update_doc(args.update_doc, text)
    if args.figures:
        figures(args.figures, [apps[a]["_path"] for a in APPS])
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(report_io.main_guard(main))
