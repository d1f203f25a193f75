"""Tests of bench/onnx_macs.py, the independent MAC counter, on hand-built tiny models whose MACs
are worked out by hand below. No network, no Tessera.

Run: /usr/bin/python3 -m pytest -q bench
"""
import os
import sys

import pytest

onnx = pytest.importorskip("onnx")
np = pytest.importorskip("numpy")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import onnx_macs as om  # noqa: E402

F = TensorProto.FLOAT


def W(name, shape, dtype=np.float32):
    return numpy_helper.from_array(np.zeros(shape, dtype=dtype), name)


def C(name, value, dtype=np.int64):
    return numpy_helper.from_array(np.array(value, dtype=dtype), name)


def model(nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, "t", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def vi(name, shape, dtype=F):
    return helper.make_tensor_value_info(name, dtype, shape)


def test_conv_groups_strides_pads_dilations():
    # x [1, 8, 10, 10], 16 filters, 3x3, group 2, stride 2, pad 1, dilation 1:
    # out 5x5; MACs = 1 * 25 * 16 * (8/2) * 9 = 14,400
    n = helper.make_node("Conv", ["x", "w"], ["y"], group=2, strides=[2, 2], pads=[1, 1, 1, 1])
    m = model([n], [vi("x", [1, 8, 10, 10])], [vi("y", None)], [W("w", [16, 4, 3, 3])])
    assert om.count_macs(m).total == 14_400
    # dilation 2, no pad: effective kernel 5 -> out 6x6: 36 * 16 * 4 * 9 = 20,736
    n = helper.make_node("Conv", ["x", "w"], ["y"], group=2, dilations=[2, 2])
    m = model([n], [vi("x", [1, 8, 10, 10])], [vi("y", None)], [W("w", [16, 4, 3, 3])])
    assert om.count_macs(m).total == 20_736


def test_conv1d_and_depthwise():
    # STFT-style 1-D conv: x [1, 1, 576], w [258, 1, 256], stride 128 -> 3 frames:
    # 3 * 258 * 256 = 198,144 (Silero VAD v5's first layer)
    n = helper.make_node("Conv", ["x", "w"], ["y"], strides=[128])
    m = model([n], [vi("x", [1, 1, 576])], [vi("y", None)], [W("w", [258, 1, 256])])
    assert om.count_macs(m).total == 198_144
    # depthwise 3x3 on 32 channels, 7x7 'same': 49 * 32 * 1 * 9 = 14,112
    n = helper.make_node("Conv", ["x", "w"], ["y"], group=32, pads=[1, 1, 1, 1])
    m = model([n], [vi("x", [1, 32, 7, 7])], [vi("y", None)], [W("w", [32, 1, 3, 3])])
    assert om.count_macs(m).total == 14_112


def test_conv_transpose():
    # x [1, 4, 5, 5], w [4, 6, 2, 2], stride 2: every input pixel x C_in x k x C_out
    # = 25 * 4 * 4 * 6 = 2,400
    n = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2])
    m = model([n], [vi("x", [1, 4, 5, 5])], [vi("y", None)], [W("w", [4, 6, 2, 2])])
    assert om.count_macs(m).total == 2_400


def test_matmul_broadcast_and_vectors():
    # [2, 3, 4, 5] x [5, 6] -> 2*3 * 4*5*6 = 720
    n = helper.make_node("MatMul", ["a", "b"], ["y"])
    m = model([n], [vi("a", [2, 3, 4, 5])], [vi("y", None)], [W("b", [5, 6])])
    assert om.count_macs(m).total == 720
    # attention scores: [1, 12, 128, 64] x [1, 12, 64, 128] -> 12 * 128 * 64 * 128
    n = helper.make_node("MatMul", ["q", "k"], ["y"])
    m = model([n], [vi("q", [1, 12, 128, 64]), vi("k", [1, 12, 64, 128])], [vi("y", None)])
    assert om.count_macs(m).total == 12 * 128 * 64 * 128
    # vector x matrix: [5] x [5, 7] -> 35
    n = helper.make_node("MatMul", ["a", "b"], ["y"])
    m = model([n], [vi("a", [5])], [vi("y", None)], [W("b", [5, 7])])
    assert om.count_macs(m).total == 35


