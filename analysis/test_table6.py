"""pytest: analysis/table6.py on small synthetic reports whose ratios are known by hand."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "analysis"))
import report_io  # noqa: E402
import table6  # noqa: E402
import tpu_paper  # noqa: E402

# Synthetic inferences/s: the TPU 100x the CPU on every app, the GPU 2x, except MLP0.
CPU_IPS = 1000.0


def report(app, batch, tpu, cpu, gpu):
    def base(name, ips):
        return {"name": name, "batch": batch, "roofline": {},
                "summary": {"latency_s": batch / ips, "tops": 1.0, "inferences_per_s": ips}}
    return {"arch": {"name": "tpu-v1"}, "workload": {"name": app, "batch": batch},
            "summary": {"latency_s": batch / tpu, "inferences_per_s": tpu, "tops": 1.0, "peak_tops": 91.75,
                        "oi_macs_per_weight_byte": batch, "cycles": {}},
            "roofline": {"peak_tops": 91.75, "weight_memory": {}}, "layers": [],
            "baselines": [base("haswell-e5-2699v3", cpu), base("k80", gpu)]}


@pytest.fixture
def reports(tmp_path):
    paths = []
    for app, batch in tpu_paper.TPU_BATCH.items():
        tpu = 100 * CPU_IPS
        runs = [(batch, tpu, CPU_IPS, 2 * CPU_IPS)]
        if app == "mlp0":  # at the TPU's batch the CPU would be faster; at 16 (Table 4) it runs at CPU_IPS
            runs = [(batch, tpu, 4 * CPU_IPS, 8 * CPU_IPS), (16, tpu / 2, CPU_IPS, 3 * CPU_IPS)]
        for b, t, c, g in runs:
            d = tmp_path / f"{app}-{b}"
            d.mkdir()
            (d / "report.json").write_text(json.dumps(report(app, b, t, c, g)))
            paths.append(str(d / "report.json"))
    return paths


def row(text, name):
    for line in text.splitlines():
        cells = [c.strip().strip("*") for c in line.strip("|").split("|")]
        if cells[0] == name:
            return cells[1:]
    raise AssertionError(f"no row {name!r} in\n{text}")


def test_ratios_use_the_published_baseline_batch_and_the_deployment_weights(reports, tmp_path):
    out = tmp_path / "t6.md"
    assert table6.main(reports + ["--table", str(out)]) == 0
    text = out.read_text()
    # MLP0: the TPU at 200 (100,000/s) over the CPU at 16 (1,000/s), not at 200 (4,000/s).
    tc = row(text, "TPU/CPU, Tessera")
    assert tc[:6] == ["100.0"] * 6
    assert tc[6:] == ["100.0", "100.0"]
    gc = row(text, "GPU/CPU, Tessera")
    assert gc[:6] == ["3.00", "2.00", "2.00", "2.00", "2.00", "2.00"]
    # WM: (30.5 * 3 + 64.5 * 2) / 95; GM: 3^(1/6) * 2^(5/6).
    assert gc[7] == f"{(30.5 * 3 + 64.5 * 2) / 95:.2f}"
    assert gc[6] == f"{3 ** (1 / 6) * 2 ** (5 / 6):.2f}"
    assert row(text, "TPU/GPU, Tessera")[0] == f"{100 / 3:.1f}"
    # Host time: TPU time x (1 + Table 5 share); MLP1's 76%.
    assert row(text, "TPU/CPU, Tessera, TPU + Table 5 host time")[1] == f"{100 / 1.76:.1f}"
    # The paper's rows, with its own columns averaged by our weights in brackets.
    paper = row(text, "TPU/CPU, paper")
    assert paper[:2] == ["41.0", "18.5"] and paper[7].startswith("29.2 (22.7")
    assert row(text, "CPU/GPU batch")[:6] == ["16", "168", "64", "96", "8", "32"]


def test_weights_are_table1_shares_split_evenly():
    assert tpu_paper.WEIGHTS == {"mlp0": 30.5, "mlp1": 30.5, "lstm0": 14.5, "lstm1": 14.5, "cnn0": 2.5, "cnn1": 2.5}
    assert tpu_paper.wmean(tpu_paper.TABLE6["TPU/CPU"][:6]) == pytest.approx(22.7, abs=0.05)


def test_a_missing_batch_is_a_one_line_error(reports):
    only_tpu_batch = [p for p in reports if not p.endswith("mlp0-16/report.json")]
    done = subprocess.run([sys.executable, os.path.join(ROOT, "analysis", "table6.py")] + only_tpu_batch,
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert "no report for mlp0 at batch 16" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_baseline_batch_choices():
    assert table6.baseline_batches("paper")[0]["mlp0"] == 16
    assert table6.baseline_batches("paper")[0]["cnn1"] == 32
    assert table6.baseline_batches("scaled")[0] == {"mlp0": 16, "mlp1": 13, "lstm0": 5, "lstm1": 8, "cnn0": 1, "cnn1": 3}
    assert table6.baseline_batches("cnn0=4")[0]["cnn0"] == 4
    with pytest.raises(report_io.InputError):
        table6.baseline_batches("cnn9=4")
