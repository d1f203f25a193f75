"""tessera.run, configs as dicts with dotted-key overrides, errors, and finding the executable,
against the real executable ($TESSERA_BIN, else this checkout's build/tessera).

Run: /usr/bin/python3 -m pytest -q python/tests
"""
import json
import os

import pandas as pd
import pytest

import tessera

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARCH = os.path.join(ROOT, "configs", "tpu-v1.yaml")
MLP1 = os.path.join(ROOT, "workloads", "tpu", "mlp1.yaml")

# layers.csv's columns and their dtypes as pandas reads them.
LAYER_DTYPES = {
    "index": "int64", "name": "object", "op": "object", "output_shape": "object", "a_dtype": "object",
    "b_dtype": "object", "m": "int64", "k": "int64", "n": "int64", "macs": "int64", "weights": "int64",
    "weight_bytes": "int64", "latency_s": "float64", "latency_cycles": "int64", "start_s": "float64",
    "end_s": "float64", "tops": "float64", "peak_tops": "float64", "utilization": "float64",
    "oi_macs_per_weight_byte": "float64", "cycles_array_active": "int64", "cycles_weight_shift": "int64",
    "cycles_weight_stall": "int64", "cycles_input_stall": "int64", "cycles_raw_stall": "int64",
    "cycles_non_matrix": "int64", "cycles_pcie": "int64", "spill_bytes_out": "int64", "spill_bytes_in": "int64",
    "energy_j": "float64", "power_w": "float64", "energy_mac_j": "float64", "energy_register_j": "float64",
    "energy_unified_buffer_j": "float64", "energy_accumulators_j": "float64", "energy_weight_fifo_j": "float64",
    "energy_vector_j": "float64", "energy_dram_j": "float64", "energy_pcie_j": "float64",
    "energy_leakage_j": "float64", "energy_on_j": "float64",
}


@pytest.fixture(scope="module")
def mlp1():
    return tessera.run(ARCH, MLP1, batch=8)


def test_run_returns_summary_layers_and_report(mlp1):
    r = mlp1
    assert r.report["arch"]["name"] == "tpu-v1" and r.report["workload"]["name"] == "mlp1"
    assert r.workload["batch"] == 8
    assert r.summary is r.report["summary"]
    assert r.summary["latency_s"] > 0 and r.latency_s == r.summary["latency_s"]
    assert r.cycles["total"] == sum(r.cycles.drop("total")) == r.summary["latency_cycles"]
    assert r.text.startswith("mlp1 on tpu-v1, batch 8: latency") and "report:" not in r.text
    assert "mlp1 on tpu-v1" in repr(r)
    assert r.out is None  # a temporary directory, removed
    # One row per report layer, the same numbers as report.json.
    assert isinstance(r.layers, pd.DataFrame)
    assert list(r.layers["name"]) == [layer["name"] for layer in r.report["layers"]] == ["fc1", "fc2", "fc3", "fc4"]
    assert r.layers["macs"].sum() == r.summary["macs"]
    assert list(r.layers["cycles_weight_stall"]) == [layer["cycles"]["weight_stall"] for layer in r.report["layers"]]


def test_layers_columns_and_dtypes(mlp1):
    assert list(mlp1.layers.columns) == list(LAYER_DTYPES)
    assert {c: str(t) for c, t in mlp1.layers.dtypes.items()} == LAYER_DTYPES


def test_residency_weights_host_as_a_dict_or_a_string(mlp1):
    # Weights in host memory: the weight fetchers read them over PCIe, so the bytes weight
    # memory served in the normal run now cross the link (docs/configs.md "residency").
    host = tessera.run(ARCH, MLP1, batch=8, residency={"weights": "host"})
    assert host.report["arch"]["chip"]["residency"] == {"inputs": "host", "weights": "host", "outputs": "host"}
    weight_bytes = mlp1.summary["weight_memory_bytes"]
    assert host.summary["weight_memory_bytes"] == 0
    assert host.report["workload"]["host_weight_bytes"] == weight_bytes
    assert host.summary["pcie_bytes_to_device"] == mlp1.summary["pcie_bytes_to_device"] + weight_bytes
    same = tessera.run(ARCH, MLP1, batch=8, residency="weights=host")
    assert same.summary["latency_cycles"] == host.summary["latency_cycles"] > mlp1.summary["latency_cycles"]
    with pytest.raises(tessera.TesseraError) as e:
        tessera.run(ARCH, MLP1, batch=8, residency={"weights": "hbm"})
    assert e.value.returncode == 2 and "'hbm' is not a residency for weights" in e.value.message