def test_gemm_transposes():
    # A [3, 10] (transA: stored [10, 3]), B stored [7, 10] with transB: 3 * 10 * 7 = 210
    n = helper.make_node("Gemm", ["a", "b", "c"], ["y"], transA=1, transB=1)
    m = model([n], [vi("a", [10, 3])], [vi("y", None)], [W("b", [7, 10]), W("c", [7])])
    assert om.count_macs(m).total == 210


def test_lstm_gru_rnn():
    # bidirectional LSTM, T=5, N=1, I=16, H=32: 2 * 5 * 4*32 * (16+32) = 61,440
    n = helper.make_node("LSTM", ["x", "w", "r"], ["y"], hidden_size=32, direction="bidirectional")
    m = model([n], [vi("x", [5, 1, 16])], [vi("y", None)], [W("w", [2, 128, 16]), W("r", [2, 128, 32])])
    assert om.count_macs(m).total == 61_440
    # GRU with layout=1 (batch first): x [2, 7, 8], H = 4: 1 * 7 * 2 * 3*4 * (8+4) = 2,016
    n = helper.make_node("GRU", ["x", "w", "r"], ["y"], hidden_size=4, layout=1)
    m = model([n], [vi("x", [2, 7, 8])], [vi("y", None)], [W("w", [1, 12, 8]), W("r", [1, 12, 4])],
              opset=14)
    assert om.count_macs(m).total == 2_016
    # RNN: T=3, N=1, I=2, H=5: 3 * 5 * 7 = 105
    n = helper.make_node("RNN", ["x", "w", "r"], ["y"], hidden_size=5)
    m = model([n], [vi("x", [3, 1, 2])], [vi("y", None)], [W("w", [1, 5, 2]), W("r", [1, 5, 5])])
    assert om.count_macs(m).total == 105


def test_einsum():
    # 'bhid,bhjd->bhij' with b=1 h=2 i=3 j=4 d=5: 1*2*3*4*5 = 120
    n = helper.make_node("Einsum", ["q", "k"], ["y"], equation="bhid,bhjd->bhij")
    m = model([n], [vi("q", [1, 2, 3, 5]), vi("k", [1, 2, 4, 5])], [vi("y", None)], opset=12)
    assert om.count_macs(m).total == 120
    # an element-wise einsum has no accumulation
    n = helper.make_node("Einsum", ["q", "k"], ["y"], equation="ij,ij->ij")
    m = model([n], [vi("q", [3, 4]), vi("k", [3, 4])], [vi("y", None)], opset=12)
    assert om.count_macs(m).total == 0


def test_quantized_ops():
    u8 = np.uint8
    s = lambda n: numpy_helper.from_array(np.array(0.1, np.float32), n)
    z = lambda n: numpy_helper.from_array(np.array(0, u8), n)
    # QLinearConv: same as Conv; x [1, 3, 8, 8], w [4, 3, 3, 3], valid -> 6x6: 36 * 4 * 27 = 3,888
    n = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"])
    m = model([n], [vi("x", [1, 3, 8, 8], TensorProto.UINT8)], [vi("y", None, TensorProto.UINT8)],
              [s("xs"), z("xz"), W("w", [4, 3, 3, 3], u8), s("ws"), z("wz"), s("ys"), z("yz")])
    assert om.count_macs(m).total == 3_888
    # ConvInteger: the same shapes
    n = helper.make_node("ConvInteger", ["x", "w"], ["y"])
    m = model([n], [vi("x", [1, 3, 8, 8], TensorProto.UINT8)], [vi("y", None, TensorProto.INT32)],
              [W("w", [4, 3, 3, 3], u8)])
    r = om.count_macs(m)
    assert r.total == 3_888 and r.by_op["ConvInteger"] == 3_888
    # QLinearMatMul [2, 6] x [6, 5] = 60; MatMulInteger the same
    n = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    m = model([n], [vi("a", [2, 6], TensorProto.UINT8)], [vi("y", None, TensorProto.UINT8)],
              [s("as"), z("az"), W("b", [6, 5], u8), s("bs"), z("bz"), s("ys"), z("yz")])
    assert om.count_macs(m).total == 60
    n = helper.make_node("MatMulInteger", ["a", "b"], ["y"])
    m = model([n], [vi("a", [2, 6], TensorProto.UINT8)], [vi("y", None, TensorProto.INT32)],
              [W("b", [6, 5], u8)])
    assert om.count_macs(m).total == 60


