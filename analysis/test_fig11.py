"""pytest: analysis/plot_fig11.py on a small synthetic sweep whose speed-ups are known by hand."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "analysis"))
import plot_fig11  # noqa: E402
import tpu_paper  # noqa: E402

BASE = {"weight_memory.bandwidth_gb_per_s": 34, "clock_mhz": 700, "accumulators.entries": 4096,
        "array.rows": 256, "array.cols": 256, "weight_memory.channels": 2}


def point(app, time_s, pcie_share=0.0, **changes):
    params = dict(BASE)
    params.update({k.replace("__", "."): v for k, v in changes.items()})
    total = 10 ** 6
    return {"point": f"{app}-{len(changes)}-{time_s}", "workload": app, "batch": 8, "params": params, "status": "ok",
            "metrics": {"summary.latency_s": time_s, "summary.cycles.total": total,
                        "summary.cycles.pcie": round(total * pcie_share)}}


def sweep_rows():
    rows = []
    for app in tpu_paper.APPS:
        mlp_like = not app.startswith("cnn")
        # Base: 10 ms, a fifth of it exposed PCIe (the device-only time is 8 ms).
        rows.append(point(app, 10e-3, 0.2))
        # memory 4x: device time 2 ms (4x) for MLPs/LSTMs, 8 ms (1x) for CNNs; PCIe still 2 ms.
        rows.append(point(app, 4e-3 if mlp_like else 10e-3, 0.5 if mlp_like else 0.2,
                          weight_memory__bandwidth_gb_per_s=136))
        rows.append(point(app, 10e-3, 0.2, clock_mhz=2800))                          # clock 4x: nothing
        rows.append(point(app, 10e-3, 0.2, clock_mhz=2800, accumulators__entries=16384))
        rows.append(point(app, 12e-3, 2e-3 / 12e-3, array__rows=512, array__cols=512))  # matrix 2x: 0.8
        rows.append(point(app, 6e-3, 2e-3 / 6e-3, weight_memory__bandwidth_gb_per_s=183.5,
                          weight_memory__channels=4))                                # GDDR5: device 4 ms, 2x
        rows.append(point(app, 10e-3, 0.2, clock_mhz=1050))
    rows.append({"point": "x", "workload": "mlp0", "batch": 8, "params": BASE, "status": "failed", "error": "boom"})
    return rows


@pytest.fixture
def sweep(tmp_path):
    d = tmp_path / "sweep"
    d.mkdir()
    (d / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in sweep_rows()))
    return d


def test_curves_speedups_and_means(sweep, tmp_path):
    sp, t0 = plot_fig11.speedups(plot_fig11.load_rows(str(sweep)))
    assert t0["mlp0"] == pytest.approx(8e-3)                       # PCIe removed from the base
    mem = sp[("memory", 4.0)]
    assert mem["mlp0"] == pytest.approx(4.0) and mem["cnn0"] == pytest.approx(1.0)
    gm, wm = plot_fig11.means(mem)
    assert wm == pytest.approx((95 - 5) / 95 * 4 + 5 / 95 * 1)     # MLP+LSTM 90 of 95 at 4x, CNN 5 at 1x
    assert gm == pytest.approx(4 ** (4 / 6))
    assert sp[("clock", 4.0)]["cnn1"] == pytest.approx(1.0)
    assert ("clock+", 4.0) in sp and ("matrix", 2.0) in sp
    assert sp[("matrix", 2.0)]["lstm1"] == pytest.approx(0.8)
    assert sp[("gddr5", round(183.5 / 34, 6))]["mlp1"] == pytest.approx(2.0)
    # With PCIe kept, the memory point is 10/4 = 2.5x.
    sp_pcie, _ = plot_fig11.speedups(plot_fig11.load_rows(str(sweep)), with_pcie=True)
    assert sp_pcie[("memory", 4.0)]["mlp0"] == pytest.approx(2.5)
    # The paper's host-time method: (1 + h) / (1/s + h); MLP1 h = 0.76, s = 2.
    host = plot_fig11.with_host(sp[("gddr5", round(183.5 / 34, 6))])
    assert host["mlp1"] == pytest.approx(1.76 / 1.26)


def test_tables_figure_and_doc(sweep, tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text(f"intro\n{plot_fig11.MARK_BEGIN}\nold\n{plot_fig11.MARK_END}\noutro\n")
    table = tmp_path / "fig11.md"
    assert plot_fig11.main([str(sweep), "--out", str(tmp_path / "fig11"), "--table", str(table),
                            "--update-doc", str(doc)]) == 0
    text = table.read_text()
    assert "| memory | 4x | 4.00 | 4.00 | 4.00 | 4.00 | 1.00 | 1.00 |" in text
    assert "| GDDR5, 700 MHz | 2.00 |" in text and "| 2.60 | 3.90 |" in text
    assert "GDDR5 + Table 5 host time" in text and "DDR3, clock 1.5x (1050 MHz)" in text
    body = doc.read_text()
    assert body.startswith("intro\n") and body.endswith("outro\n") and "old" not in body and text in body
    for ext in ("pdf", "png"):
        assert (tmp_path / f"fig11.{ext}").stat().st_size > 1000


def test_bad_input_is_a_one_line_error(tmp_path):
    bad = tmp_path / "results.jsonl"
    bad.write_text("{not json\n")
    done = subprocess.run([sys.executable, os.path.join(ROOT, "analysis", "plot_fig11.py"), str(bad)],
                          capture_output=True, text=True)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "results.jsonl:1" in done.stderr


def test_shipped_experiment_covers_every_curve_and_tpu_prime():
    """The experiment's points, classified without running them (tessera sweep --list)."""
    tessera = os.environ.get("TESSERA_BIN", os.path.join(ROOT, "build", "tessera"))
    assert os.path.exists(tessera), f"{tessera} not built"
    done = subprocess.run([tessera, "sweep", "experiments/tpu-fig11.yaml", "--list"], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    rows = [dict(json.loads(line), status="ok") for line in done.stdout.splitlines()]
    base = plot_fig11.base_params(rows)
    kinds = {plot_fig11.classify(r["params"], base) for r in rows if r["workload"] == "mlp0"}
    for c in plot_fig11.CURVES:
        for s in (0.25, 0.5, 2.0, 4.0):
            assert (c, s) in kinds, (c, s)
    assert ("gddr5", 183.5 / 34) in kinds and ("gddr5+clock", 1.5) in kinds and ("clock", 1.5) in kinds
    assert None not in kinds
    assert {r["workload"] for r in rows} == set(tpu_paper.APPS)
