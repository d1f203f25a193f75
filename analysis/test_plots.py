#!/usr/bin/python3
"""pytest: every analysis/plot_*.py script renders a real figure from real reports and
fails in one line (exit status 2) on malformed input.

Reports come from the tessera binary ($TESSERA_BIN, else build/tessera) when it has
`run --baseline`; otherwise from analysis/fixtures/reports/, which that binary wrote
(analysis/fixtures/README.md says how to regenerate them).

Run: /usr/bin/python3 -m pytest -q analysis/test_plots.py
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIXTURES = os.path.join(HERE, "fixtures", "reports")
PY = sys.executable or "/usr/bin/python3"
# (workload, batch): the same set as the fixtures.
RUNS = [("mlp0", 16), ("mlp1", 8), ("mlp1", 16), ("mlp1", 32), ("lstm0", 8), ("cnn0", 1)]
BASELINES = "haswell-e5-2699v3,k80,h100-sxm"

sys.path.insert(0, HERE)
import plot_sweep  # noqa: E402
import report_io  # noqa: E402


def tessera_binary():
    b = os.environ.get("TESSERA_BIN") or os.path.join(ROOT, "build", "tessera")
    if not (os.path.isfile(b) and os.access(b, os.X_OK)):
        return None
    try:
        help_text = subprocess.run([b, "run", "--help"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return b if "--baseline" in help_text else None


@pytest.fixture(scope="session")
def reports(tmp_path_factory):
    """{name: path of report.json}, e.g. "mlp1-b8"."""
    out = tmp_path_factory.mktemp("reports")
    binary = tessera_binary()
    paths = {}
    for wl, batch in RUNS:
        name = f"{wl}-b{batch}"
        d = out / name
        if binary:
            subprocess.run([binary, "run", "-q", "-a", "configs/tpu-v1.yaml", "-w", f"workloads/tpu/{wl}.yaml",
                            "-b", str(batch), "-o", str(d), "--baseline", BASELINES], cwd=ROOT, check=True,
                           capture_output=True, timeout=300)
        else:
            d.mkdir()
            shutil.copy(os.path.join(FIXTURES, name, "report.json"), d / "report.json")
        paths[name] = str(d / "report.json")
    return paths


def apps(reports):
    return [reports[k] for k in ("mlp0-b16", "mlp1-b8", "lstm0-b8", "cnn0-b1")]


def run(script, *args, expect=0):
    done = subprocess.run([PY, os.path.join(HERE, script), *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert done.returncode == expect, f"{script} exited {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    return done


def check_figure(base):
    pdf, png = f"{base}.pdf", f"{base}.png"
    with open(pdf, "rb") as f:
        data = f.read()
    assert data.startswith(b"%PDF") and len(data) > 2000, pdf
    assert b"/TrueType" in data or b"/CIDFontType2" in data, "fonts are not embedded as TrueType (pdf.fonttype 42)"
    assert b"/Type3" not in data, "Type 3 fonts in the PDF"
    with open(png, "rb") as f:
        head = f.read(24)
    assert head.startswith(b"\x89PNG\r\n\x1a\n"), png
    width = int.from_bytes(head[16:20], "big")
    assert width > 300, f"{png}: {width} px wide"
    assert os.path.getsize(png) > 5000


def one_line_error(done, *needles):
    lines = [ln for ln in done.stderr.strip().splitlines() if ln]
    assert len(lines) == 1, done.stderr
    assert ": error: " in lines[0], lines[0]
    for n in needles:
        assert n in lines[0], lines[0]
    assert "Traceback" not in done.stderr


@pytest.fixture()
def malformed(tmp_path):
    bad_json = tmp_path / "bad.json"
    bad_json.write_text('{"arch": {"name": "x"}, ')
    not_report = tmp_path / "not_report.json"
    not_report.write_text(json.dumps({"arch": {"name": "x"}, "workload": {"name": "w", "batch": 1}}))
    return {"bad_json": str(bad_json), "not_report": str(not_report)}


# ------------------------------------------------------------------ fixtures are real reports


def test_fixtures_are_current_reports():
    for wl, batch in RUNS:
        r = report_io.load_report(os.path.join(FIXTURES, f"{wl}-b{batch}", "report.json"))
        assert r["workload"]["name"] == wl and r["workload"]["batch"] == batch
        assert [b["name"] for b in r["baselines"]] == BASELINES.split(",")
        for b in r["baselines"]:
            assert b["speedup_of_accelerator"] > 0 and "roofline" in b


# ------------------------------------------------------------------ roofline


def test_roofline(reports, tmp_path):
    run("plot_roofline.py", *apps(reports), "--out", tmp_path / "roof")
    check_figure(tmp_path / "roof")
    run("plot_roofline.py", *apps(reports), "--panels", "--platforms", "tpu-v1,k80,haswell-e5-2699v3",
        "--out", tmp_path / "panels")
    check_figure(tmp_path / "panels")
    run("plot_roofline.py", reports["lstm0-b8"], "--layers", "--flavour", "dram", "--out", tmp_path / "layers")
    check_figure(tmp_path / "layers")


def test_roofline_legend_names_each_marker(reports):
    """Issue 33: each legend entry shows the marker of its platform's points, so a reader can
    tell which point is which baseline's."""
    import plot_roofline  # noqa: E402
    args = plot_roofline.parser().parse_args([reports["mlp1-b8"], "--out", "unused"])
    fig = plot_roofline.make_figure([report_io.load_report(reports["mlp1-b8"])], args)
    ax = fig.axes[0]
    handles, labels = ax.get_legend_handles_labels()
    assert len(labels) >= 3  # the accelerator and the baselines
    point_markers = {(ln.get_color(), ln.get_marker()) for ln in ax.lines if len(ln.get_xdata()) == 1}
    for h, label in zip(handles, labels):
        assert h.get_marker() not in ("None", "", None), label
        assert (h.get_color(), h.get_marker()) in point_markers, label
    assert len({(h.get_color(), h.get_marker()) for h in handles}) == len(handles)