def test_run_with_out_keeps_the_files(tmp_path):
    out = tmp_path / "r"
    r = tessera.run(ARCH, MLP1, batch=8, out=out)
    assert r.out == str(out)
    assert sorted(os.listdir(out)) == ["layers.csv", "report.json", "summary.md"]
    with open(out / "report.json") as f:
        assert json.load(f) == r.report
    again = tessera.load_result(out)
    assert again.summary == r.summary and again.layers.equals(r.layers)


def test_overrides_change_the_config_and_match_an_edited_dict(mlp1):
    small = tessera.run(ARCH, MLP1, batch=8, overrides={"array.rows": 128, "array.cols": 128})
    # The Result (and its report) names the overridden config, not the base one (issue 33).
    assert small.arch["name"] == "tpu-v1 (array.rows=128, array.cols=128)"
    assert small.arch["array"]["rows"] == 128 and small.arch["array"]["cols"] == 128
    assert small.summary["peak_tops"] == pytest.approx(mlp1.summary["peak_tops"] / 4)
    assert small.summary["latency_cycles"] != mlp1.summary["latency_cycles"]
    # The same config as an edited dict gives the same simulation.
    arch = tessera.load_arch(ARCH)
    tessera.set_path(arch, "array.rows", 128)
    tessera.set_path(arch, "array.cols", 128)
    assert arch["array"]["rows"] == 128 and tessera.load_arch(ARCH)["array"]["rows"] == 256
    assert tessera.run(arch, MLP1, batch=8).summary == small.summary
    # load_arch takes overrides too; numpy values (from a DataFrame) are fine.
    np_rows = pd.Series([128]).iloc[0]
    same = tessera.load_arch(ARCH, {"array.rows": np_rows, "array.cols": np_rows})
    assert tessera.run(same, MLP1, batch=8).summary == small.summary


def test_workload_dict_precision_and_baselines():
    wl = {"name": "tiny", "batch": 4, "dtype": "int8", "inputs": [{"name": "x", "shape": [512]}],
          "layers": [{"name": "fc1", "op": "fc", "units": 256, "activation": "relu"},
                     {"name": "fc2", "op": "fc", "units": 64}],
          "outputs": ["fc2"]}
    r = tessera.run(ARCH, wl, precision="int16", baselines=["k80", "h100-sxm"])
    assert r.workload["name"] == "tiny" and r.workload["batch"] == 4
    assert r.summary["macs"] == 4 * (512 * 256 + 256 * 64)
    assert set(r.layers["a_dtype"]) == {"int16"}
    assert list(r.baselines["name"]) == ["k80", "h100-sxm"] and (r.baselines["latency_s"] > 0).all()
    # load_workload + a dotted override of a list element.
    wl2 = tessera.load_workload(MLP1, {"layers.0.units": 2048})
    assert tessera.get_path(wl2, "layers.0.units") == 2048
    assert tessera.run(ARCH, wl2, batch=8).layers.loc[0, "n"] == 2048


def test_onnx_with_input_shapes():
    r = tessera.run(ARCH, tessera.onnx_model("gpt2_decode"), batch=1, input_shapes={"sequence": 1, "past": 16})
    assert r.workload["name"] == "gpt2_decode" and len(r.layers) > 100


def test_bad_value_is_an_error_with_tessera_message_and_exit_code(tmp_path):
    out = tmp_path / "never"
    with pytest.raises(tessera.TesseraError) as e:
        tessera.run(ARCH, MLP1, overrides={"array.dataflow": "diagonal"}, out=out)
    err = e.value
    assert err.returncode == 2
    assert err.message == f"{ARCH} + overrides: array.dataflow: 'diagonal' is not one of: ws, os, is"
    assert str(err) == err.message
    assert err.stderr.startswith("tessera: error: ") and "array.dataflow" in err.stderr
    assert err.command[1] == "run"
    assert not out.exists()  # no partial results


def test_unknown_key_names_the_key():
    with pytest.raises(tessera.TesseraError) as e:
        tessera.run(ARCH, MLP1, overrides={"array.rowz": 64})
    assert e.value.returncode == 2
    assert "array.rowz: unknown key; allowed here: count, rows, cols" in e.value.message


def test_error_in_a_file_names_file_line_and_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(open(ARCH).read().replace("  rows: 256 ", "  rows: -3  "))
    with pytest.raises(tessera.TesseraError) as e:
        tessera.run(bad, MLP1)
    assert e.value.returncode == 2
    assert e.value.message.startswith(f"{bad}:10:")
    assert "array.rows" in e.value.message


def test_errors_of_dicts_name_the_dict_and_layer():
    with pytest.raises(tessera.TesseraError) as e:
        tessera.run({"name": "half"}, MLP1)
    assert e.value.returncode == 2 and e.value.message.startswith("<arch dict 'half'>: ")
    wl = tessera.load_workload(MLP1, {"layers.1.op": "fft"})
    with pytest.raises(tessera.TesseraError) as e:
        tessera.run(ARCH, wl)
    assert e.value.message.startswith("<workload dict 'mlp1'>: ") and "fc2" in e.value.message
    assert "/tmp" not in e.value.message


