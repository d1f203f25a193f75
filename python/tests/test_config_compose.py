"""Config composition in Python (tessera.load_arch): `base:` chains merged by the same rules as
Tessera's (docs/configs.md, "Composition"), with the same errors; hand-written files.

Run: /usr/bin/python3 -m pytest -q python/tests/test_config_compose.py
"""
import os

import pytest

import tessera

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
V1 = os.path.join(ROOT, "configs", "tpu-v1.yaml")
HBM = os.path.join(ROOT, "configs", "tpu-v1-hbm.yaml")
MLP1 = os.path.join(ROOT, "workloads", "tpu", "mlp1.yaml")

BASE = """name: base
clock_mhz: 700
array:
  rows: 16
  cols: 8
  mac_modes:
    - {a: int8, b: int8, rate: 1.0}
    - {a: int16, b: int16, rate: 0.25}
controller:
  queue_depth: 8
"""


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_scalars_and_lists_replace_maps_merge_null_removes(tmp_path):
    write(tmp_path / "base.yaml", BASE)
    top = write(tmp_path / "top.yaml", "base: base.yaml\nname: top\narray:\n  rows: 32\n  double_buffered: false\n"
                                       "  mac_modes:\n    - {a: int8, b: int8, rate: 0.5}\ncontroller: ~\n")
    d = tessera.load_arch(top)
    assert d == {"name": "top", "clock_mhz": 700,
                 "array": {"rows": 32, "cols": 8, "mac_modes": [{"a": "int8", "b": "int8", "rate": 0.5}],
                           "double_buffered": False}}
    # Key order: the base's, then new keys (as Tessera's composed tree).
    assert list(d["array"]) == ["rows", "cols", "mac_modes", "double_buffered"]
    # Overrides apply to the composed dict.
    assert tessera.load_arch(top, {"array.cols": 4})["array"] == {**d["array"], "cols": 4}


def test_chain_of_three_relative_to_each_file(tmp_path):
    write(tmp_path / "chips" / "a.yaml", BASE)
    write(tmp_path / "chips" / "b.yaml", "base: a.yaml\nclock_mhz: 940\n")
    c = write(tmp_path / "variants" / "c.yaml", "base: ../chips/b.yaml\nname: c\narray: {cols: 4}\n")
    d = tessera.load_arch(c)
    assert (d["name"], d["clock_mhz"], d["array"]["rows"], d["array"]["cols"]) == ("c", 940, 16, 4)
    assert "base" not in d


def test_cycles_and_missing_base_are_errors_with_the_location(tmp_path):
    a = write(tmp_path / "a.yaml", "base: b.yaml\n")
    b = write(tmp_path / "b.yaml", "name: b\nbase: a.yaml\n")
    with pytest.raises(tessera.TesseraError) as e:
        tessera.load_arch(a)
    assert e.value.message == f"{b}:2:7: base: config bases form a cycle: {a} -> {b} -> {a}"
    self_ = write(tmp_path / "self.yaml", "base: self.yaml\n")
    with pytest.raises(tessera.TesseraError, match="config bases form a cycle"):
        tessera.load_arch(self_)
    v = write(tmp_path / "v.yaml", "# variant\nbase: nope.yaml\n")
    with pytest.raises(tessera.TesseraError) as e:
        tessera.load_arch(v)
    assert e.value.message == f"{v}:2:7: base: no such config file '{tmp_path / 'nope.yaml'}'"


def test_chain_longer_than_sixteen_files(tmp_path):
    write(tmp_path / "f0.yaml", BASE)
    for i in range(1, 17):
        write(tmp_path / f"f{i}.yaml", f"base: f{i - 1}.yaml\n")
    assert tessera.load_arch(tmp_path / "f15.yaml")["name"] == "base"
    with pytest.raises(tessera.TesseraError, match="may hold at most 16 files"):
        tessera.load_arch(tmp_path / "f16.yaml")


def test_shipped_variant_composes_to_tpu_v1_with_hbm():
    v1, hbm = tessera.load_arch(V1), tessera.load_arch(HBM)
    assert hbm["name"] == "tpu-v1-hbm" and hbm["weight_memory"]["technology"] == "HBM2-PC"
    assert "row_bytes" not in hbm["energy"]["dram"]  # removed with `row_bytes: ~`: the HBM2 default applies
    assert {k: v for k, v in hbm.items() if k not in ("name", "weight_memory", "energy")} == \
        {k: v for k, v in v1.items() if k not in ("name", "weight_memory", "energy")}


def test_run_path_composes_with_and_without_overrides():
    # Without overrides Tessera reads the file (and composes it); with them Python composes and
    # writes one self-contained config. Both give the same run.
    direct = tessera.run(HBM, MLP1, batch=8)
    via_python = tessera.run(HBM, MLP1, batch=8, overrides={"clock_mhz": 700})
    assert direct.report["arch"]["name"] == "tpu-v1-hbm"
    assert via_python.summary == direct.summary
    assert tessera.run(tessera.load_arch(HBM), MLP1, batch=8).summary == direct.summary