def test_roofline_malformed(malformed, tmp_path):
    done = run("plot_roofline.py", malformed["bad_json"], "--out", tmp_path / "x", expect=2)
    one_line_error(done, "bad.json", "invalid JSON")
    done = run("plot_roofline.py", malformed["not_report"], "--out", tmp_path / "x", expect=2)
    one_line_error(done, "missing 'summary'")
    done = run("plot_roofline.py", tmp_path / "missing.json", "--out", tmp_path / "x", expect=2)
    one_line_error(done, "cannot read")
    assert not (tmp_path / "x.pdf").exists()


def test_roofline_unknown_platform(reports, tmp_path):
    done = run("plot_roofline.py", reports["mlp1-b8"], "--platforms", "nope", "--out", tmp_path / "x", expect=2)
    one_line_error(done, "no platform matches")


# ------------------------------------------------------------------ breakdown


def test_breakdown(reports, tmp_path):
    run("plot_breakdown.py", reports["lstm0-b8"], "--out", tmp_path / "layers")
    check_figure(tmp_path / "layers")
    run("plot_breakdown.py", reports["lstm0-b8"], "--baseline", "k80", "--top", "10", "--out", tmp_path / "k80")
    check_figure(tmp_path / "k80")
    run("plot_breakdown.py", *apps(reports), "--out", tmp_path / "apps")
    check_figure(tmp_path / "apps")
    run("plot_breakdown.py", *apps(reports), "--absolute", "--baselines", "k80", "--out", tmp_path / "abs")
    check_figure(tmp_path / "abs")


def test_breakdown_malformed(reports, malformed, tmp_path):
    one_line_error(run("plot_breakdown.py", malformed["bad_json"], "--out", tmp_path / "x", expect=2), "bad.json")
    done = run("plot_breakdown.py", reports["mlp1-b8"], "--baseline", "a100", "--out", tmp_path / "x", expect=2)
    one_line_error(done, "no baseline 'a100'", "haswell-e5-2699v3, k80, h100-sxm")
    # A report whose layer lost its cycle breakdown.
    r = json.load(open(reports["mlp1-b8"]))
    del r["layers"][0]["cycles"]
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(r))
    one_line_error(run("plot_breakdown.py", broken, "--out", tmp_path / "x", expect=2), "layers[0] has no 'cycles'")


