"""Tests for workloads/onnx/generate_models.py (Debian's python3-onnx).

Run: /usr/bin/python3 -m pytest workloads/onnx
"""

import os
import subprocess
import sys

import pytest

onnx = pytest.importorskip("onnx")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import generate_models as gen  # noqa: E402

# Published MACs per sample (see docs/workloads.md) and the tolerance of our graphs to them.
PUBLISHED = {
    "resnet50": (4.09e9, 0.01),      # torchvision model card (v1.5)
    "mobilenet_v2": (300e6, 0.01),   # Sandler et al. 2018, Table 4
    "bert_base": (11.2e9, 0.02),     # 12 x (12 S H^2 + 2 S^2 H) at S = 128
    "gpt2_prefill": (11.06e9, 0.02),  # Kaplan et al. 2020: N + n_layer n_ctx d per token, + LM head
    "gpt2_decode": (124.7e6, 0.02),
    "vit_b16": (17.6e9, 0.01),       # timm model card vit_base_patch16_224: 17.6 GMACs
    # Darknet's YOLO table (pjreddie.com/darknet/yolo): YOLOv3-tiny 5.56 Bn FLOPS at 416x416,
    # darknet counting 2 FLOPs per conv MAC (and nothing for pools, upsample or the YOLO layers).
    "yolov3_tiny": (5.56e9 / 2, 0.01),
    # Llama-2-7B: HF meta-llama/Llama-2-7b-hf has 6,738,415,616 parameters; per token a
    # forward pass costs one MAC per weight but the embedding table (32000 x 4096, a
    # lookup), plus QK^T and AV: 2 x 32 layers x 4096 x ctx. Decode: ctx 513; prefill of 512
    # tokens: every token through the layers (ctx 512 each, no causal saving), the LM head
    # (32000 x 4096) for the last token only.
    "llama2_7b_decode": (6738415616 - 32000 * 4096 + 2 * 32 * 4096 * 513, 0.001),
    "llama2_7b_prefill": (512 * (6738415616 - 2 * 32000 * 4096 + 2 * 32 * 4096 * 512) + 32000 * 4096, 0.001),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_macs_match_published(name):
    b, _ = gen.MODELS[name](None)
    want, tol = PUBLISHED[name]
    assert abs(b.macs - want) <= tol * want, (name, b.macs)


def test_writes_valid_sparse_models(tmp_path):
    out = subprocess.run([sys.executable, os.path.join(HERE, "generate_models.py"), "--out", str(tmp_path),
                          "lstm_seq2seq", "resnet50"], capture_output=True, text=True, check=True).stdout
    assert "resnet50.onnx: 175 nodes" in out
    for name in ("lstm_seq2seq", "resnet50"):
        path = tmp_path / (name + ".onnx")
        onnx.checker.check_model(str(path))  # external data included
        m = onnx.load(str(path), load_external_data=False)
        assert len(m.graph.value_info) > 5  # ONNX shape inference recorded
        data = tmp_path / (name + ".onnx.data")
        st = os.stat(data)
        assert st.st_size > 10_000_000
        assert st.st_blocks * 512 < st.st_size / 10  # sparse: the zeros take no disk


def test_list_writes_nothing(tmp_path):
    out = subprocess.run([sys.executable, os.path.join(HERE, "generate_models.py"), "--list", "--out",
                          str(tmp_path / "x")], capture_output=True, text=True, check=True).stdout
    assert "bert_base" in out and "11174215680" in out
    assert not (tmp_path / "x").exists()
