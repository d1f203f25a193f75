"""Sweep cost per point at 1,000 / 10,000 / 100,000 points, and against standalone runs (issue 35).

For each size it runs `tessera sweep EXP -j JOBS -q` on the shipped bench experiment of that size
(bench/sweep-resnet50-{1k,10k,100k}.yaml) and reads, from DIR/sweep.log's last line, the CPU of
the sweep process and of the point processes; it reports CPU per point, wall time, points per
minute, the sweep process's peak RSS and the disk the sweep left. Then it runs `tessera run`
standalone on SAMPLE points of the 1k experiment (evenly spaced; each point's config generated
by a one-point `--keep-reports` sweep) and reports their CPU per run, so that the ratio
sweep point / standalone run is measured in one run on one machine.

--workload PATH swaps the experiments' ResNet-50 for another workload (same grids), e.g. a
cheaper one so that 100,000 points fit in a session: the per-point cost of the sweep machinery
is then a larger share of a point. Sizes are picked with --points (default 1000,10000). With
--same-points the larger sizes run only the 1k experiment's 1,000 points (the 10k and 100k grids
contain them: same ids), in a sweep process of the whole experiment holding the rows of all the
others (written first, synthetic; then --resume): the same points at each size, and 100,000
points measured without running them all. The resume's one-time cost of reading and rewriting
the rows is measured by a second --resume with nothing to run, and subtracted. Without
--same-points, a size of at least 2,000 also reports the CPU per point of each 1,000 points in
turn (from the CPU lines the sweep logs every 1,000 points): whether the sweep process's share
of a point grows late in a long fresh sweep.

    /usr/bin/python3 bench/sweep_scale.py --build build --points 1000,10000 --jobs 2
    nice -n 10 /usr/bin/python3 bench/sweep_scale.py --points 1000,10000,100000 --same-points
    nice -n 10 /usr/bin/python3 bench/sweep_scale.py --points 1000,10000 --workload workloads/tpu/mlp1.yaml --sample 0

Timings are figures to record (docs/performance-sweep.md), not assertions. One line of JSON per
measurement goes to stdout after the table, for tools.
"""
import argparse
import json
import os
import pathlib
import resource
import shutil
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXPERIMENTS = {1000: "bench/sweep-resnet50-1k.yaml", 10000: "bench/sweep-resnet50-10k.yaml",
               100000: "bench/sweep-resnet50-100k.yaml"}


def experiment_for(points, workload, tmp):
    """The shipped experiment of this size, with its workload swapped when asked."""
    src = ROOT / EXPERIMENTS[points]
    if not workload:
        return src
    text = src.read_text()
    lines = []
    for line in text.splitlines():
        if line.startswith("base:"):
            line = "base: " + str(ROOT / "configs/tpu-v1.yaml")
        elif line.strip().startswith("- {path:"):
            line = "  - {path: %s}" % json.dumps(str(pathlib.Path(workload).resolve()))
        lines.append(line)
    out = tmp / ("exp-%d.yaml" % points)
    out.write_text("\n".join(lines) + "\n")
    return out


def cpu_numbers(line):
    """(sweep user, sweep sys, points user, points sys, peak RSS MiB) from a sweep.log line."""
    text = line.split(" cpu: ", 1)[1]
    nums = [float(w) for w in text.replace(";", " ").split() if w.replace(".", "", 1).isdigit()]
    return nums[0], nums[1], nums[2], nums[3], (nums[4] if len(nums) > 4 else float("nan"))


def cpu_line(log):
    """cpu_numbers of sweep.log's last CPU line (the one the sweep writes when it is done)."""
    return cpu_numbers([l for l in log.read_text().splitlines() if " cpu: " in l][-1])


def cpu_windows(log, rows):
    """(all, sweep process) CPU per point (ms) of each 1,000 points of a fresh sweep in turn, from
    the "N points run; cpu: ..." lines the sweep logs every 1,000 points and its last line; None
    when the sweep ran fewer than 2,000 points. The windows hold different points (a grid's
    outermost axis changes from one to the next), so only the sweep process's share, which does
    not depend on the point, compares between them."""
    marks = {0: (0.0, 0.0)}
    for l in log.read_text().splitlines():
        words = l.split()
        if len(words) > 3 and words[2:4] == ["points", "run;"] and " cpu: " in l:
            su, ss, pu, ps, _ = cpu_numbers(l)
            marks[int(words[1])] = (su + ss + pu + ps, su + ss)
    su, ss, pu, ps, _ = cpu_line(log)
    marks[rows] = (su + ss + pu + ps, su + ss)
    if rows < 2000 or any(n not in marks for n in range(0, rows + 1, 1000)):
        return None
    return [(marks[n][0] - marks[n - 1000][0], marks[n][1] - marks[n - 1000][1]) for n in range(1000, rows + 1, 1000)]


