"""Tests for workloads/tpu/generate_tpu_apps.py.

Run: /usr/bin/python3 -m pytest workloads/tpu
"""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import generate_tpu_apps as gen  # noqa: E402

SCRIPT = os.path.join(HERE, "generate_tpu_apps.py")
ROOT = os.path.dirname(os.path.dirname(HERE))


def tessera_binary():
    b = os.environ.get("TESSERA_BIN") or os.path.join(ROOT, "build", "tessera")
    return b if os.path.isfile(b) and os.access(b, os.X_OK) else None


@pytest.mark.parametrize("app", gen.APPS)
def test_counts_match_table1_exactly(app):
    g = gen.BUILDERS[app]()
    t = gen.TARGETS[app]
    c = g.counts()
    assert (c["fc"], c["conv"], c["vector"], c["pool"]) == (t["fc"], t["conv"], t["vector"], t["pool"])
    assert g.batch == t["batch"]


@pytest.mark.parametrize("app", gen.APPS)
def test_weights_and_macs_per_weight_byte_within_2_percent(app):
    g = gen.BUILDERS[app]()
    t = gen.TARGETS[app]
    assert g.total_weights() == pytest.approx(t["weights"], rel=0.02)
    assert g.total_macs() / g.total_weights() == pytest.approx(t["ops_per_byte"], rel=0.02)
    assert gen.check_targets(g) == []


def test_fc_layers_do_batch_macs_per_weight():
    for app in ("mlp0", "mlp1", "lstm0", "lstm1"):
        g = gen.BUILDERS[app]()
        assert g.total_macs() == g.batch * g.total_weights()


def test_cnn0_is_a_19x19_board_throughout():
    g = gen.build_cnn0()
    convs = [s["name"] for s in g.layers if s["op"] == "conv2d"]
    assert all(g.shapes[n][:2] == (19, 19) for n in convs)
    assert sum(g.macs.values()) == 361 * g.total_weights()


def test_cnn1_shapes():
    g = gen.build_cnn1()
    assert g.shapes["pool2"] == (28, 28, 64)
    assert g.shapes["a3_cat"][:2] == (28, 28)
    assert g.shapes["b3_cat"][:2] == (14, 14)
    assert g.shapes["c2_cat"][:2] == (7, 7)
    assert g.shapes["fc4"] == (1000,)


def test_lstm1_matrices_are_600x600_blocks():
    # Sec. 7: "the 600x600 matrix used in LSTM1"; no invented vocabulary layer.
    g = gen.build_lstm1()
    tiles = g.matrix_tiles()
    assert len(tiles) == 37
    for name, m, k, n, _ in tiles:
        assert m == 1 and k % 600 == 0 and n % 600 == 0, (name, k, n)
    assert max(n for *_, n, _ in tiles) == 1800
    assert g.shapes[g.last] == (600,)
    blocks = sum(k * n for _, _, k, n, _ in tiles) // 360000
    assert blocks == 12 * 2 + 22 * 3 + 3 and g.total_weights() == blocks * 360000 == 33480000


def test_useful_mac_share_hand_derived():
    g = gen.Graph("t", 4, "")
    g.input("x", [600])
    g.layer("a", "fc", units=600)
    # 600x600 on 256x256 tiles: 3 x 3 tiles, 360,000 of 9 x 65,536 MACs (the Sec. 7 matrix)
    assert g.matrix_tiles() == [("a", 1, 600, 600, 9)]
    assert g.useful_mac_share() == pytest.approx(360000 / (9 * 65536))
    assert g.useful_mac_share() == pytest.approx(0.6104, abs=1e-4)
    # a 3x3 conv: K = 3*3*8 = 72 (one tile), N = 4 filters; M = 5x5 outputs streams 25 rows
    h = gen.Graph("c", 1, "")
    h.input("x", [5, 5, 8])
    h.layer("c", "conv2d", filters=4, kernel=3, padding="same")
    assert h.matrix_tiles() == [("c", 25, 72, 4, 1)]
    # with the fc layer of 8 x 300 after it: tiles weighted by their streaming rows
    h.layer("f", "flatten")
    h.layer("d", "fc", units=300)  # K = 5*5*4 = 100, N = 300: 1 x 2 tiles, 1 row each
    real = 25 * 72 * 4 + 1 * 100 * 300  # 37,200 of 27 x 65,536
    held = 25 * 1 * 65536 + 1 * 2 * 65536
    assert h.useful_mac_share() == pytest.approx(real / held)
    # MLP1: 1500x1000, 1000x2000, 2000x600, 600x500 -> 24 + 32 + 24 + 6 = 86 tiles
    mlp1 = gen.build_mlp1()
    assert sum(t for *_, t in mlp1.matrix_tiles()) == 86
    assert mlp1.useful_mac_share() == pytest.approx(5_000_000 / (86 * 65536))


