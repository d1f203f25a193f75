"""Tests of bench/tpu_v4_gemm.py: the metrics on a hand-made table (values worked out by hand
below), the measured data as checked in, and a smoke run of 3 GEMMs through the built tessera
binary on configs/tpu-v4.yaml.

Run: /usr/bin/python3 -m pytest -q bench/test_tpu_v4_gemm.py
"""
import csv
import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import tpu_v4_gemm as tv  # noqa: E402

TPU_V4 = os.path.join(ROOT, "configs", "tpu-v4.yaml")


def hand_table():
    # measured 10, 20, 40, 100 us; predicted 11 (+10%), 15 (-25%), 40 (0%), 150 (+50%)
    return (np.array([10.0, 20.0, 40.0, 100.0]), np.array([11.0, 15.0, 40.0, 150.0]))


def test_ape_and_stats_by_hand():
    measured, pred = hand_table()
    assert tv.ape(pred, measured).tolist() == pytest.approx([10.0, 25.0, 0.0, 50.0])
    s = tv.error_stats(tv.ape(pred, measured))
    assert s["n"] == 4
    assert s["mape"] == pytest.approx(21.25)        # (10 + 25 + 0 + 50) / 4
    assert s["median"] == pytest.approx(17.5)       # mean of the middle two, 10 and 25
    assert s["worst"] == pytest.approx(50.0)


def test_size_bucket_is_the_mac_decade():
    # 32^3 = 32,768 -> 10^4; 100x100x100 = 10^6 exactly -> 10^6; 99x100x100 = 990,000 -> 10^5;
    # 1024^3 = 1.07e9 -> 10^9; 4096^3 = 6.9e10 -> 10^10
    b = tv.size_bucket([32, 100, 99, 1024, 4096], [32, 100, 100, 1024, 4096], [32, 100, 100, 1024, 4096])
    assert b.tolist() == [4, 6, 5, 9, 10]
    assert tv.bucket_label(4) == "10^4-10^5 MACs"


def test_error_table_rows_by_hand():
    measured, pred = hand_table()
    data = {"file": np.array(["128", "128", "1024", "4096"]),
            "dim_m": np.array([32, 64, 512, 2048]), "dim_n": np.array([32, 64, 512, 2048]),
            "dim_k": np.array([32, 64, 512, 2048]), "measured_us": measured}
    rows = {label: (kind, s) for label, kind, s in tv.error_table(data, pred)}
    assert rows["128 file"][0] == "fit (development)"
    assert rows["128 file"][1]["mape"] == pytest.approx(17.5)      # (10 + 25) / 2
    assert rows["1024 file"][0] == "unseen" and rows["1024 file"][1]["mape"] == pytest.approx(0.0)
    assert rows["4096 file"][1]["worst"] == pytest.approx(50.0)
    # MACs: 32^3 = 32,768 (10^4), 64^3 = 262,144 (10^5), 512^3 = 1.3e8 (10^8), 2048^3 = 8.6e9 (10^9)
    assert rows["10^4-10^5 MACs"][1]["mape"] == pytest.approx(10.0)
    assert rows["10^5-10^6 MACs"][1]["mape"] == pytest.approx(25.0)
    assert rows["all"][1]["mape"] == pytest.approx(21.25)


def test_operational_intensity_by_hand():
    # 128^3: 2*128^3 FLOPs over 2 bytes * 3 * 128^2 = 128/3 FLOP per byte
    assert tv.operational_intensity(128, 128, 128) == pytest.approx(128 / 3)


def test_workload_yaml_is_one_matmul_of_two_inputs():
    y = tv.gemm_workload_yaml(48, 80, 112)
    assert "shape: [48, 112]" in y and "shape: [112, 80]" in y and "op: matmul" in y and "dtype: fp16\n" in y


def test_two_constant_fit_recovers_launch_and_rate():
    # measured = base + 0.4 us + bytes / 300 GB/s, runs at 400 and 200 GB/s with no launch
    base = np.array([0.5, 1.0, 2.0, 3.0])
    mb = np.array([0.1e3, 0.4e3, 1.0e3, 2.0e3])  # bytes in units where us = bytes / (GB/s) x 1e-3
    measured = base + 0.4 + mb / 300.0
    launch, bw = tv.two_constant_fit(measured, base + mb / 400.0, base + mb / 200.0, 400.0, 200.0)
    assert launch == pytest.approx(0.4)
    assert bw == pytest.approx(300.0)


def test_measured_data_as_checked_in():
    d = tv.load_measured()
    assert len(d["file"]) == 1198
    assert [int((d["file"] == f).sum()) for f in tv.FILES] == [343, 512, 343]
    big = (d["dim_m"] == 4096) & (d["dim_n"] == 4096) & (d["dim_k"] == 4096)
    assert d["measured_us"][big].tolist() == pytest.approx([966.627143], rel=1e-6)


def test_smoke_three_gemms_through_tessera(tmp_path):
    binary = os.environ.get("TESSERA_BIN", os.path.join(ROOT, "build", "tessera"))
    assert os.path.exists(binary), f"{binary} not built"
    out = tmp_path / "pred.csv"
    done = subprocess.run([sys.executable, os.path.join(HERE, "tpu_v4_gemm.py"), "--bin", binary,
                           "--config", TPU_V4, "--files", "4096",
                           "--limit", "3", "--out", str(out)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(open(out)))
    assert len(rows) == 3
    for r in rows:
        # eight 128x128 MXUs at 1050 MHz can never beat their peak: at least
        # 2*M*N*K / (8*128*128*2*1050e6) seconds
        floor_us = int(r["dim_m"]) * int(r["dim_n"]) * int(r["dim_k"]) / (8 * 128 * 128 * 1050e6) * 1e6
        assert float(r["predicted_us"]) >= floor_us
    assert "| all | overall | 3 |" in done.stdout


def test_bad_option_is_one_line_exit_2(tmp_path):
    done = subprocess.run([sys.executable, os.path.join(HERE, "tpu_v4_gemm.py"), "--config",
                           str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "x.csv")],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "--config" in done.stderr
    assert not (tmp_path / "x.csv").exists()
