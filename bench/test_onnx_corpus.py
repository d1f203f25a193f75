"""Tests of bench/onnx_corpus.py that need neither the network nor Tessera: the corpus pins, how a
first error line is shortened and classified, exporter labels, state-input and reverse-slice
detection, and the Markdown it writes.

Run: /usr/bin/python3 -m pytest -q bench
"""
import os
import pathlib
import re
import sys
import tarfile
import io
import json

import pytest

onnx = pytest.importorskip("onnx")
np = pytest.importorskip("numpy")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import onnx_corpus as oc  # noqa: E402


def test_corpus_is_pinned_and_distinct():
    keys = [m.key for m in oc.CORPUS]
    assert len(keys) == len(set(keys))
    assert len({m.sha256 for m in oc.CORPUS}) == len(oc.CORPUS)     # no file twice
    for m in oc.CORPUS:
        assert re.fullmatch(r"\d+\.\d+\.\d+", m.version), m.key       # an exact version
        assert re.fullmatch(r"[0-9a-f]{64}", m.sha256), m.key
        for dims in m.shapes.values():
            assert all(isinstance(d, int) and d > 0 for d in dims)
    # at least 10 distinct networks
    assert len({m.net for m in oc.CORPUS}) >= 10


def test_cache_slug_and_default(monkeypatch, tmp_path):
    assert oc.slug("@ricky0123/vad-web", "0.0.31") == "ricky0123-vad-web-0.0.31"
    monkeypatch.setenv("TESSERA_CORPUS_CACHE", str(tmp_path))
    assert oc.default_cache() == tmp_path
    monkeypatch.delenv("TESSERA_CORPUS_CACHE")
    assert oc.default_cache() == pathlib.Path.home() / ".cache/tessera-corpus"


def _tiny_model_bytes():
    n = helper.make_node("MatMul", ["x", "w"], ["y"])
    g = helper.make_graph([n], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.zeros([4, 2], np.float32), "w")])
    return helper.make_model(g).SerializeToString()


def _add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def test_extract_plain_and_chunked_from_a_cached_tarball(tmp_path):
    data = _tiny_model_bytes()
    half = len(data) // 2
    resources = {"/models/small": {"size": len(data), "chunks": [
        {"hash": "aaa", "offsets": [0, half]}, {"hash": "bbb", "offsets": [half, len(data)]}]}}
    (tmp_path / "tarballs").mkdir()
    with tarfile.open(tmp_path / "tarballs" / "x-pkg-1.0.0.tgz", "w:gz") as tar:
        _add(tar, "package/models/m.onnx", data)
        _add(tar, "package/dist/resources.json", json.dumps(resources).encode())
        _add(tar, "package/dist/aaa", data[:half])
        _add(tar, "package/dist/bbb", data[half:])
    digest = oc.sha256(data)
    plain = oc.Model("m", "net", "what", "@x/pkg", "1.0.0", "models/m.onnx", digest, {})
    chunked = oc.Model("c", "net", "what", "@x/pkg", "1.0.0", "dist/resources.json#/models/small", digest, {})
    for m in (plain, chunked):
        p = oc.extract_model(m, tmp_path, log=lambda s: None)
        assert p.read_bytes() == data and tmp_path in p.parents
    bad = oc.Model("b", "net", "what", "@x/pkg", "1.0.0", "models/m.onnx", "0" * 64, {})
    with pytest.raises(SystemExit, match="pinned"):
        oc.extract_model(bad, tmp_path, log=lambda s: None)


def test_first_error_and_causes():
    text = ("tessera: error: /c/m.onnx: 2 node(s) cannot be imported: 'Log_17' (Log); 'q' "
            "(DynamicQuantizeLinear). Supported ops: Add, Conv, and constant folding of shape computations\n")
    line = oc.first_error(text, pathlib.Path("/c/m.onnx"))
    assert line == "2 node(s) cannot be imported: 'Log_17' (Log); 'q' (DynamicQuantizeLinear)."
    assert oc.error_causes(line) == ["op Log", "quantized op DynamicQuantizeLinear"]
    assert oc.error_causes("1 node(s) cannot be imported: 'c' (Conv: 3-D convolution (1-D and 2-D are supported))") \
        == ["op Conv"]
    assert oc.error_causes("graph inputs disagree on the batch: 'input' has 1, 'state' has 2") == \
        ["state input whose batch axis is not dimension 0"]
    fit = ("workload 'w' does not fit the unified buffer of 'edge-npu-32' (524288 bytes): layer 'p2o.Resize.1' "
           "(resize) needs 768000 bytes")
    assert oc.error_causes(fit) == ["compiler: a resize layer too big for edge-npu-32's unified buffer (not row-tiled)"]
    tile = ("workload 'w' does not fit the unified buffer of 'edge-npu-32' (524288 bytes): layer 'input/to_nhwc' "
            "(transpose) needs 3145731 bytes for its smallest tile (one output row and the input rows it reads)")
    assert oc.error_causes(tile) == ["compiler: a transpose layer too big for edge-npu-32's unified buffer (even one row tile)"]
    assert oc.error_causes("something else entirely")[0].startswith("other: ")


def _m(producer="", version="", doc="", inputs=(("x", [1, 4]),), nodes=None, opset=13, inits=()):
    nodes = nodes or [helper.make_node("Relu", ["x"], ["y"], name="r")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, d) for n, d in inputs],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name=producer,
                          producer_version=version)
    m.doc_string = doc
    return m


