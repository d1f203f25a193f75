"""pytest: analysis/plot_llm_serving.py draws the four LLM serving figures from serve-llm
output directories (the fixtures in analysis/fixtures/serve-llm, written by serve-llm's own
writers), and fails on malformed input with one line and exit 2.

Run: /usr/bin/python3 -m pytest -q analysis/test_llm_serving.py
"""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures", "serve-llm")
NAMES = ["latency-cdf", "throughput-vs-rate", "kv-occupancy", "cost"]


def run(*args, expect=0):
    done = subprocess.run([sys.executable, os.path.join(HERE, "plot_llm_serving.py"), *map(str, args)],
                          capture_output=True, text=True)
    assert done.returncode == expect, done.stderr
    return done


def test_four_figures_from_two_runs(tmp_path):
    done = run(os.path.join(FIXTURES, "x1"), os.path.join(FIXTURES, "x2"), "--label", "one", "--label", "two",
               "--out", tmp_path / "llm")
    for name in NAMES:
        for ext in ("pdf", "png"):
            path = tmp_path / f"llm-{name}.{ext}"
            assert path.stat().st_size > 1000, path
            assert str(path) in done.stdout


def test_same_inputs_same_pdf(tmp_path):
    run(os.path.join(FIXTURES, "x1"), "--out", tmp_path / "a")
    run(os.path.join(FIXTURES, "x1"), "--out", tmp_path / "b")
    for name in NAMES:
        assert (tmp_path / f"a-{name}.pdf").read_bytes() == (tmp_path / f"b-{name}.pdf").read_bytes()


def test_malformed_inputs_one_line_exit_2(tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(os.path.join(FIXTURES, "x1"), bad)
    lines = (bad / "requests.csv").read_text().splitlines()
    cells = lines[3].split(",")
    cells[7] = "nan"
    lines[3] = ",".join(cells)
    (bad / "requests.csv").write_text("\n".join(lines) + "\n")
    err = run(bad, "--out", tmp_path / "f", expect=2).stderr.strip()
    assert "requests.csv:4: ttft_ms" in err and len(err.splitlines()) == 1
    (bad / "report.json").write_text("{}")
    assert "not a report.json of tessera serve-llm" in run(bad, "--out", tmp_path / "f", expect=2).stderr
    assert "cannot read" in run(tmp_path / "missing", "--out", tmp_path / "f", expect=2).stderr
    assert "one --label per directory" in run(os.path.join(FIXTURES, "x1"), "--label", "a", "--label", "b", "--out",
                                              tmp_path / "f", expect=2).stderr