def disk_bytes(path):
    total = 0
    for dirpath, dirnames, filenames in os.walk(path):
        total += os.lstat(dirpath).st_blocks * 512
        for f in filenames:
            total += os.lstat(os.path.join(dirpath, f)).st_blocks * 512
    return total


def run_sweep(tessera, exp, out, jobs, extra, subset=None):
    """The whole sweep; or, with `subset` (point ids), only those points of it: the other rows
    are written first (synthetic, status ok) and `--resume` runs the subset in a sweep process
    that holds the whole experiment and its rows. The resume's fixed cost (reading and
    rewriting the rows) is measured by a second `--resume` with nothing left, and subtracted."""
    shutil.rmtree(out, ignore_errors=True)
    if subset is not None:
        out.mkdir(parents=True)
        listed = subprocess.run([tessera, "sweep", str(exp), "--list"], capture_output=True, text=True, check=True).stdout
        metrics = [l.strip()[2:] for l in exp.read_text().split("metrics:")[1].splitlines() if l.strip().startswith("- ")]
        with open(out / "results.jsonl", "w") as f:
            for line in listed.splitlines():
                p = json.loads(line)
                if p["point"] in subset:
                    continue
                row = dict(p, status="ok", error=None, metrics={m: 0 for m in metrics})
                f.write(json.dumps(row, separators=(",", ":")) + "\n")
        extra = extra + ["--resume"]
    load = os.getloadavg()[0]
    t = time.perf_counter()
    subprocess.run([tessera, "sweep", str(exp), "-j", str(jobs), "-q", "--out", str(out)] + extra, check=True)
    wall = time.perf_counter() - t
    su, ss, pu, ps, rss = cpu_line(out / "sweep.log")
    rows = sum(1 for _ in open(out / "results.jsonl"))
    if subset is not None:
        subprocess.run([tessera, "sweep", str(exp), "-q", "--out", str(out)] + extra, check=True)
        fu, fs_, _, _, _ = cpu_line(out / "sweep.log")
        su, ss = max(0.0, su - fu), max(0.0, ss - fs_)
        rows = len(subset)
    windows = cpu_windows(out / "sweep.log", rows) if subset is None else None
    return {"points": rows, "wall_s": wall, "load_before": load, "load_after": os.getloadavg()[0],
            "cpu_per_point_ms_by_1k": [w[0] for w in windows] if windows else None,
            "sweep_cpu_per_point_ms_by_1k": [w[1] for w in windows] if windows else None,
            "sweep_cpu_s": su + ss, "point_cpu_s": pu + ps, "cpu_per_point_ms": 1000 * (su + ss + pu + ps) / rows,
            "sweep_cpu_per_point_ms": 1000 * (su + ss) / rows, "point_cpu_per_point_ms": 1000 * (pu + ps) / rows,
            "sweep_peak_rss_mib": rss, "disk_mib": disk_bytes(out) / 2**20, "points_per_min": 60 * rows / wall}


