#!/usr/bin/python3
"""pytest: analysis/plot_serving.py draws curve.csv files of `tessera serve`, and
analysis/serving_table.py turns serving.json files into docs/serving.md's tables; both fail
in one line (exit status 2) on malformed input.

The curve files are written here in the format of tessera serve's curve.csv (the CLI tests,
tests/sim/serve/test_serve_cli.cpp, check that tessera writes that format).

Run: /usr/bin/python3 -m pytest -q analysis/test_serving.py
"""
import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import serving_table  # noqa: E402
import report_io  # noqa: E402
from test_plots import check_figure, one_line_error, run  # noqa: E402

HEADER = ("platform,replicas,batch,policy,load,offered_per_s,throughput_per_s,per_replica_per_s,p50_ms,p90_ms,p99_ms,"
          "p999_ms,mean_ms,replica_utilization,host_utilization\n")


def curve(path, replicas):
    rows = [HEADER]
    for k in range(1, 11):
        load = k / 10.5
        thr = load * 300000 * replicas
        p99 = 2 + 1 / (1.02 - load)
        rows.append(f"tpu-v1,{replicas},200,fixed,{load:.6g},{thr:.6g},{thr:.6g},{thr / replicas:.6g},{p99 / 2:.6g},"
                    f"{p99 * 0.8:.6g},{p99:.6g},{p99 * 1.3:.6g},{p99 / 2:.6g},{load:.6g},0.1\n")
    path.mkdir(parents=True, exist_ok=True)
    (path / "curve.csv").write_text("".join(rows))
    return str(path)


def test_plot_serving(tmp_path):
    one = curve(tmp_path / "x1", 1)
    four = curve(tmp_path / "x4", 4)
    out = tmp_path / "fig"
    done = run("plot_serving.py", one, four, "--per-replica", "--limit-ms", "7", "--label", "1 TPU", "--label", "4 TPUs",
               "--out", out)
    check_figure(str(out))
    assert done.stdout.split() == [f"{out}.pdf", f"{out}.png"]


def test_plot_serving_malformed(tmp_path):
    (tmp_path / "bad.csv").write_text("platform,replicas\nx,1\n")
    one_line_error(run("plot_serving.py", tmp_path / "bad.csv", "--out", tmp_path / "f", expect=2), "no column batch")
    (tmp_path / "nan.csv").write_text(HEADER + "a,1,2,fixed,0.5,1,1,1,x,1,1,1,1,1,1\n")
    one_line_error(run("plot_serving.py", tmp_path / "nan.csv", "--out", tmp_path / "f", expect=2), "nan.csv:2: p50_ms")
    one_line_error(run("plot_serving.py", tmp_path / "missing", "--out", tmp_path / "f", expect=2), "cannot read")
    good = curve(tmp_path / "g", 1)
    one_line_error(run("plot_serving.py", good, "--percentile", "p42", "--out", tmp_path / "f", expect=2), "--percentile")
    one_line_error(run("plot_serving.py", good, "--label", "a", "--label", "b", "--out", tmp_path / "f", expect=2),
                   "one --label per curve file")


def table4_data():
    rows = {}
    for platform, batch, p99, ips, pct in serving_table.PAPER_TABLE4:
        dies = serving_table.DIES[platform]
        rows[(platform, batch)] = {"p99_at_rate_ms": p99 * 1.1, "load_at_rate": 0.8 if batch != 16 else 1.2,
                                   "max_per_die": ips * 0.9, "capacity_per_die": ips * 100 / pct}
    cal = {"achieved_ms": 7.0, "per_replica_per_s": 225000, "device_only_ms": 0.86}
    return {"scale": 0.9637, "calibration": cal, "rows": rows}


def test_table4_markdown_marks_the_calibrated_row_and_errors():
    text = serving_table.table4_markdown(table4_data())
    lines = text.splitlines()
    tpu200 = next(ln for ln in lines if ln.startswith("| TPU (tpu-v1) | 200 |"))
    assert "(calibrated)" in tpu200 and "202,500" in tpu200 and "-10%" in tpu200
    tpu250 = next(ln for ln in lines if ln.startswith("| TPU (tpu-v1) | 250 |"))
    assert "| 11.0 | +10% |" in tpu250 and "| 100% | 90% |" in tpu250
    cpu16 = next(ln for ln in lines if ln.startswith("| CPU (Haswell die) | 16 |"))
    assert "(load ≥ 1)" in cpu16 and "| — |" in cpu16
    assert "TPU (tpu-v1) 1.38× (paper 1.24×)" in text  # capacity at 250 over the max at 200: 280,000 / 202,500


def test_update_doc_replaces_named_blocks(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("a\n<!-- BEGIN GENERATED table4 by x -->\nold\n<!-- END GENERATED table4 -->\nb\n"
                   "<!-- BEGIN GENERATED curve by x -->\n<!-- END GENERATED curve -->\nc\n")
    serving_table.update_doc(str(doc), {"table4": "T4\n", "curve": "C\n"})
    assert doc.read_text() == ("a\n<!-- BEGIN GENERATED table4 by x -->\nT4\n<!-- END GENERATED table4 -->\nb\n"
                               "<!-- BEGIN GENERATED curve by x -->\nC\n<!-- END GENERATED curve -->\nc\n")
    with pytest.raises(report_io.InputError, match="no '<!-- BEGIN GENERATED mlperf"):
        serving_table.update_doc(str(doc), {"mlperf": "x"})


def test_serving_table_reads_only_serving_json(tmp_path):
    (tmp_path / "table4-calibrate").mkdir()
    (tmp_path / "table4-calibrate" / "serving.json").write_text(json.dumps({"format": "something else"}))
    one_line_error(run("serving_table.py", "--out", tmp_path, "--skip-mlperf", expect=2), "not a serving.json")
    one_line_error(run("serving_table.py", "--out", tmp_path / "none", "--skip-mlperf", expect=2), "run with --tessera first")
    one_line_error(run("serving_table.py", "--tessera", tmp_path, "--out", tmp_path, expect=2), "--tessera")