def test_dynamic_dims_bound_and_unbound():
    # x ['batch', 'seq', 16] x [16, 8]: batch defaults to 1, seq must be bound
    n = helper.make_node("MatMul", ["x", "w"], ["y"])
    m = model([n], [vi("x", ["batch", "seq", 16])], [vi("y", None)], [W("w", [16, 8])])
    with pytest.raises(om.CounterError, match="'x' dim 1 \\('seq'\\)"):
        om.count_macs(m)
    assert om.count_macs(m, dims={"seq": 10}).total == 10 * 16 * 8
    assert om.count_macs(m, shapes={"x": [2, 10, 16]}).total == 2 * 10 * 16 * 8
    # binding one input binds its named dims in the others
    n2 = helper.make_node("MatMul", ["h", "w"], ["z"])
    m = model([n, n2], [vi("x", ["batch", "seq", 16]), vi("h", [2, "batch", 16])],
              [vi("y", None), vi("z", None)], [W("w", [16, 8])])
    assert om.count_macs(m, shapes={"x": [3, 10, 16]}).total == 3 * 10 * 128 + 2 * 3 * 128
    # unnamed dynamic dims (dim_param ''), as spox writes them, need a whole-input binding
    m = model([n], [vi("x", ["", "", 16])], [vi("y", None)], [W("w", [16, 8])])
    with pytest.raises(om.CounterError, match="unbound"):
        om.count_macs(m)
    assert om.count_macs(m, shapes={"x": [1, 4, 16]}).total == 4 * 128
    with pytest.raises(om.CounterError, match="no such graph input"):
        om.count_macs(m, shapes={"x": [1, 4, 16], "nope": [1]})


def _branch(name, with_matmul, k=16, n=8):
    if with_matmul:
        node = helper.make_node("MatMul", ["x", name + "_w"], [name + "_y"])
        return helper.make_graph([node], name, [], [vi(name + "_y", None)], initializer=[W(name + "_w", [k, n])])
    node = helper.make_node("Identity", ["x"], [name + "_y"])
    return helper.make_graph([node], name, [], [vi(name + "_y", None)])


def test_if_folded_from_shapes():
    # PyTorch's squeeze(dim): If(Equal(Gather(Shape(x), 1), 1)) -> then: MatMul, else: Identity.
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "one"], ["d"], axis=0),
        helper.make_node("Equal", ["d", "one"], ["cond"]),
        helper.make_node("If", ["cond"], ["y"], then_branch=_branch("then", True),
                         else_branch=_branch("else", False)),
    ]
    m = model(nodes, [vi("x", ["batch", "seq", 16])], [vi("y", None)], [C("one", 1)])
    r = om.count_macs(m, dims={"seq": 1})
    assert r.total == 16 * 8 and r.folded_ifs == 1 and not r.notes
    r = om.count_macs(m, dims={"seq": 4})
    assert r.total == 0 and r.folded_ifs == 1


def test_if_folded_from_an_input_value():
    # Silero VAD's sample-rate switch: If(Equal(sr, 16000)) with different networks per branch
    nodes = [
        helper.make_node("Equal", ["sr", "k16"], ["cond"]),
        helper.make_node("If", ["cond"], ["y"], then_branch=_branch("then", True, 16, 8),
                         else_branch=_branch("else", True, 16, 4)),
    ]
    m = model(nodes, [vi("x", [1, 16]), vi("sr", [], TensorProto.INT64)], [vi("y", None)], [C("k16", 16000)])
    assert om.count_macs(m, values={"sr": 16000}).total == 128
    assert om.count_macs(m, values={"sr": 8000}).total == 64
    # without the value the condition is data-dependent: the larger branch, with a note
    r = om.count_macs(m)
    assert r.total == 128 and r.folded_ifs == 0
    assert any("data-dependent If" in n for n in r.notes)


