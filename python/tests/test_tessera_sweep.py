"""tessera.sweep (a small real sweep, resume, a dict experiment, errors, progress), pareto, and
the figures drawn through analysis/ (roofline, breakdown, Pareto).

Run: /usr/bin/python3 -m pytest -q python/tests
"""
import json
import os

import matplotlib
import pytest

import tessera

matplotlib.use("Agg")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMOKE = os.path.join(ROOT, "experiments", "smoke.yaml")
ARCH = os.path.join(ROOT, "configs", "tpu-v1.yaml")

SMOKE_COLUMNS = ["point", "index", "workload", "batch", "status", "error", "array.rows",
                 "weight_memory.bandwidth_gb_per_s", "array.dataflow", "unified_buffer.capacity", "array.cols",
                 "unified_buffer.read_bytes_per_cycle", "unified_buffer.write_bytes_per_cycle", "vector_unit.lanes",
                 "summary.latency_s", "summary.tops", "summary.utilization", "summary.cycles.weight_stall",
                 "sram_bytes"]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweeps") / "smoke"
    return tessera.sweep(SMOKE, jobs=2, out=out), out


def test_small_sweep_rows_columns_dtypes(smoke):
    df, out = smoke
    assert df.attrs["out"] == str(out) and df.attrs["experiment"] == "smoke"
    assert list(df.columns) == SMOKE_COLUMNS
    assert len(df) == 10 and list(df["index"]) == list(range(10))
    assert df["status"].value_counts().to_dict() == {"ok": 8, "failed": 2}
    dtypes = {c: str(t) for c, t in df.dtypes.items()}
    assert dtypes["index"] == dtypes["batch"] == dtypes["array.rows"] == "int64"
    assert dtypes["summary.latency_s"] == dtypes["summary.tops"] == "float64"
    assert dtypes["sram_bytes"] == "float64"  # integers, NaN for the failed points
    assert dtypes["status"] == dtypes["error"] == dtypes["unified_buffer.capacity"] == "object"
    failed = df[df.status == "failed"]
    assert (failed["array.dataflow"] == "diagonal").all() and failed["summary.latency_s"].isna().all()
    assert failed["error"].str.contains("array.dataflow: 'diagonal' is not one of: ws, os, is").all()
    ok = df[df.status == "ok"]
    assert ok["error"].isna().all() and (ok["summary.latency_s"] > 0).all()
    # The same rows as results.jsonl.
    with open(out / "results.jsonl") as f:
        rows = {r["point"]: r for r in map(json.loads, f)}
    for _, row in ok.iterrows():
        assert row["summary.latency_s"] == rows[row["point"]]["metrics"]["summary.latency_s"]


def test_resume_runs_nothing_again(smoke):
    df, out = smoke
    before = os.path.getsize(out / "results.jsonl")
    again = tessera.sweep(SMOKE, out=out, progress=False)
    assert again.equals(df)
    assert os.path.getsize(out / "results.jsonl") == before
    assert tessera.load_sweep(out).equals(df)


def test_no_resume_refuses_a_directory_with_results(smoke):
    _, out = smoke
    with pytest.raises(tessera.TesseraError) as e:
        tessera.sweep(SMOKE, out=out, resume=False, progress=False)
    assert e.value.returncode == 2 and "--resume" in e.value.message


def test_progress_line(tmp_path, capsys):
    exp = {"name": "two", "base": "configs/tpu-v1.yaml", "workloads": [{"path": "workloads/tpu/mlp1.yaml", "batch": 8}],
           "parameters": {"grid": {"array.rows": [128, 256]}}, "metrics": ["summary.latency_s"]}
    df = tessera.sweep(exp, jobs=1, out=tmp_path / "two", base_dir=ROOT)
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith("sweep two: 2/2 done, 0 failed, ")
    assert list(df["array.rows"]) == [128, 256] and (df.status == "ok").all()


def test_dict_experiment_with_relative_paths_and_policy_file(tmp_path):
    policy = tmp_path / "policies" / "all16.yaml"
    policy.parent.mkdir()
    policy.write_text("default: {activations: int16, weights: int16}\n")
    exp = {
        "name": "dict-sweep",
        "base": os.path.relpath(ARCH, tmp_path),
        "workloads": [{"path": os.path.relpath(os.path.join(ROOT, "workloads", "tpu", "mlp1.yaml"), tmp_path),
                       "batch": 8}],
        "parameters": {"grid": {"precision": ["int8", "policies/all16.yaml"]}},
        "metrics": ["summary.latency_s", "summary.weight_memory_bytes"],
    }
    df = tessera.sweep(exp, jobs=2, out=tmp_path / "out", base_dir=tmp_path, progress=False)
    assert list(df["precision"]) == ["int8", "policies/all16.yaml"]
    assert (df.status == "ok").all(), df["error"].tolist()
    weights = df.set_index("precision")["summary.weight_memory_bytes"]
    assert weights["policies/all16.yaml"] == 2 * weights["int8"]  # int16 weights: twice the bytes
    pts = tessera.points(exp, base_dir=tmp_path)
    assert list(pts.columns) == ["point", "index", "workload", "batch", "precision"]
    assert list(pts["point"]) == list(df["point"])