def test_ub_peak_hand_derived():
    # batch 2: x (2 x 100 = 200 B) at 0; a (600 B) at 200, x dies after a; b (100 B) first
    # fit into x's hole at 0; c (2 x 500 = 1000 B) does not fit the hole left by a ...
    g = gen.Graph("t", 2, "")
    g.input("x", [100])
    g.layer("a", "fc", units=300)
    g.layer("b", "fc", units=50)
    assert g.ub_peak_bytes() == 800
    g.layer("c", "fc", units=500)  # a dies after b, so [100, 800) is free: c at 100
    assert g.ub_peak_bytes() == 1100
    assert g.ub_peak_bytes(batch=1) == 550
    assert g.ub_peak_bytes(capacity=1099) is None and g.ub_peak_bytes(capacity=1100) == 1100
    # flatten is an alias: no bytes of its own, and its source lives while it is read
    h = gen.Graph("f", 1, "")
    h.input("x", [2, 2, 4])
    h.layer("fl", "flatten")
    h.layer("y", "fc", units=8)
    assert h.ub_peak_bytes() == 16 + 8
    # an input nobody reads and the graph outputs are never released
    k = gen.Graph("k", 1, "")
    k.input("x", [10])
    k.input("unused", [5])
    k.layer("y", "fc", "x", units=10)
    k.layer("z", "fc", units=10)
    # x [0, 10), unused [10, 15), y [15, 25); x dies after y, so z fills its hole [0, 10)
    assert k.ub_peak_bytes() == 25
    k.layer("w", "fc", "z", units=5)  # 5 B: 'unused' stays, so w goes at 25, not into [10, 15)
    k.outputs = ["y", "w"]  # z dies after w; y and w stay to the end
    assert k.ub_peak_bytes() == 30


@pytest.mark.parametrize("app", gen.APPS)
def test_ub_peak_meets_table8(app):
    g = gen.BUILDERS[app]()
    table8 = gen.TABLE8_UB_MIB[app] * gen.MIB
    peak = g.ub_peak_bytes()
    assert peak <= table8 * (1 + gen.UB_TOLERANCE)
    if app in gen.UB_TWO_SIDED:
        assert peak >= table8 * (1 - gen.UB_TOLERANCE)


@pytest.mark.parametrize("app", gen.APPS)
def test_whole_batch_runs_in_one_pass(app):
    g = gen.BUILDERS[app]()
    assert g.ub_peak_bytes(capacity=gen.UB_CAPACITY_BYTES) == g.ub_peak_bytes() <= gen.UB_CAPACITY_BYTES


def test_cnn1_fc_layers_run_at_32_macs_per_weight_byte():
    # Sec. 4: CNN1's FC layers run at an operational intensity of 32: one pass over batch 32,
    # each FC weight used once per sample.
    g = gen.build_cnn1()
    fcs = [s["name"] for s in g.layers if s["op"] == "fc"]
    assert len(fcs) == 4
    assert all(g.batch * g.macs[n] / g.weights[n] == 32 for n in fcs)
    assert g.ub_peak_bytes(capacity=gen.UB_CAPACITY_BYTES) is not None


@pytest.mark.parametrize("app", gen.APPS)
def test_useful_share_within_stated_band(app):
    g = gen.BUILDERS[app]()
    row2, row1 = gen.TABLE3_ROWS_2_1[app]
    lo, hi = gen.USEFUL_BAND[app]
    share = 100 * g.useful_mac_share()
    assert 100 * row2 / row1 + lo <= share <= 100 * row2 / row1 + hi


