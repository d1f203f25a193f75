"""Tests of bench/gpu_baseline_check.py's pure parts (no GPU, no tessera binary)."""
import os
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_baseline_check as check  # noqa: E402


def test_gemm_workload_is_one_fc_layer_of_the_measured_shape():
    w = yaml.safe_load(check.gemm_yaml(64, 4096, 11008, "int8"))
    assert w["batch"] == 64
    assert w["inputs"] == [{"name": "x", "shape": [4096]}]
    assert w["layers"] == [{"name": "gemm", "op": "fc", "input": "x", "units": 11008}]


def test_each_measured_model_maps_to_its_workload_and_bindings():
    assert check.model_run({"name": "resnet50", "batch": 64}) == ("resnet50, batch 64", "resnet50", ["--batch", "64"])
    assert check.model_run({"name": "bert_base", "batch": 32, "sequence": 128})[2] == ["--input-shape", "input_ids=32,128"]
    assert check.model_run({"name": "llama2_7b_prefill", "tokens": 2048})[2] == ["--input-shape", "input_ids=1,2048"]
    assert check.model_run({"name": "llama2_7b_decode", "past": 512})[2] == [
        "--input-shape", "sequence=1", "--input-shape", "past=512"]


def test_dominant_bound_is_the_one_with_most_time():
    layers = [{"bound": "compute", "latency_s": 3.0}, {"bound": "overhead", "latency_s": 2.0},
              {"bound": "overhead", "latency_s": 2.0}]
    assert check.dominant(layers) == "overhead"


def test_update_rewrites_only_the_marked_block(tmp_path):
    doc = tmp_path / "d.md"
    doc.write_text("a\n%s\nold\n%s\nb\n" % (check.BEGIN, check.END))
    check.update(str(doc), "new\n")
    assert doc.read_text() == "a\n%s\nnew\n%s\nb\n" % (check.BEGIN, check.END)


def test_markdown_ratios_are_predicted_over_measured():
    measured = {"env": {"device": "cuda", "gpu": "G", "memory_gib": 1, "sms": 2, "torch": "t", "date": "d",
                        "repeat": 3}, "micro": {"small_kernel_us": 5.0, "copy_gb_per_s": 100.0}, "_file": "f.json"}
    gemms = [dict(m=512, k=4096, n=4096, precision="bf16", measured_us=100.0, predicted_us=80.0, predicted_eff=0.5,
                  measured_tops=400.0, peak_tops=1000.0)]
    models = [dict(label="net", measured_eager_ms=4.0, measured_graph_ms=2.0, predicted_ms=3.0, kernel_ms=2.5,
                   overhead_ms=0.5, bound="compute", accelerator_ms=9.0, macs=1)]
    text = check.markdown(measured, "spec", "a.yaml", gemms, models)
    assert "| net | 2.000 ms | 4.000 ms | 3.000 ms | 0.500 ms | 1.50 | 0.75 | compute | 9.000 ms |" in text
    assert "| 512 | 4096 x 4096 | 100.0 us | 80.0 us | 0.80 | 40% | 50% |" in text
    assert "median 0.80, range 0.80-0.80" in text