# ------------------------------------------------------------------ batch


def test_batch(reports, tmp_path):
    series = [reports[k] for k in ("mlp1-b8", "mlp1-b16", "mlp1-b32")]
    done = run("plot_batch.py", *series, "--limit-ms", "0.5", "--table", tmp_path / "t.md", "--out", tmp_path / "b")
    check_figure(tmp_path / "b")
    table = (tmp_path / "t.md").read_text()
    assert "within a 0.5 ms latency limit" in table
    assert "| tpu-v1 (int8) |" in table and "K80 die fp32" in table
    assert table in done.stdout


def test_batch_malformed(reports, malformed, tmp_path):
    done = run("plot_batch.py", reports["mlp1-b8"], reports["mlp0-b16"], "--out", tmp_path / "x", expect=2)
    one_line_error(done, "several workloads", "mlp0, mlp1")
    one_line_error(run("plot_batch.py", malformed["not_report"], "--out", tmp_path / "x", expect=2), "missing")
    done = run("plot_batch.py", reports["mlp1-b8"], "--limit-ms", "0", "--out", tmp_path / "x", expect=2)
    one_line_error(done, "--limit-ms must be > 0")


# ------------------------------------------------------------------ speed-up


def test_speedup(reports, tmp_path):
    done = run("plot_speedup.py", *apps(reports), "--out", tmp_path / "s", "--table", tmp_path / "s.md")
    check_figure(tmp_path / "s")
    assert "| K80 die fp32 |" in done.stdout and "GM" in done.stdout
    run("plot_speedup.py", *apps(reports), "--relative-to", "haswell-e5-2699v3", "--out", tmp_path / "rel")
    check_figure(tmp_path / "rel")