def test_ub_peak_and_one_pass_equal_the_compiler():
    """The generator's buffer plan is the compiler's: `tessera compile` prints its peak."""
    binary = tessera_binary()
    if not binary:
        pytest.skip("no tessera binary (build/tessera or TESSERA_BIN)")
    for app in gen.APPS:
        done = subprocess.run([binary, "compile", "--arch", os.path.join(ROOT, "configs", "tpu-v1.yaml"),
                               "--workload", os.path.join(HERE, app + ".yaml")], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        head = "\n".join(done.stdout.splitlines()[:2])
        peak = re.search(r"unified buffer peak (\d+) bytes", head)
        assert peak, head
        assert int(peak.group(1)) == gen.BUILDERS[app]().ub_peak_bytes(), app
        assert "in passes of" not in head, head


def test_shape_inference_rules():
    g = gen.Graph("t", 1, "")
    g.input("x", [15, 15, 8])
    g.layer("a", "conv2d", filters=4, kernel=3, stride=2, padding="same")
    assert g.shapes["a"] == (8, 8, 4)
    g.layer("b", "conv2d", "x", filters=4, kernel=3)
    assert g.shapes["b"] == (13, 13, 4)
    g.layer("c", "conv2d", "b", filters=4, kernel=1, padding=1)
    assert g.shapes["c"] == (15, 15, 4) and g.weights["c"] == 4 * 4
    g.layer("d", "maxpool", "x", kernel=2)
    assert g.shapes["d"] == (7, 7, 8)
    g.layer("e", "conv2d", "x", filters=2, kernel=[1, 7], padding="same")
    assert g.shapes["e"] == (15, 15, 2) and g.macs["e"] == 15 * 15 * 7 * 8 * 2
    g.layer("f", "concat", ["x", "c", "e"])
    assert g.shapes["f"] == (15, 15, 14)
    g.layer("gap", "global_avgpool")
    g.layer("fc", "fc", units=3)
    assert g.weights["fc"] == 14 * 3


def _ops_on_disk(path):
    """Count layer ops in a generated file with a regex (independent of the builder)."""
    counts = {"fc": 0, "conv": 0, "vector": 0, "pool": 0}
    with open(path, encoding="utf-8") as f:
        text = f.read()
    names = re.findall(r"^  - \{name: ([A-Za-z0-9_]+), op: ([a-z_0-9]+)", text, re.M)
    for _, op in names:
        kind = gen.KIND[op]
        if kind:
            counts[kind] += 1
    return counts, text


@pytest.mark.parametrize("app", gen.APPS)
def test_files_on_disk(app):
    counts, text = _ops_on_disk(os.path.join(HERE, app + ".yaml"))
    t = gen.TARGETS[app]
    assert counts == {k: t[k] for k in counts}
    assert text.startswith("# GENERATED by workloads/tpu/generate_tpu_apps.py")
    assert "INVENTED" in text
    assert re.search(r'^description: ".*INVENTED.*"$', text, re.M)
    assert re.search(r"^batch: %d$" % t["batch"], text, re.M)
    # only keys of the Tessera YAML graph format
    for body in re.findall(r"^  - \{(.*)\}$", text, re.M):
        for key in re.findall(r"(?:^|, )([a-z_]+): ", body):
            assert key in gen.KEY_ORDER + ["shape"], key


def test_render_is_deterministic():
    for app in gen.APPS:
        assert gen.render(app)[1] == gen.render(app)[1]


def test_check_mode_passes_on_checked_in_files():
    r = subprocess.run([sys.executable, SCRIPT, "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "files up to date" in r.stdout


def test_check_mode_detects_stale_files(tmp_path):
    for app in gen.APPS:
        shutil.copy(os.path.join(HERE, app + ".yaml"), tmp_path / (app + ".yaml"))
    ok = subprocess.run([sys.executable, SCRIPT, "--check", "--out-dir", str(tmp_path)], capture_output=True)
    assert ok.returncode == 0
    p = tmp_path / "cnn1.yaml"
    p.write_text(p.read_text().replace("units: 4096", "units: 4095", 1))
    bad = subprocess.run([sys.executable, SCRIPT, "--check", "--out-dir", str(tmp_path)],
                         capture_output=True, text=True)
    assert bad.returncode == 1
    assert "cnn1.yaml" in bad.stderr


def test_useful_share_equals_the_simulator_counters(tmp_path):
    """Graph.useful_mac_share is what the simulated TPU v1 counts as Table 3 rows 2 / (2 + 3):
    useful PE-cycles over all PE-cycles of the array's streaming cycles (report.json table3)."""
    binary = tessera_binary()
    if not binary:
        pytest.skip("no tessera binary (build/tessera or TESSERA_BIN)")
    for app in gen.APPS:
        out = tmp_path / app
        done = subprocess.run([binary, "run", "-q", "--arch", os.path.join(ROOT, "configs", "tpu-v1.yaml"),
                               "--workload", os.path.join(HERE, app + ".yaml"), "--out", str(out)],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        with open(out / "report.json", encoding="utf-8") as f:
            rows = {r["row"]: r for r in json.load(f)["table3"]["rows"]}
        useful, unused = rows[2]["count"], rows[3]["count"]
        assert useful / (useful + unused) == pytest.approx(gen.BUILDERS[app]().useful_mac_share(), rel=1e-12), app