def test_bad_experiment_is_an_error_with_key_and_exit_code(tmp_path):
    bad = tmp_path / "bad.yaml"
    text = open(SMOKE).read().replace("  - grid:", "  - gird:").replace("../", ROOT + "/")
    bad.write_text(text)
    with pytest.raises(tessera.TesseraError) as e:
        tessera.sweep(bad, out=tmp_path / "out")
    assert e.value.returncode == 2
    line = next(n for n, t in enumerate(text.splitlines(), 1) if "gird:" in t)
    assert e.value.message.startswith(f"{bad}:{line}:5: ")
    assert "parameters[0].gird: unknown key" in e.value.message
    assert not (tmp_path / "out").exists()
    exp = {"name": "x", "base": ARCH, "workloads": [os.path.join(ROOT, "workloads", "tpu", "mlp1.yaml")],
           "parameters": {"grid": {"array.rowz": [1]}}, "metrics": ["summary.latency_s"]}
    with pytest.raises(tessera.TesseraError) as e:
        tessera.sweep(exp, out=tmp_path / "out")
    assert e.value.returncode == 2 and e.value.message.startswith("<experiment dict 'x'>: ")
    assert "array.rowz" in e.value.message


def test_pareto(smoke):
    df, _ = smoke
    front = tessera.pareto(df, "summary.latency_s:min", "sram_bytes:min")
    ok = df[df.status == "ok"]
    assert 1 <= len(front) <= len(ok)
    assert list(front["summary.latency_s"]) == sorted(front["summary.latency_s"])
    assert front["summary.latency_s"].iloc[0] == ok["summary.latency_s"].min()
    for _, p in front.iterrows():  # nothing dominates a front point
        better = ok[(ok["summary.latency_s"] <= p["summary.latency_s"]) & (ok["sram_bytes"] <= p["sram_bytes"])
                    & ((ok["summary.latency_s"] < p["summary.latency_s"]) | (ok["sram_bytes"] < p["sram_bytes"]))]
        assert better.empty
    with pytest.raises(KeyError, match="no such column"):
        tessera.pareto(df, "summary.latncy_s:min")


def test_figures(smoke, tmp_path):
    from matplotlib.figure import Figure

    df, out = smoke
    runs = [tessera.run(ARCH, os.path.join(ROOT, "workloads", "tpu", f"{w}.yaml"), batch=8, baselines="k80")
            for w in ("mlp1", "cnn0")]
    figs = [
        tessera.plot_roofline(runs),
        tessera.plot_roofline(runs[0], layers=True, platforms=["tpu-v1"]),
        tessera.plot_breakdown(runs[0], top=3),
        tessera.plot_breakdown(runs, per="workload"),
        tessera.plot_pareto(df, "summary.latency_s:min", "sram_bytes:min", color="array.rows"),
        tessera.plot_pareto(out),
    ]
    for fig in figs:
        assert isinstance(fig, Figure) and fig.axes
    assert figs[0].axes[0].get_xscale() == "log"
    assert figs[4].axes[0].get_xlabel() == "latency (µs)"
    figs[2].savefig(tmp_path / "breakdown.png")
    assert (tmp_path / "breakdown.png").stat().st_size > 1000
    with pytest.raises(tessera.TesseraError, match="no baseline 'h100-sxm'"):
        tessera.plot_breakdown(runs[0], baseline="h100-sxm")
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        tessera.plot_roofline(runs, colour="red")


def test_interrupt_stops_the_sweep_and_keeps_finished_rows(tmp_path):
    """Ctrl-C in Python (SIGINT) stops tessera sweep too, keeps its finished rows, leaves no process."""
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "out"
    script = tmp_path / "interrupted.py"
    script.write_text(f"""
import sys, tessera
exp = {{"name": "interrupted", "base": {ARCH!r},
       "workloads": [{{"path": {os.path.join(ROOT, "workloads", "tpu", "cnn1.yaml")!r}, "batch": 1}}],
       "parameters": {{"grid": {{"array.rows": [32, 48, 64, 96, 128, 192, 256, 384],
                                 "weight_memory.bandwidth_gb_per_s": [17, 34, 68, 136]}}}},
       "derived": {{"array.cols": "${{array.rows}}"}},
       "metrics": ["summary.latency_s"]}}
try:
    tessera.sweep(exp, jobs=1, out={str(out)!r}, progress=False)
except KeyboardInterrupt:
    sys.exit(5)
""")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    proc = subprocess.Popen([sys.executable, str(script)], env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    results = out / "results.jsonl"
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        if results.exists() and results.read_text().count("\n") >= 1:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 5
    rows = results.read_text().splitlines()
    assert 1 <= len(rows) < 32
    assert all(json.loads(r)["status"] == "ok" for r in rows)
    stray = subprocess.run(["pgrep", "-f", str(out)], capture_output=True, text=True).stdout
    assert not stray.strip()