def standalone(tessera, exp, sample, tmp):
    """CPU of `tessera run` of `sample` points of `exp`, spread over its expansion order."""
    listed = subprocess.run([tessera, "sweep", str(exp), "--list"], capture_output=True, text=True, check=True).stdout
    points = [json.loads(l) for l in listed.splitlines()]
    picks = [points[i * len(points) // sample] for i in range(sample)]
    text = exp.read_text()
    workload = None
    for line in text.splitlines():
        if line.strip().startswith("- {path:"):
            workload = line.split("path:")[1].split(",")[0].strip().strip("}").strip('"')
    workload = workload.replace("${build}", str(pathlib.Path(tessera).resolve().parent))
    if not os.path.isabs(workload):
        workload = str((exp.parent / workload).resolve())
    one = tmp / "one"
    shutil.rmtree(one, ignore_errors=True)
    one.mkdir(parents=True)
    base = [l for l in text.splitlines() if l.startswith("base:")][0].split(":", 1)[1].strip()
    base = str((exp.parent / base).resolve())
    entries = "\n".join("    - " + json.dumps(p["params"]) for p in picks)
    (one / "exp.yaml").write_text("name: one\nbase: %s\nworkloads:\n  - {path: %s, batch: %d}\nparameters:\n  points:\n%s\n"
                                  "metrics: [summary.latency_s]\n" % (base, json.dumps(workload), picks[0]["batch"], entries))
    subprocess.run([tessera, "sweep", str(one / "exp.yaml"), "-j", "1", "-q", "--keep-reports", "--out", str(one / "out")],
                   check=True)
    configs = sorted((one / "out" / "points").glob("*/config.yaml"))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    for cfg in configs:
        subprocess.run([tessera, "run", "-a", str(cfg), "-w", workload, "-b", str(picks[0]["batch"]), "-o",
                        str(one / "run"), "-q"], check=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"runs": len(configs), "cpu_per_run_ms": 1000 * cpu / len(configs), "wall_per_run_ms": 1000 * wall / len(configs)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--points", default="1000,10000", help="sizes, comma-separated, of 1000, 10000, 100000")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--workload", default="", help="run the grids on this workload instead of ResNet-50")
    ap.add_argument("--sample", type=int, default=20, help="standalone runs (points of the 1k experiment); 0: none")
    ap.add_argument("--tmp", default="/tmp/sweep-scale")
    ap.add_argument("--sweep-args", default="", help="extra `tessera sweep` arguments, e.g. --no-shared-programs")
    ap.add_argument("--same-points", action="store_true",
                    help="larger sizes run only the 1k experiment's points, inside a sweep of the whole experiment "
                         "(--resume over synthetic rows of the others): the same points at every size, and 100,000 "
                         "points measured without running them all")
    a = ap.parse_args()
    tessera = str((pathlib.Path(a.build) / "tessera").resolve())
    tmp = pathlib.Path(a.tmp)
    tmp.mkdir(parents=True, exist_ok=True)
    results = []
    subset = None
    if a.same_points:
        listed = subprocess.run([tessera, "sweep", str(experiment_for(1000, a.workload, tmp)), "--list"],
                                capture_output=True, text=True, check=True).stdout
        subset = {json.loads(l)["point"] for l in listed.splitlines()}
    for n in [int(x) for x in a.points.split(",")]:
        if n not in EXPERIMENTS:
            sys.exit("--points: %d is not one of %s" % (n, ", ".join(map(str, EXPERIMENTS))))
        r = run_sweep(tessera, experiment_for(n, a.workload, tmp), tmp / ("sweep-%d" % n), a.jobs, a.sweep_args.split(),
                      subset if n > 1000 else None)
        r["size"] = n
        results.append(r)
        print("%7d points (%s): wall %8.1f s (%6.0f points/min), CPU per point %6.2f ms (sweep process %5.2f, point processes "
              "%6.2f), sweep process peak RSS %6.1f MiB, disk %8.2f MiB, load %.1f -> %.1f" % (
                  n, "all" if r["points"] == n else "the 1k points", r["wall_s"], r["points_per_min"], r["cpu_per_point_ms"], r["sweep_cpu_per_point_ms"],
                  r["point_cpu_per_point_ms"], r["sweep_peak_rss_mib"], r["disk_mib"], r["load_before"], r["load_after"]),
              flush=True)
    if len(results) > 1:
        print("CPU per point, %d vs %d points: ratio %.3f" % (
            results[-1]["size"], results[0]["size"], results[-1]["cpu_per_point_ms"] / results[0]["cpu_per_point_ms"]))
    for r in results:
        if r["sweep_cpu_per_point_ms_by_1k"] is not None:
            print("%7d points, each 1,000 in turn: sweep process CPU per point %s ms (points and sweep: %s ms)" % (
                r["size"], " ".join("%.2f" % x for x in r["sweep_cpu_per_point_ms_by_1k"]),
                " ".join("%.2f" % x for x in r["cpu_per_point_ms_by_1k"])))
    if a.sample > 0:
        s = standalone(tessera, experiment_for(1000, a.workload, tmp), a.sample, tmp)
        print("standalone `tessera run` of %d points of the 1k experiment: CPU %.2f ms per run (wall %.1f ms)" % (
            s["runs"], s["cpu_per_run_ms"], s["wall_per_run_ms"]))
        for r in results:
            print("  sweep point at %d points / standalone run: %.3f" % (r["size"], r["cpu_per_point_ms"] / s["cpu_per_run_ms"]))
        results.append({"standalone": s})
    for r in results:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