def test_nested_if_renames_apart():
    # an If inside the taken branch, reading values of the outer graph; both branches define
    # values with the same names ("t"), which inlining must keep apart
    ithen = helper.make_graph([helper.make_node("MatMul", ["x", "w16"], ["t"])], "ithen", [],
                              [vi("t", None)])
    ielse = helper.make_graph([helper.make_node("MatMul", ["x", "w16"], ["t"]),
                               helper.make_node("MatMul", ["t", "w8"], ["u"])], "ielse", [],
                              [vi("u", None)])
    inner = helper.make_node("If", ["c2"], ["iy"], then_branch=ithen, else_branch=ielse)
    then = helper.make_graph([helper.make_node("Not", ["c1"], ["c2"]), inner,
                              helper.make_node("MatMul", ["iy", "w2"], ["ty"])], "then", [],
                             [vi("ty", None)], initializer=[W("w2", [8, 2])])
    nodes = [helper.make_node("Equal", ["sr", "k"], ["c1"]),
             helper.make_node("If", ["c1"], ["y"], then_branch=then, else_branch=_branch("else", False))]
    m = model(nodes, [vi("x", [1, 16]), vi("sr", [], TensorProto.INT64)], [vi("y", None)],
              [C("k", 0), W("w16", [16, 8]), W("w8", [8, 8])])
    assert om.count_macs(m, values={"sr": 1}).total == 0           # c1 false: the else branch
    r = om.count_macs(m, values={"sr": 0})                           # c1 true, c2 false: ielse
    assert r.folded_ifs == 2 and not r.unresolved and not r.notes
    assert r.total == 128 + 64 + 16


def test_loop_with_constant_trip_count():
    # a Loop of 5 iterations whose body does one [1, 16] x [16, 8] MatMul
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("MatMul", ["x", "w"], ["y"])], "body",
        [vi("i", [], TensorProto.INT64), vi("cond_in", [], TensorProto.BOOL)],
        [vi("cond_out", [], TensorProto.BOOL), vi("y", [1, 8])])
    loop = helper.make_node("Loop", ["trip", "true"], ["ys"], body=body)
    m = model([loop], [vi("x", [1, 16])], [vi("ys", None)],
              [C("trip", 5), C("true", True, np.bool_), W("w", [16, 8])])
    r = om.count_macs(m)
    assert r.total == 5 * 128 and not r.unresolved


def test_unsorted_graph_is_ordered():
    # the float16 converter appends the input Cast at the end of the node list
    nodes = [helper.make_node("MatMul", ["xc", "w"], ["y"]),
             helper.make_node("Cast", ["x"], ["xc"], to=TensorProto.FLOAT)]
    m = model(nodes, [vi("x", [1, 4, 16], TensorProto.FLOAT16)], [vi("y", None)], [W("w", [16, 8])])
    assert om.count_macs(m).total == 4 * 128


def test_shape_subgraph_reshape_folds():
    # Shape -> Gather -> Unsqueeze -> Concat -> Reshape, then a MatMul on the reshaped value:
    # x [1, 6, 4] reshaped to [1, 3, 8] (dims from the shape of x), times [8, 5]: 3 * 8 * 5
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "i0"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "ax0"], ["nu"]),
        helper.make_node("Concat", ["nu", "rest"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["xr"]),
        helper.make_node("MatMul", ["xr", "w"], ["y"]),
    ]
    m = model(nodes, [vi("x", ["batch", 6, 4])], [vi("y", None)],
              [C("i0", 0), C("ax0", [0]), C("rest", [3, 8]), W("w", [8, 5])])
    assert om.count_macs(m).total == 3 * 8 * 5


def test_cli(capsys):
    n = helper.make_node("MatMul", ["x", "w"], ["y"])
    m = model([n], [vi("x", ["batch", "seq", 16])], [vi("y", None)], [W("w", [16, 8])])
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"onnx_macs_cli_{os.getpid()}.onnx")
    onnx.save(m, path)
    try:
        assert om.main([path, "--shape", "x=1,10,16", "--nodes"]) == 0
    finally:
        os.unlink(path)
    assert "total 1,280 MACs" in capsys.readouterr().out