def test_speedup_values_match_reports(reports, tmp_path):
    done = run("plot_speedup.py", reports["mlp1-b8"], reports["cnn0-b1"], "--baselines", "k80", "--out", tmp_path / "s")
    row = next(ln for ln in done.stdout.splitlines() if ln.startswith("| K80"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    for cell, key in zip(cells[1:3], ("mlp1-b8", "cnn0-b1")):
        r = json.load(open(reports[key]))
        k80 = next(b for b in r["baselines"] if b["name"] == "k80")
        assert float(cell) == pytest.approx(k80["speedup_of_accelerator"], rel=0.01)


def test_speedup_malformed(reports, malformed, tmp_path):
    done = run("plot_speedup.py", reports["mlp1-b8"], "--baselines", "epyc-9654", "--out", tmp_path / "x", expect=2)
    one_line_error(done, "no baseline 'epyc-9654'")
    one_line_error(run("plot_speedup.py", malformed["bad_json"], "--out", tmp_path / "x", expect=2), "invalid JSON")


# ------------------------------------------------------------------ sweep


def sweep_rows():
    rows = []
    for i, (rows_, bw) in enumerate([(r, b) for r in (64, 128, 256) for b in (34, 68)]):
        lat = 1e-3 * (256 / rows_) * (34 / bw) ** 0.5
        rows.append({"point": f"p{i}", "index": i, "workload": "mlp1", "batch": 8,
                     "params": {"array.rows": rows_, "weight_memory.bandwidth_gb_per_s": bw},
                     "status": "ok", "error": None,
                     "metrics": {"summary.latency_s": lat, "summary.tops": 1e-3 / lat, "sram_bytes": rows_ * rows_ * 4},
                     "future_key": {"ignored": True}})
    rows.append({"point": "bad", "index": 6, "workload": "mlp1", "batch": 8, "params": {"array.rows": 64},
                 "status": "failed", "error": "configs/x.yaml:3:1: array.dataflow: 'diagonal' is not one of: ws, os, is",
                 "metrics": {}})
    return rows


def test_sweep_jsonl_tolerant(tmp_path):
    p = tmp_path / "results.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in sweep_rows()) + '{"point": "cut", "ind')
    done = run("plot_sweep.py", p, "--x", "summary.latency_s:min", "--y", "sram_bytes:min", "--color", "array.rows",
               "--label-front", "--out", tmp_path / "sw")
    check_figure(tmp_path / "sw")
    assert "skipped an incomplete last line" in done.stderr
    front = [ln.split(":")[0].strip() for ln in done.stdout.splitlines() if ln.startswith("  p")]
    # Latency falls with rows and bandwidth, SRAM grows with rows: the 68 GB/s point of each size is on the front.
    assert front == ["p5", "p3", "p1"]


def test_sweep_csv_and_directory(tmp_path):
    rows = sweep_rows()
    cols = ["point", "index", "workload", "batch", "status", "error", "array.rows", "weight_memory.bandwidth_gb_per_s",
            "summary.latency_s", "summary.tops"]
    lines = [",".join(cols)]
    for r in rows:
        vals = [r["point"], str(r["index"]), r["workload"], str(r["batch"]), r["status"],
                '"' + (r["error"] or "").replace('"', '""') + '"' if r["error"] else ""]
        vals += [str(r["params"].get(k, "")) for k in cols[6:8]] + [str(r["metrics"].get(k, "")) for k in cols[8:]]
        lines.append(",".join(vals))
    d = tmp_path / "sweep"
    d.mkdir()
    (d / "results.csv").write_text("\n".join(lines) + "\n")
    run("plot_sweep.py", d, "--logx", "--out", tmp_path / "csv")
    check_figure(tmp_path / "csv")


def test_pareto_unit():
    pts = [(1, 5), (2, 4), (2, 6), (3, 1), (4, 1), (0.5, 9)]
    assert plot_sweep.pareto(pts, "min", "min") == [5, 0, 1, 3]
    assert plot_sweep.pareto(pts, "min", "max") == [5]
    assert plot_sweep.parse_axis("a.b:max", "min") == ("a.b", "max")
    assert plot_sweep.parse_axis("a.b", "min") == ("a.b", "min")


def test_sweep_malformed(tmp_path):
    p = tmp_path / "results.jsonl"
    rows = sweep_rows()
    p.write_text(json.dumps(rows[0]) + "\n{not json}\n" + json.dumps(rows[1]) + "\n")
    one_line_error(run("plot_sweep.py", p, "--out", tmp_path / "x", expect=2), "results.jsonl:2:", "invalid JSON")
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = run("plot_sweep.py", p, "--y", "summary.nope", "--out", tmp_path / "x", expect=2)
    one_line_error(done, "has no 'summary.nope'", "summary.latency_s")
    p.write_text(json.dumps({"hello": 1}) + "\n")
    one_line_error(run("plot_sweep.py", p, "--out", tmp_path / "x", expect=2), "missing 'status'")
    c = tmp_path / "results.csv"
    c.write_text("a,b\n1,2\n")
    one_line_error(run("plot_sweep.py", c, "--out", tmp_path / "x", expect=2), "no 'status' column")
    assert not (tmp_path / "x.pdf").exists()


# ------------------------------------------------------------------ everything, and the docs tables


def test_plot_all(reports, tmp_path):
    d = tmp_path / "reports"
    for name, path in reports.items():
        (d / name).mkdir(parents=True)
        shutil.copy(path, d / name / "report.json")
    sw = d / "sweeps" / "smoke"
    sw.mkdir(parents=True)
    (sw / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in sweep_rows()))
    # The sweep figure's axes: the experiment's pareto: (through sweep.json), as --summarize's.
    (tmp_path / "smoke.yaml").write_text("pareto: [summary.latency_s:min, sram_bytes:min]\n")
    (sw / "sweep.json").write_text(json.dumps({"experiment_file": str(tmp_path / "smoke.yaml")}))
    done = run("plot_all.py", d)
    figs = d / "figures"
    for base in ("roofline", "roofline-tpu-v1", "breakdown", "speedup", "breakdown-lstm0-b8", "batch-mlp1-tpu-v1",
                 "sweep-smoke"):
        check_figure(figs / base)
    assert str(figs / "roofline.pdf") in done.stdout


def test_plot_all_malformed(tmp_path):
    one_line_error(run("plot_all.py", tmp_path / "nothing-here", expect=2), "not a directory")
    (tmp_path / "empty").mkdir()
    one_line_error(run("plot_all.py", tmp_path / "empty", expect=2), "no report.json")
    (tmp_path / "bad" / "x").mkdir(parents=True)
    (tmp_path / "bad" / "x" / "report.json").write_text("[1, 2]")
    one_line_error(run("plot_all.py", tmp_path / "bad", expect=2), "top level is not an object")


def test_baseline_table_update_doc(tmp_path):
    import baseline_table

    doc = tmp_path / "doc.md"
    doc.write_text("intro\n<!-- BEGIN GENERATED by x -->\nold\n<!-- END GENERATED -->\noutro\n")
    baseline_table.update_doc(str(doc), "NEW TABLE")
    assert doc.read_text() == "intro\n<!-- BEGIN GENERATED by x -->\nNEW TABLE\n<!-- END GENERATED -->\noutro\n"
    bad = tmp_path / "bad.md"
    bad.write_text("no marks")
    with pytest.raises(report_io.InputError, match="no '<!-- BEGIN GENERATED"):
        baseline_table.update_doc(str(bad), "x")


def test_baseline_table_needs_all_six_apps(reports, tmp_path):
    done = run("baseline_table.py", *apps(reports), expect=2)
    one_line_error(done, "no report for lstm1, cnn1")


# ------------------------------------------------------------------ energy


def test_energy_breakdown_and_perf_per_w(reports, tmp_path):
    done = run("plot_energy.py", *apps(reports), "--out", tmp_path / "energy", "--table", tmp_path / "energy.md")
    check_figure(tmp_path / "energy")
    assert "| cnn0 |" in done.stdout and "leakage" in done.stdout
    assert (tmp_path / "energy.md").read_text() == done.stdout.split(str(tmp_path))[0]
    run("plot_energy.py", *apps(reports), "--absolute", "--out", tmp_path / "abs")
    check_figure(tmp_path / "abs")
    done = run("plot_energy.py", *apps(reports), "--perf-per-w", "--baselines", "haswell-e5-2699v3,k80",
               "--out", tmp_path / "ppw")
    check_figure(tmp_path / "ppw")
    assert "| incremental |" in done.stdout and "| total |" in done.stdout


def test_energy_malformed(reports, malformed, tmp_path):
    done = run("plot_energy.py", malformed["bad_json"], "--out", tmp_path / "x", expect=2)
    one_line_error(done, "invalid JSON")
    old = json.load(open(reports["mlp1-b8"]))
    del old["summary"]["energy_breakdown_j"]
    (tmp_path / "old.json").write_text(json.dumps(old))
    one_line_error(run("plot_energy.py", tmp_path / "old.json", "--out", tmp_path / "x", expect=2),
                   "no summary.energy_breakdown_j")
    nopower = json.load(open(reports["mlp1-b8"]))
    for b in nopower["baselines"]:
        b["accelerator_perf_per_w_ratio"] = None
    (tmp_path / "nopower.json").write_text(json.dumps(nopower))
    one_line_error(run("plot_energy.py", tmp_path / "nopower.json", "--perf-per-w", "--out", tmp_path / "x", expect=2),
                   "no baseline with power figures")
    one_line_error(run("plot_energy.py", tmp_path / "nopower.json", "--perf-per-w", "--baselines", "k80",
                       "--out", tmp_path / "x", expect=2), "has no perf/W")
    assert not (tmp_path / "x.pdf").exists()


def test_energy_table_needs_all_six_apps(reports):
    one_line_error(run("energy_table.py", *apps(reports), expect=2), "no report for lstm1, cnn1")


def test_energy_table_from_the_binary(tmp_path):
    binary = tessera_binary()
    if not binary:
        pytest.skip("no tessera binary with run --baseline")
    doc = tmp_path / "energy.md"
    doc.write_text("intro\n<!-- BEGIN GENERATED by analysis/energy_table.py -->\n<!-- END GENERATED -->\n")
    done = run("energy_table.py", "--tessera", binary, "--out", tmp_path / "out", "--update-doc", doc,
               "--figures", tmp_path / "figs")
    text = doc.read_text()
    for needle in ("| paper (GM - WM) |", "| 10% load (prediction) |", "| die |"):
        assert needle in text and needle in done.stdout
    check_figure(tmp_path / "figs" / "energy-breakdown-tpu")
    check_figure(tmp_path / "figs" / "perf-per-w-tpu")