def test_missing_workload_and_bad_option():
    with pytest.raises(tessera.TesseraError) as e:
        tessera.run(ARCH, "no/such/workload.yaml")
    assert e.value.returncode == 2 and "no/such/workload.yaml" in e.value.message
    assert "Run with --help" not in e.value.message
    with pytest.raises(tessera.TesseraError) as e:
        tessera.run(ARCH, MLP1, precision="int4")
    assert e.value.returncode == 2 and e.value.message.startswith("--precision 'int4': int4 is for weights only")


def test_set_path_and_get_path():
    d = {"array": {"rows": 256, "mac_modes": [{"rate": 1.0}, {"rate": 0.5}]}}
    assert tessera.set_path(d, "array.rows", 64) is d and d["array"]["rows"] == 64
    tessera.set_path(d, "array.mac_modes.1.rate", 0.25)
    assert tessera.get_path(d, "array.mac_modes.1.rate") == 0.25
    tessera.set_path(d, "controller.queue_depth", 4)  # a section the dict leaves out is created
    assert d["controller"] == {"queue_depth": 4}
    assert tessera.get_path(d, "array.cols", None) is None
    with pytest.raises(KeyError, match="array.cols: no such key"):
        tessera.get_path(d, "array.cols")
    with pytest.raises(KeyError, match="index 5 is out of range"):
        tessera.set_path(d, "array.mac_modes.5.rate", 1)
    with pytest.raises(KeyError, match="not a mapping or a list"):
        tessera.set_path(d, "array.rows.x", 1)
    with pytest.raises(KeyError, match="not a dotted key"):
        tessera.set_path(d, "array..rows", 1)
    copy = tessera.apply_overrides(d, {"array.rows": 8})
    assert copy["array"]["rows"] == 8 and d["array"]["rows"] == 64


def test_negative_and_malformed_indices_raise_keyerror():
    """Issue 34 item 6: 'array.mac_modes.-1.rate' silently changed the last mode (Python's
    indexing); docs/python.md promises a numeric component indexes an existing entry."""
    arch = tessera.load_arch(os.path.join(ROOT, "configs", "tpu-v1.yaml"))
    modes = arch["array"]["mac_modes"]
    with pytest.raises(KeyError, match="index -1 is negative"):
        tessera.load_arch(os.path.join(ROOT, "configs", "tpu-v1.yaml"), {"array.mac_modes.-1.rate": 0.5})
    d = {"array": {"mac_modes": [{"rate": 1.0}, {"rate": 0.5}]}}
    # Variants: every negative spelling, get_path too, and components int() accepted loosely.
    for part in ["-1", "-2", "-0", "-3"]:
        with pytest.raises(KeyError):
            tessera.set_path(d, f"array.mac_modes.{part}.rate", 9)
    for part in [" 1", "+1", "1_0", "١", "0x1"]:
        with pytest.raises(KeyError, match="must be a number"):
            tessera.set_path(d, f"array.mac_modes.{part}.rate", 9)
    with pytest.raises(KeyError, match="negative"):
        tessera.get_path(d, "array.mac_modes.-1.rate")
    with pytest.raises(KeyError, match="negative"):
        tessera.set_path(d, ["array", "mac_modes", -1, "rate"], 9)
    with pytest.raises(KeyError):
        tessera.set_path(d, ["array", "mac_modes", True, "rate"], 9)
    assert d == {"array": {"mac_modes": [{"rate": 1.0}, {"rate": 0.5}]}}  # nothing changed
    assert tessera.get_path(d, "array.mac_modes.-1.rate", "absent") == "absent"
    assert tessera.load_arch(os.path.join(ROOT, "configs", "tpu-v1.yaml"))["array"]["mac_modes"] == modes


def test_bad_yaml_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("array: [1, 2\n")
    with pytest.raises(tessera.TesseraError, match=r"bad.yaml:2:1: not valid YAML"):
        tessera.load_arch(bad)


def test_executable_from_env_and_a_clear_error_when_missing(monkeypatch, tmp_path):
    monkeypatch.delenv("TESSERA_BIN", raising=False)
    default = os.path.join(ROOT, "build", "tessera")
    if os.path.isfile(default):
        assert tessera.binary() == default
    monkeypatch.setenv("TESSERA_BIN", str(tmp_path / "nothing"))
    with pytest.raises(tessera.TesseraNotFoundError) as e:
        tessera.run(ARCH, MLP1)
    assert isinstance(e.value, tessera.TesseraError) and isinstance(e.value, FileNotFoundError)
    assert e.value.returncode is None
    assert f"TESSERA_BIN={tmp_path / 'nothing'} does not exist" in e.value.message