def test_exporter_labels():
    assert oc.exporter(_m("pytorch", "1.12.0")) == "PyTorch 1.12.0"
    dyn = _m("pytorch", "2.9.0", nodes=[helper.make_node("Relu", ["x"], ["y"], name="node_relu")])
    assert oc.exporter(dyn) == "PyTorch 2.9.0 (dynamo)"
    assert oc.exporter(_m("tf2onnx", "1.12.1 b6d590")) == "tf2onnx 1.12.1"
    assert oc.exporter(_m("onnx.quantize", "0.1.0")).startswith("onnxruntime quantizer")
    assert oc.exporter(_m("spox")) == "Spox"
    assert oc.exporter(_m(doc="Model from PaddlePaddle.")) == "paddle2onnx (no producer_name)"
    assert oc.exporter(_m(inputs=(("x", ["p2o.DynamicDimension.0", 4]),))).startswith("paddle2onnx")


def test_state_inputs_and_reverse_slices(tmp_path):
    m = _m("pytorch", "2.3.1", inputs=(("input", ["batch", 512]), ("state", [2, "batch", 128]), ("sr", [])))
    p = tmp_path / "m.onnx"
    onnx.save(m, str(p))
    info = oc.describe(p)
    assert oc.state_inputs(info) == ["state"]
    I = lambda n, v: numpy_helper.from_array(np.array(v, np.int64), n)
    flip = _m(nodes=[helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"], name="flip")],
              inits=[I("s", [-1]), I("e", [-9223372036854775807]), I("a", [1]), I("st", [-1])])
    assert oc.reverse_slices(flip) == ["flip"]


def test_static_blockers():
    info = {"ops": {"If": 1, "Conv": 2}, "inputs": [("input", [1, 512]), ("state", [2, "batch", 128])],
            "reverse_slices": []}
    macs = {"control_left": {}, "control_left_without_values": {"If": 1}, "ops_after_folding": ["Conv", "Log"]}
    got = oc.static_blockers(info, macs, {"Conv", "Relu"})
    assert got == ["If (control flow): folds once a scalar input is bound by value", "op Log",
                   "state input whose batch axis is not dimension 0"]
    macs = {"control_left": {"If": 1}, "control_left_without_values": {"If": 1}, "ops_after_folding": ["If"]}
    assert oc.static_blockers({"ops": {"If": 1}, "inputs": []}, macs, set()) == ["If (control flow): data-dependent"]
    macs = {"control_left": {}, "control_left_without_values": {}, "ops_after_folding": ["Slice"],
            "reverse_slices": ["flip"]}
    assert oc.static_blockers({"ops": {"Slice": 1}, "inputs": []}, macs, {"Slice"}) == \
        ["Slice of an activation with step -1 through index 0 (PyTorch's flip)"]


def _row(key, runs, total, blockers=(), values=None):
    m = oc.Model(key, key + " net", "what", "@p/k", "1.0.0", "m.onnx", "0" * 64, {"x": [1, 4]}, values or {})
    return {"model": m, "info": {"exporter": "PyTorch 2.0.1", "opset": 17, "params": 12345, "bytes": 2_500_000},
            "runs": runs,
            "macs": {"total": total, "unresolved": []}, "blockers": list(blockers)}


def test_render():
    ok = {"rc": 0, "macs": 100, "latency_s": 2.5e-6}
    bad = {"rc": 2, "error": "1 node(s) cannot be imported: 'l' (Log)."}
    rows = [_row("a", {"tpu-v1": ok, "edge-npu-32": ok}, 100),
            _row("b", {"tpu-v1": bad, "edge-npu-32": bad}, 50, ["op Log", "state input whose batch axis is not dimension 0"],
                 {"sr": 16000})]
    text = oc.document(rows, oc.CONFIGS, has_input_value=False)
    assert "| a | @p/k@1.0.0: `m.onnx` | PyTorch 2.0.1, 17 | `x` 1×4 | ok | ok | 100 | 100 | exact | 2.5 µs | 2.5 µs |" in text
    assert "2 files, 2 distinct networks, from 1 exporters (PyTorch)" in text
    assert "| a | a net | what | 12,345 | 2.50 MB |" in text
    assert "| b |" in text and "exit 2: op Log" in text
    assert "`sr` = 16000" in text and "no `--input-value` yet" in text
    assert "- `b` (tpu-v1, edge-npu-32): exit 2: 1 node(s) cannot be imported: 'l' (Log)." in text
    assert "1 of 2 files run on both configs, 1 on at least one" in text
    assert "2 of 2 runs" in text
    assert "| 1 | op Log | 1 | b |" in text
    assert "| 2 | state input whose batch axis is not dimension 0 | 1 | b |" in text
    assert oc.document(rows, oc.CONFIGS, has_input_value=True).count("--input-value") == 0


def test_update_doc(tmp_path):
    doc = tmp_path / "d.md"
    doc.write_text(f"head\n{oc.BEGIN}\nold\n{oc.END}\ntail\n")
    oc.update_doc(doc, "new\n")
    assert doc.read_text() == f"head\n{oc.BEGIN}\nnew\n\n{oc.END}\ntail\n"
    doc.write_text("no markers")
    with pytest.raises(SystemExit):
        oc.update_doc(doc, "x")


def test_cache_inside_the_repository_is_refused():
    with pytest.raises(SystemExit, match="outside the repository"):
        oc.main(["--cache", str(oc.ROOT / "cache"), "--fetch-only"])


def test_list_needs_no_network(capsys):
    assert oc.main(["--list"]) == 0
    out = capsys.readouterr().out
    assert "@ricky0123/vad-web@0.0.31" in out and len(out.splitlines()) == len(oc.CORPUS)
