#!/usr/bin/python3
"""Generates the ONNX workload library: ResNet-50, MobileNetV2, BERT-base, GPT-2 small
(prefill and one decode step), an LSTM seq2seq, ViT-B/16, YOLOv3-tiny with its detection
post-processing (box decoding, TopK, NonMaxSuppression) and Llama-style decoders (a small
one with grouped-query attention, and Llama-2-7B on demand: prefill and one decode step
against a KV cache), with Debian's python3-onnx (onnx.helper).

The graphs follow what the PyTorch exporter writes for these models (node kinds, shape
sub-graphs, BatchNormalization after Conv, Clip for ReLU6, decomposed LayerNorm and GELU
in BERT, LayerNormalization in GPT-2, ...). The weights have their real shapes but are all
zeros and live in one external-data file per model (`<model>.onnx.data`), written as a
sparse file: a full-size, valid ONNX model that takes almost no disk and no time to write.
Tessera needs only the weights' shapes; onnxruntime can run the files as they are.

Usage:
  /usr/bin/python3 workloads/onnx/generate_models.py --out build/workloads/onnx   # all models
  /usr/bin/python3 workloads/onnx/generate_models.py --out DIR resnet50 bert_base  # some
  /usr/bin/python3 workloads/onnx/generate_models.py --list                        # names, MACs
  /usr/bin/python3 workloads/onnx/generate_models.py --out build/workloads/onnx llama2_7b_prefill llama2_7b_decode

Llama-2-7B is not in the default set (its sparse weight file is 27 GB long, though it takes
no disk): name it to write it.

The build runs this (CMake target `onnx_workloads`), so `build/workloads/onnx/*.onnx` exist
after `cmake --build build`. Each model records its dynamic dimensions (`batch`, and
`sequence`/`past` where they apply): bind them with --input-shape; docs/workloads.md lists
the commands.
"""
import argparse
import math
import os
import sys

import onnx
from onnx import TensorProto, helper

FLOAT = TensorProto.FLOAT
INT64 = TensorProto.INT64


class Builder:
    """Collects nodes and initializers; weights go to one sparse external-data file."""

    def __init__(self, name, opset):
        self.name = name
        self.opset = opset
        self.nodes = []
        self.inits = []
        self.inputs = []
        self.outputs = []
        self.data_offset = 0
        self.data_file = name + ".onnx.data"
        self.count = {}
        self.macs = 0  # independently counted multiply-accumulates per sample

    def uniq(self, base):
        k = self.count.get(base, 0)
        self.count[base] = k + 1
        return base if k == 0 else "%s_%d" % (base, k)

    def weight(self, name, shape, dtype=FLOAT):
        """A zero weight of `shape` in the external-data file (4-byte aligned)."""
        t = TensorProto()
        t.name = self.uniq(name)
        t.data_type = dtype
        t.dims.extend(shape)
        size = 4 if dtype == FLOAT else 8
        n = 1
        for d in shape:
            n *= d
        length = n * size
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", self.data_file), ("offset", str(self.data_offset)), ("length", str(length))):
            e = t.external_data.add()
            e.key, e.value = k, v
        self.data_offset += (length + 63) // 64 * 64
        self.inits.append(t)
        return t.name

    def const_i64(self, name, values, shape=None):
        t = helper.make_tensor(self.uniq(name), INT64, [len(values)] if shape is None else shape, values)
        self.inits.append(t)
        return t.name

    def const_f(self, name, values, shape=None):
        t = helper.make_tensor(self.uniq(name), FLOAT, [] if shape is None else shape, values)
        self.inits.append(t)
        return t.name

    def node(self, op, inputs, name, n_out=1, outputs=None, **attrs):
        outs = outputs or [name + "_output_%d" % i for i in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs[0] if n_out == 1 and not outputs else outs

    def input(self, name, dtype, dims):
        self.inputs.append(helper.make_tensor_value_info(name, dtype, dims))
        return name

    def output(self, name, dtype, dims):
        self.outputs.append(helper.make_tensor_value_info(name, dtype, dims))

    def save(self, out_dir, doc):
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.inits, doc_string=doc)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                                  producer_name="tessera generate_models.py", producer_version="1")
        model.ir_version = 8
        # ONNX's own shape inference records every intermediate shape (value_info): the
        # importer's tests compare theirs against it.
        model = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
        path = os.path.join(out_dir, self.name + ".onnx")
        data = os.path.join(out_dir, self.data_file)
        with open(data + ".tmp", "wb") as f:
            f.truncate(self.data_offset)  # sparse: zeros without writing them
        os.replace(data + ".tmp", data)
        with open(path + ".tmp", "wb") as f:
            f.write(model.SerializeToString())
        os.replace(path + ".tmp", path)
        onnx.checker.check_model(path)  # also checks that every external tensor lies inside the data file
        return path


# ------------------------------------------------------------------ CNNs

def conv_bn(b, x, cin, cout, k, stride, pad, name, hw, groups=1, act="relu"):
    """Conv (no bias) + BatchNormalization (+ Relu / Clip 0..6), as torchvision exports."""
    w = b.weight(name + ".weight", [cout, cin // groups, k, k])
    y = b.node("Conv", [x, w], name + "/Conv", kernel_shape=[k, k], strides=[stride, stride],
               pads=[pad, pad, pad, pad], group=groups, dilations=[1, 1])
    oh = (hw + 2 * pad - k) // stride + 1
    b.macs += oh * oh * k * k * (cin // groups) * cout
    bn = [b.weight(name + ".bn." + s, [cout]) for s in ("scale", "bias", "mean", "var")]
    y = b.node("BatchNormalization", [y] + bn, name + "/BatchNormalization", epsilon=1e-5, momentum=0.9)
    if act == "relu":
        y = b.node("Relu", [y], name + "/Relu")
    elif act == "relu6":
        lo, hi = b.const_f("relu6_min", [0.0]), b.const_f("relu6_max", [6.0])
        y = b.node("Clip", [y, lo, hi], name + "/Clip")
    return y, oh


def resnet50(out_dir):
    """torchvision resnet50 (v1.5: stride on the 3x3 conv), 224x224."""
    b = Builder("resnet50", 13)
    x = b.input("input", FLOAT, ["batch", 3, 224, 224])
    y, hw = conv_bn(b, x, 3, 64, 7, 2, 3, "/conv1", 224)
    y = b.node("MaxPool", [y], "/maxpool/MaxPool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    hw = (hw + 2 - 3) // 2 + 1
    cin = 64
    for li, (blocks, width, stride) in enumerate([(3, 64, 1), (4, 128, 2), (6, 256, 2), (3, 512, 2)]):
        for bi in range(blocks):
            s = stride if bi == 0 else 1
            p = "/layer%d/layer%d.%d" % (li + 1, li + 1, bi)
            t, h1 = conv_bn(b, y, cin, width, 1, 1, 0, p + "/conv1", hw)
            t, h2 = conv_bn(b, t, width, width, 3, s, 1, p + "/conv2", h1)
            t, h3 = conv_bn(b, t, width, width * 4, 1, 1, 0, p + "/conv3", h2, act=None)
            if bi == 0:
                short, _ = conv_bn(b, y, cin, width * 4, 1, s, 0, p + "/downsample", hw, act=None)
            else:
                short = y
            y = b.node("Add", [t, short], p + "/Add")
            y = b.node("Relu", [y], p + "/relu/Relu")
            cin, hw = width * 4, h3
    y = b.node("GlobalAveragePool", [y], "/avgpool/GlobalAveragePool")
    y = b.node("Flatten", [y], "/Flatten", axis=1)
    w, bias = b.weight("fc.weight", [1000, 2048]), b.weight("fc.bias", [1000])
    b.node("Gemm", [y, w, bias], "/fc/Gemm", outputs=["output"], alpha=1.0, beta=1.0, transB=1)
    b.macs += 2048 * 1000
    b.output("output", FLOAT, ["batch", 1000])
    return b, "ResNet-50 v1.5 (torchvision), 224x224, zero weights"


def mobilenet_v2(out_dir):
    """torchvision mobilenet_v2 (width 1.0), 224x224: ReLU6 as Clip(0, 6)."""
    b = Builder("mobilenet_v2", 12)
    x = b.input("input", FLOAT, ["batch", 3, 224, 224])
    y, hw = conv_bn(b, x, 3, 32, 3, 2, 1, "/features/features.0", 224, act="relu6")
    cin = 32
    idx = 1
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                       (6, 320, 1, 1)]:
        for i in range(n):
            stride = s if i == 0 else 1
            p = "/features/features.%d/conv" % idx
            hidden = cin * t
            h = y
            k = 0
            if t != 1:
                h, _ = conv_bn(b, h, cin, hidden, 1, 1, 0, p + "/conv.%d" % k, hw, act="relu6")
                k += 1
            h, h2 = conv_bn(b, h, hidden, hidden, 3, stride, 1, p + "/conv.%d" % k, hw, groups=hidden, act="relu6")
            h, _ = conv_bn(b, h, hidden, c, 1, 1, 0, p + "/conv.%d" % (k + 1), h2, act=None)
            if stride == 1 and cin == c:
                h = b.node("Add", [y, h], "/features/features.%d/Add" % idx)
            y, cin, hw = h, c, h2
            idx += 1
    y, hw = conv_bn(b, y, cin, 1280, 1, 1, 0, "/features/features.18", hw, act="relu6")
    y = b.node("GlobalAveragePool", [y], "/GlobalAveragePool")
    y = b.node("Flatten", [y], "/Flatten", axis=1)
    y = b.node("Dropout", [y], "/classifier/classifier.0/Dropout")
    w, bias = b.weight("classifier.1.weight", [1000, 1280]), b.weight("classifier.1.bias", [1000])
    b.node("Gemm", [y, w, bias], "/classifier/classifier.1/Gemm", outputs=["output"], transB=1)
    b.macs += 1280 * 1000
    b.output("output", FLOAT, ["batch", 1000])
    return b, "MobileNetV2 1.0 (torchvision), 224x224, zero weights"


# ------------------------------------------------------------------ transformers

def shape_dims(b, x, p, idx):
    """Shape(x) -> Gather(i) -> Unsqueeze: the exporter's way of reading dims at run time."""
    shp = b.node("Shape", [x], p + "/Shape")
    outs = []
    for i in idx:
        g = b.node("Gather", [shp, b.const_i64("idx", [i], shape=[])], p + "/Gather_%d" % i, axis=0)
        outs.append(b.node("Unsqueeze", [g, b.const_i64("axes0", [0])], p + "/Unsqueeze_%d" % i))
    return outs


def split_heads(b, x, p, heads, d, transpose_perm):
    bs, seq = shape_dims(b, x, p, [0, 1])
    tgt = b.node("Concat", [bs, seq, b.const_i64("heads", [heads]), b.const_i64("head_dim", [d])], p + "/Concat", axis=0)
    y = b.node("Reshape", [x, tgt], p + "/Reshape")
    return b.node("Transpose", [y], p + "/Transpose", perm=transpose_perm)


def merge_heads(b, x, p, hidden):
    y = b.node("Transpose", [x], p + "/Transpose", perm=[0, 2, 1, 3])
    bs, seq = shape_dims(b, y, p, [0, 1])
    tgt = b.node("Concat", [bs, seq, b.const_i64("hidden", [hidden])], p + "/Concat", axis=0)
    return b.node("Reshape", [y, tgt], p + "/Reshape")


def linear(b, x, din, dout, p, rows):
    """x @ W + b on a 3-D activation (MatMul + Add, as PyTorch exports nn.Linear on 3-D)."""
    w = b.weight(p + ".weight", [din, dout])
    y = b.node("MatMul", [x, w], p + "/MatMul")
    b.macs += rows * din * dout
    return b.node("Add", [y, b.weight(p + ".bias", [dout])], p + "/Add")


def layer_norm_decomposed(b, x, hidden, p):
    """LayerNorm as opset-13 exporters write it."""
    mean = b.node("ReduceMean", [x], p + "/ReduceMean", axes=[-1], keepdims=1)
    d = b.node("Sub", [x, mean], p + "/Sub")
    sq = b.node("Pow", [d, b.const_f("two", [2.0])], p + "/Pow")
    var = b.node("ReduceMean", [sq], p + "/ReduceMean_1", axes=[-1], keepdims=1)
    ve = b.node("Add", [var, b.const_f("eps", [1e-12])], p + "/Add")
    sd = b.node("Sqrt", [ve], p + "/Sqrt")
    n = b.node("Div", [d, sd], p + "/Div")
    n = b.node("Mul", [n, b.weight(p + ".gamma", [hidden])], p + "/Mul")
    return b.node("Add", [n, b.weight(p + ".beta", [hidden])], p + "/Add_1")


def gelu_erf(b, x, p):
    t = b.node("Div", [x, b.const_f("sqrt2", [math.sqrt(2.0)])], p + "/Div")
    t = b.node("Erf", [t], p + "/Erf")
    t = b.node("Add", [t, b.const_f("one", [1.0])], p + "/Add")
    t = b.node("Mul", [x, t], p + "/Mul")
    return b.node("Mul", [t, b.const_f("half", [0.5])], p + "/Mul_1")


def bert_base(out_dir, seq=128):
    """BERT-base uncased (12 layers, 768 hidden, 12 heads, FFN 3072), sequence 128."""
    L, H, A, F, V = 12, 768, 12, 3072, 30522
    d = H // A
    b = Builder("bert_base", 13)
    ids = b.input("input_ids", INT64, ["batch", "sequence"])
    mask = b.input("attention_mask", INT64, ["batch", "sequence"])
    types = b.input("token_type_ids", INT64, ["batch", "sequence"])
    # Embeddings: three lookups (the tables stay on the host) and a sum.
    we = b.node("Gather", [b.weight("embeddings.word_embeddings.weight", [V, H]), ids], "/embeddings/word_embeddings/Gather")
    pos_all = b.const_i64("position_ids", list(range(512)), shape=[1, 512])
    _, seq_len = shape_dims(b, ids, "/embeddings", [0, 1])
    pos = b.node("Slice", [pos_all, b.const_i64("zero", [0]), seq_len, b.const_i64("one_axis", [1])], "/embeddings/Slice")
    pe = b.node("Gather", [b.weight("embeddings.position_embeddings.weight", [512, H]), pos],
                "/embeddings/position_embeddings/Gather")
    te = b.node("Gather", [b.weight("embeddings.token_type_embeddings.weight", [2, H]), types],
                "/embeddings/token_type_embeddings/Gather")
    x = b.node("Add", [we, te], "/embeddings/Add")
    x = b.node("Add", [x, pe], "/embeddings/Add_1")
    x = layer_norm_decomposed(b, x, H, "/embeddings/LayerNorm")
    # Extended attention mask: (1 - mask) * -10000, broadcast over heads and queries.
    m = b.node("Unsqueeze", [mask, b.const_i64("axes12", [1, 2])], "/Unsqueeze")
    m = b.node("Cast", [m], "/Cast", to=FLOAT)
    m = b.node("Sub", [b.const_f("one_f", [1.0]), m], "/Sub")
    m = b.node("Mul", [m, b.const_f("neg_big", [-10000.0])], "/Mul")
    for l in range(L):
        p = "/encoder/layer.%d" % l
        q = linear(b, x, H, H, p + "/attention/self/query", seq)
        k = linear(b, x, H, H, p + "/attention/self/key", seq)
        v = linear(b, x, H, H, p + "/attention/self/value", seq)
        q = split_heads(b, q, p + "/attention/self/q", A, d, [0, 2, 1, 3])
        k = split_heads(b, k, p + "/attention/self/k", A, d, [0, 2, 3, 1])
        v = split_heads(b, v, p + "/attention/self/v", A, d, [0, 2, 1, 3])
        s = b.node("MatMul", [q, k], p + "/attention/self/MatMul")
        b.macs += A * seq * d * seq
        s = b.node("Div", [s, b.const_f("sqrt_d", [math.sqrt(d)])], p + "/attention/self/Div")
        s = b.node("Add", [s, m], p + "/attention/self/Add")
        s = b.node("Softmax", [s], p + "/attention/self/Softmax", axis=-1)
        c = b.node("MatMul", [s, v], p + "/attention/self/MatMul_1")
        b.macs += A * seq * seq * d
        c = merge_heads(b, c, p + "/attention/self/ctx", H)
        o = linear(b, c, H, H, p + "/attention/output/dense", seq)
        o = b.node("Add", [o, x], p + "/attention/output/Add")
        x = layer_norm_decomposed(b, o, H, p + "/attention/output/LayerNorm")
        h = linear(b, x, H, F, p + "/intermediate/dense", seq)
        h = gelu_erf(b, h, p + "/intermediate/intermediate_act_fn")
        o = linear(b, h, F, H, p + "/output/dense", seq)
        o = b.node("Add", [o, x], p + "/output/Add")
        x = layer_norm_decomposed(b, o, H, p + "/output/LayerNorm")
    b.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="/Identity"))
    b.output("last_hidden_state", FLOAT, ["batch", "sequence", H])
    first = b.node("Gather", ["last_hidden_state", b.const_i64("first", [0], shape=[])], "/pooler/Gather", axis=1)
    w = b.weight("pooler.dense.weight", [H, H])
    pooled = b.node("Gemm", [first, w, b.weight("pooler.dense.bias", [H])], "/pooler/dense/Gemm", transB=1)
    b.macs += H * H
    b.node("Tanh", [pooled], "/pooler/activation/Tanh", outputs=["pooler_output"])
    b.output("pooler_output", FLOAT, ["batch", H])
    return b, "BERT-base uncased, sequence %d, zero weights" % seq


def positions(b, ids, past_input, p):
    """position_ids [1, sequence] = Range(past, past + sequence), from the inputs' shapes."""
    seq = b.node("Gather", [b.node("Shape", [ids], p + "/Shape_ids"), b.const_i64("one", [1], shape=[])],
                 p + "/Gather_seq", axis=0)
    if past_input is None:
        start = b.const_i64("zero", [0], shape=[])
    else:
        start = b.node("Gather", [b.node("Shape", [past_input], p + "/Shape_past"), b.const_i64("two", [2], shape=[])],
                       p + "/Gather_past", axis=0)
    end = b.node("Add", [start, seq], p + "/Add_pos")
    r = b.node("Range", [start, end, b.const_i64("step", [1], shape=[])], p + "/Range")
    return b.node("Unsqueeze", [r, b.const_i64("axes0", [0])], p + "/Unsqueeze_pos")


def causal_mask_1024(b, scores):
    """[1, 1, q, k] of a lower-triangular 1024 x 1024 bool buffer, q and k from `scores`' shape
    (built once per model and shared by the layers, as the exporter's constant is)."""
    if getattr(b, "_causal", None) is None:
        n = 1024
        buf = helper.make_tensor(b.uniq("attn.bias"), TensorProto.BOOL, [1, 1, n, n],
                                 bytes(1 if j <= i else 0 for i in range(n) for j in range(n)), raw=True)
        b.inits.append(buf)
        b._causal = buf.name
    p = b.uniq("/mask")
    q, k = shape_dims(b, scores, p, [2, 3])
    ends = b.node("Concat", [q, k], p + "/Concat", axis=0)
    return b.node("Slice", [b._causal, b.const_i64("zero2", [0, 0]), ends, b.const_i64("axes23", [2, 3])], p + "/Slice")


def gpt2_block(b, x, l, seq, ctx, H, A, past=None):
    """One GPT-2 block. seq: query positions; ctx: key positions (past + seq)."""
    d = H // A
    p = "/h.%d" % l
    ln = b.node("LayerNormalization", [x, b.weight(p + ".ln_1.weight", [H]), b.weight(p + ".ln_1.bias", [H])],
                p + "/ln_1/LayerNormalization", axis=-1, epsilon=1e-5)
    # Conv1D: flatten to 2-D, Gemm, back to 3-D (what HF's GPT-2 export does).
    def conv1d(t, din, dout, name):
        bs, sq = shape_dims(b, t, name, [0, 1])
        flat = b.node("Reshape", [t, b.const_i64("flat", [-1, din])], name + "/Reshape")
        y = b.node("Gemm", [flat, b.weight(name + ".weight", [din, dout]), b.weight(name + ".bias", [dout])], name + "/Gemm")
        b.macs += seq * din * dout
        tgt = b.node("Concat", [bs, sq, b.const_i64("dout", [dout])], name + "/Concat", axis=0)
        return b.node("Reshape", [y, tgt], name + "/Reshape_1")
    qkv = conv1d(ln, H, 3 * H, p + "/attn/c_attn")
    q, k, v = b.node("Split", [qkv, b.const_i64("split", [H, H, H])], p + "/attn/Split", n_out=3, axis=2,
                     outputs=[p + "/attn/q", p + "/attn/k", p + "/attn/v"])
    q = split_heads(b, q, p + "/attn/q", A, d, [0, 2, 1, 3])
    k = split_heads(b, k, p + "/attn/k", A, d, [0, 2, 1, 3])
    v = split_heads(b, v, p + "/attn/v", A, d, [0, 2, 1, 3])
    if past is not None:
        k = b.node("Concat", [past[0], k], p + "/attn/Concat_k", axis=2)
        v = b.node("Concat", [past[1], v], p + "/attn/Concat_v", axis=2)
    b.nodes.append(helper.make_node("Identity", [k], ["present.%d.key" % l], name=p + "/present_key"))
    b.nodes.append(helper.make_node("Identity", [v], ["present.%d.value" % l], name=p + "/present_value"))
    kt = b.node("Transpose", [k], p + "/attn/Transpose_k", perm=[0, 1, 3, 2])
    s = b.node("MatMul", [q, kt], p + "/attn/MatMul")
    b.macs += A * seq * d * ctx
    s = b.node("Div", [s, b.const_f("sqrt_d", [math.sqrt(d)])], p + "/attn/Div")
    if past is None:
        # Causal mask: HF's GPT-2 keeps a lower-triangular [1, 1, 1024, 1024] buffer and
        # slices [.., :sequence, :sequence] out of it by the input's shape.
        s = b.node("Where", [causal_mask_1024(b, s), s, b.const_f("neg_inf", [-1e4])], p + "/attn/Where")
    s = b.node("Softmax", [s], p + "/attn/Softmax", axis=-1)
    c = b.node("MatMul", [s, v], p + "/attn/MatMul_1")
    b.macs += A * seq * ctx * d
    c = merge_heads(b, c, p + "/attn/merge", H)
    o = conv1d(c, H, H, p + "/attn/c_proj")
    x = b.node("Add", [x, o], p + "/Add")
    ln = b.node("LayerNormalization", [x, b.weight(p + ".ln_2.weight", [H]), b.weight(p + ".ln_2.bias", [H])],
                p + "/ln_2/LayerNormalization", axis=-1, epsilon=1e-5)
    h = conv1d(ln, H, 4 * H, p + "/mlp/c_fc")
    # gelu_new: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    g = "/h.%d/mlp/act" % l
    c3 = b.node("Pow", [h, b.const_f("three", [3.0])], g + "/Pow")
    c3 = b.node("Mul", [c3, b.const_f("c", [0.044715])], g + "/Mul")
    t = b.node("Add", [h, c3], g + "/Add")
    t = b.node("Mul", [t, b.const_f("s", [math.sqrt(2 / math.pi)])], g + "/Mul_1")
    t = b.node("Tanh", [t], g + "/Tanh")
    t = b.node("Add", [t, b.const_f("one", [1.0])], g + "/Add_1")
    t = b.node("Mul", [h, t], g + "/Mul_2")
    t = b.node("Mul", [t, b.const_f("half", [0.5])], g + "/Mul_3")
    o = conv1d(t, 4 * H, H, p + "/mlp/c_proj")
    return b.node("Add", [x, o], p + "/Add_1")


def gpt2(out_dir, decode):
    """GPT-2 small (124M: 12 layers, 768 hidden, 12 heads, vocab 50257). Prefill: 128 tokens,
    logits of the last one (what generation needs). Decode: one token after 128 past ones."""
    L, H, A, V = 12, 768, 12, 50257
    d = H // A
    name = "gpt2_decode" if decode else "gpt2_prefill"
    b = Builder(name, 17)
    seq = 1 if decode else 128
    past_len = 128 if decode else 0
    ids = b.input("input_ids", INT64, ["batch", "sequence"])
    wte = b.weight("wte.weight", [V, H])
    te = b.node("Gather", [wte, ids], "/wte/Gather")
    # Positions past .. past + sequence, read from the shapes as HF's export does, so any
    # --input-shape up to the 1024 learned positions runs.
    pos = positions(b, ids, "past.0.key" if decode else None, "")
    pe = b.node("Gather", [b.weight("wpe.weight", [1024, H]), pos], "/wpe/Gather")
    x = b.node("Add", [te, pe], "/Add")
    for l in range(L):
        past = None
        if decode:
            pk = b.input("past.%d.key" % l, FLOAT, ["batch", A, "past", d])
            pv = b.input("past.%d.value" % l, FLOAT, ["batch", A, "past", d])
            past = (pk, pv)
        x = gpt2_block(b, x, l, seq, past_len + seq, H, A, past)
        ctx = ["batch", A, "past_plus_1" if decode else "sequence", d]
        b.output("present.%d.key" % l, FLOAT, ctx)
        b.output("present.%d.value" % l, FLOAT, ctx)
    x = b.node("LayerNormalization", [x, b.weight("ln_f.weight", [H]), b.weight("ln_f.bias", [H])],
               "/ln_f/LayerNormalization", axis=-1, epsilon=1e-5)
    last = b.node("Gather", [x, b.const_i64("last", [-1], shape=[])], "/Gather_last", axis=1)
    # The LM head shares wte: a Transpose of the table (folded: it only changes the weight's layout).
    wt = b.node("Transpose", [wte], "/lm_head/Transpose", perm=[1, 0])
    b.node("MatMul", [last, wt], "/lm_head/MatMul", outputs=["logits"])
    b.macs += H * V
    b.output("logits", FLOAT, ["batch", V])
    what = "one decode step after 128 tokens" if decode else "prefill of 128 tokens"
    return b, "GPT-2 small, %s, logits of the last token, zero weights" % what


# ------------------------------------------------------------------ Llama-style decoders

LLAMA = {
    # Touvron et al. 2023 (Llama 2), Table 1 / HF config.json of meta-llama/Llama-2-7b-hf:
    # 32 layers, hidden 4096, 32 heads (no GQA at 7B), FFN 11008, vocab 32000, 4096 positions.
    "llama2_7b": dict(L=32, H=4096, A=32, KV=32, F=11008, V=32000, P=4096, seq=512, past=512),
    # A small variant with grouped-query attention (8 query heads share 2 key/value heads),
    # for tests: the same graph, every feature exercised.
    "llama_tiny": dict(L=2, H=256, A=8, KV=2, F=688, V=1000, P=2048, seq=32, past=32),
}


def rms_norm(b, x, hidden, p):
    """RMSNorm as torch exports LlamaRMSNorm: x * rsqrt(mean(x^2) + eps) * weight."""
    sq = b.node("Pow", [x, b.const_f("two", [2.0])], p + "/Pow")
    ms = b.node("ReduceMean", [sq], p + "/ReduceMean", axes=[-1], keepdims=1)
    ms = b.node("Add", [ms, b.const_f("eps", [1e-5])], p + "/Add")
    r = b.node("Reciprocal", [b.node("Sqrt", [ms], p + "/Sqrt")], p + "/Reciprocal")
    y = b.node("Mul", [x, r], p + "/Mul")
    return b.node("Mul", [b.weight(p + ".weight", [hidden]), y], p + "/Mul_1")


def rotary(b, x, cos, sin, d, p):
    """x * cos + rotate_half(x) * sin; rotate_half(x) = concat(-x[..., d/2:], x[..., :d/2])."""
    x1 = b.node("Slice", [x, b.const_i64("s0", [0]), b.const_i64("half", [d // 2]), b.const_i64("ax3", [3])], p + "/Slice")
    x2 = b.node("Slice", [x, b.const_i64("half", [d // 2]), b.const_i64("end", [2**63 - 1]), b.const_i64("ax3", [3])],
                p + "/Slice_1")
    rot = b.node("Concat", [b.node("Neg", [x2], p + "/Neg"), x1], p + "/Concat", axis=-1)
    return b.node("Add", [b.node("Mul", [x, cos], p + "/Mul"), b.node("Mul", [rot, sin], p + "/Mul_1")], p + "/Add")


def repeat_kv(b, x, kv, rep, d, p):
    """[b, kv, t, d] -> [b, kv * rep, t, d] as HF's repeat_kv exports: unsqueeze, expand, reshape."""
    if rep == 1:
        return x
    bs, t = shape_dims(b, x, p, [0, 2])
    u = b.node("Unsqueeze", [x, b.const_i64("ax2", [2])], p + "/Unsqueeze")
    tgt = b.node("Concat", [bs, b.const_i64("kv", [kv]), b.const_i64("rep", [rep]), t, b.const_i64("d", [d])],
                 p + "/Concat", axis=0)
    e = b.node("Expand", [u, tgt], p + "/Expand")
    tgt2 = b.node("Concat", [bs, b.const_i64("heads", [kv * rep]), t, b.const_i64("d", [d])], p + "/Concat_1", axis=0)
    return b.node("Reshape", [e, tgt2], p + "/Reshape")


def llama(out_dir, size, decode):
    """A Llama-style decoder as the torch exporter writes LlamaForCausalLM: RMSNorm, rotary
    embeddings from cos/sin tables gathered by position, grouped-query attention with a
    causal mask built from the positions, SwiGLU MLP, no biases; logits of the last token.
    Prefill: `sequence` tokens; decode: one token against a KV cache of `past` tokens (the
    cache is a graph input per layer, so reading it is real traffic). Both dynamic."""
    c = LLAMA[size]
    L, H, A, KV, F, V, P = c["L"], c["H"], c["A"], c["KV"], c["F"], c["V"], c["P"]
    d, rep = H // A, A // KV
    name = "%s_%s" % (size, "decode" if decode else "prefill")
    b = Builder(name, 17)
    seq = 1 if decode else c["seq"]
    past_len = c["past"] if decode else 0
    ctx = past_len + seq
    ids = b.input("input_ids", INT64, ["batch", "sequence"])
    past_inputs = []
    if decode:
        for l in range(L):
            past_inputs.append((b.input("past_key_values.%d.key" % l, FLOAT, ["batch", KV, "past", d]),
                                b.input("past_key_values.%d.value" % l, FLOAT, ["batch", KV, "past", d])))
    x = b.node("Gather", [b.weight("model.embed_tokens.weight", [V, H]), ids], "/model/embed_tokens/Gather")
    pos = positions(b, ids, past_inputs[0][0] if decode else None, "/model")
    # cos/sin caches [P, d] (rotary base 10000), gathered by position -> [1, 1, sequence, d].
    cos = b.node("Gather", [b.weight("model.rotary_emb.cos_cached", [P, d]), pos], "/model/rotary_emb/Gather")
    sin = b.node("Gather", [b.weight("model.rotary_emb.sin_cached", [P, d]), pos], "/model/rotary_emb/Gather_1")
    cos = b.node("Unsqueeze", [cos, b.const_i64("ax1", [1])], "/model/rotary_emb/Unsqueeze")
    sin = b.node("Unsqueeze", [sin, b.const_i64("ax1", [1])], "/model/rotary_emb/Unsqueeze_1")
    mask = None
    if not decode:
        # Causal mask [1, 1, sequence, sequence] from the positions: key j visible to query i iff j <= i.
        qi = b.node("Unsqueeze", [pos, b.const_i64("axm1", [-1])], "/model/mask/Unsqueeze")   # [1, s, 1]
        kj = b.node("Unsqueeze", [pos, b.const_i64("ax1", [1])], "/model/mask/Unsqueeze_1")   # [1, 1, s]
        vis = b.node("LessOrEqual", [kj, qi], "/model/mask/LessOrEqual")                    # [1, s, s]
        vis = b.node("Unsqueeze", [vis, b.const_i64("ax1", [1])], "/model/mask/Unsqueeze_2")  # [1, 1, s, s]
        mask = b.node("Where", [vis, b.const_f("zero_f", [0.0]), b.const_f("neg_inf", [-3.4028234663852886e38])],
                      "/model/mask/Where")
    for l in range(L):
        p = "/model/layers.%d" % l
        h = rms_norm(b, x, H, p + "/input_layernorm")
        def proj(t, din, dout, pname):
            b.macs += seq * din * dout
            return b.node("MatMul", [t, b.weight(p[1:].replace("/", ".") + "." + pname + ".weight", [din, dout])],
                          p + "/" + pname + "/MatMul")
        q = proj(h, H, A * d, "self_attn.q_proj")
        k = proj(h, H, KV * d, "self_attn.k_proj")
        v = proj(h, H, KV * d, "self_attn.v_proj")
        q = split_heads(b, q, p + "/self_attn/q", A, d, [0, 2, 1, 3])
        k = split_heads(b, k, p + "/self_attn/k", KV, d, [0, 2, 1, 3])
        v = split_heads(b, v, p + "/self_attn/v", KV, d, [0, 2, 1, 3])
        q = rotary(b, q, cos, sin, d, p + "/self_attn/rotary_q")
        k = rotary(b, k, cos, sin, d, p + "/self_attn/rotary_k")
        if decode:
            k = b.node("Concat", [past_inputs[l][0], k], p + "/self_attn/Concat_k", axis=2)
            v = b.node("Concat", [past_inputs[l][1], v], p + "/self_attn/Concat_v", axis=2)
            b.nodes.append(helper.make_node("Identity", [k], ["present.%d.key" % l], name=p + "/present_key"))
            b.nodes.append(helper.make_node("Identity", [v], ["present.%d.value" % l], name=p + "/present_value"))
            b.output("present.%d.key" % l, FLOAT, ["batch", KV, "past_plus_1", d])
            b.output("present.%d.value" % l, FLOAT, ["batch", KV, "past_plus_1", d])
        k = repeat_kv(b, k, KV, rep, d, p + "/self_attn/repeat_k")
        v = repeat_kv(b, v, KV, rep, d, p + "/self_attn/repeat_v")
        kt = b.node("Transpose", [k], p + "/self_attn/Transpose_k", perm=[0, 1, 3, 2])
        s = b.node("MatMul", [q, kt], p + "/self_attn/MatMul")
        b.macs += A * seq * d * ctx
        s = b.node("Div", [s, b.const_f("sqrt_d", [math.sqrt(d)])], p + "/self_attn/Div")
        if mask is not None:
            s = b.node("Add", [s, mask], p + "/self_attn/Add")
        s = b.node("Softmax", [s], p + "/self_attn/Softmax", axis=-1)
        o = b.node("MatMul", [s, v], p + "/self_attn/MatMul_1")
        b.macs += A * seq * ctx * d
        o = merge_heads(b, o, p + "/self_attn/merge", H)
        o = proj(o, H, H, "self_attn.o_proj")
        x = b.node("Add", [x, o], p + "/Add")
        h = rms_norm(b, x, H, p + "/post_attention_layernorm")
        g = proj(h, H, F, "mlp.gate_proj")
        g = b.node("Mul", [g, b.node("Sigmoid", [g], p + "/mlp/act_fn/Sigmoid")], p + "/mlp/act_fn/Mul")  # SiLU
        u = proj(h, H, F, "mlp.up_proj")
        o = proj(b.node("Mul", [g, u], p + "/mlp/Mul"), F, H, "mlp.down_proj")
        x = b.node("Add", [x, o], p + "/Add_1")
    x = rms_norm(b, x, H, "/model/norm")
    last = b.node("Gather", [x, b.const_i64("last", [-1], shape=[])], "/Gather_last", axis=1)
    b.node("MatMul", [last, b.weight("lm_head.weight", [H, V])], "/lm_head/MatMul", outputs=["logits"])
    b.macs += H * V
    b.output("logits", FLOAT, ["batch", V])
    what = ("one decode step against a KV cache of %d tokens" % past_len) if decode else ("prefill of %d tokens" % seq)
    return b, "%s (Llama-style decoder), %s (dynamic: bind sequence/past), logits of the last token, zero weights" % (
        size, what)


# ------------------------------------------------------------------ vision transformer

def vit_b16(out_dir):
    """ViT-B/16 (Dosovitskiy et al. 2021; torchvision vit_b_16), 224x224: a 16x16 stride-16
    Conv patch embedding, class token, learned positions, 12 pre-norm encoder layers
    (768 hidden, 12 heads, MLP 3072, exact GELU), classifier on the class token."""
    L, H, A, F, N = 12, 768, 12, 3072, 1000
    d, T = H // A, 197
    b = Builder("vit_b16", 17)
    img = b.input("pixel_values", FLOAT, ["batch", 3, 224, 224])
    pe = b.node("Conv", [img, b.weight("conv_proj.weight", [H, 3, 16, 16]), b.weight("conv_proj.bias", [H])],
                "/conv_proj/Conv", kernel_shape=[16, 16], strides=[16, 16])
    b.macs += 196 * H * 3 * 16 * 16
    bs = shape_dims(b, pe, "/patches", [0])[0]
    pe = b.node("Reshape", [pe, b.node("Concat", [bs, b.const_i64("hw", [H, 196])], "/patches/Concat", axis=0)],
                "/patches/Reshape")
    x = b.node("Transpose", [pe], "/patches/Transpose", perm=[0, 2, 1])                    # [b, 196, 768]
    cls = b.node("Expand", [b.weight("class_token", [1, 1, H]),
                            b.node("Concat", [bs, b.const_i64("one_h", [1, H])], "/cls/Concat", axis=0)], "/cls/Expand")
    x = b.node("Concat", [cls, x], "/Concat", axis=1)                                      # [b, 197, 768]
    x = b.node("Add", [x, b.weight("encoder.pos_embedding", [1, T, H])], "/encoder/Add")
    for l in range(L):
        p = "/encoder/layers/encoder_layer_%d" % l
        h = b.node("LayerNormalization", [x, b.weight(p + ".ln_1.weight", [H]), b.weight(p + ".ln_1.bias", [H])],
                   p + "/ln_1/LayerNormalization", axis=-1, epsilon=1e-6)
        q = linear(b, h, H, H, p + "/self_attention/q", T)
        k = linear(b, h, H, H, p + "/self_attention/k", T)
        v = linear(b, h, H, H, p + "/self_attention/v", T)
        q = split_heads(b, q, p + "/self_attention/q", A, d, [0, 2, 1, 3])
        k = split_heads(b, k, p + "/self_attention/k", A, d, [0, 2, 3, 1])
        v = split_heads(b, v, p + "/self_attention/v", A, d, [0, 2, 1, 3])
        s = b.node("MatMul", [q, k], p + "/self_attention/MatMul")
        b.macs += A * T * d * T
        s = b.node("Div", [s, b.const_f("sqrt_d", [math.sqrt(d)])], p + "/self_attention/Div")
        s = b.node("Softmax", [s], p + "/self_attention/Softmax", axis=-1)
        c = b.node("MatMul", [s, v], p + "/self_attention/MatMul_1")
        b.macs += A * T * T * d
        c = merge_heads(b, c, p + "/self_attention/ctx", H)
        o = linear(b, c, H, H, p + "/self_attention/out_proj", T)
        x = b.node("Add", [x, o], p + "/Add")
        h = b.node("LayerNormalization", [x, b.weight(p + ".ln_2.weight", [H]), b.weight(p + ".ln_2.bias", [H])],
                   p + "/ln_2/LayerNormalization", axis=-1, epsilon=1e-6)
        h = linear(b, h, H, F, p + "/mlp/0", T)
        h = gelu_erf(b, h, p + "/mlp/1")
        o = linear(b, h, F, H, p + "/mlp/3", T)
        x = b.node("Add", [x, o], p + "/Add_1")
    x = b.node("LayerNormalization", [x, b.weight("encoder.ln.weight", [H]), b.weight("encoder.ln.bias", [H])],
               "/encoder/ln/LayerNormalization", axis=-1, epsilon=1e-6)
    first = b.node("Gather", [x, b.const_i64("first", [0], shape=[])], "/Gather_cls", axis=1)
    b.node("Gemm", [first, b.weight("heads.head.weight", [N, H]), b.weight("heads.head.bias", [N])],
           "/heads/head/Gemm", outputs=["logits"], transB=1)
    b.macs += H * N
    b.output("logits", FLOAT, ["batch", N])
    return b, "ViT-B/16, 224x224, 1000 classes, zero weights"


# ------------------------------------------------------------------ detection

# YOLOv3-tiny (Redmon & Farhadi 2018, "YOLOv3: An Incremental Improvement"; darknet's
# cfg/yolov3-tiny.cfg): 416x416, 80 COCO classes, 3 anchors per cell on a 13x13 and a 26x26 grid.
YOLO_TINY_ANCHORS = [[(81, 82), (135, 169), (344, 319)], [(10, 14), (23, 27), (37, 58)]]  # 13x13 head, 26x26 head


def yolov3_tiny(out_dir, classes=80, pre_top_k=1000):
    """YOLOv3-tiny with its post-processing as exporters write it: darknet's backbone (3x3
    convs with BatchNormalization and LeakyRelu 0.1, 2x2 max pools, the stride-1 pool padded
    on the right and bottom), two heads (13x13 and 26x26, the second after a nearest 2x
    upsample and a concat with the 26x26 feature map); then the box decoding of each head
    (Reshape/Transpose to [batch, 3, h, w, 85], sigmoid(xy) + grid times the stride, exp(wh)
    times the anchors, sigmoid objectness and class scores), corners from centres, scores =
    objectness x class probability, the best class score per box (ReduceMax), a pre-NMS TopK
    of `pre_top_k` boxes, GatherND of their boxes and scores (batch_dims 1, as tf.gather with
    batch_dims exports) and NonMaxSuppression (100 boxes per class, IoU 0.45, score 0.25).
    The outputs are what the ONNX model zoo's YOLOv3 gives: boxes, scores, selected_indices."""
    b = Builder("yolov3_tiny", 13)
    x = b.input("images", FLOAT, ["batch", 3, 416, 416])

    def conv(t, cin, cout, k, hw, name, bn=True):
        w = b.weight(name + ".weight", [cout, cin, k, k])
        ins = [t, w] if bn else [t, w, b.weight(name + ".bias", [cout])]
        y = b.node("Conv", ins, name + "/Conv", kernel_shape=[k, k], strides=[1, 1], pads=[k // 2] * 4, dilations=[1, 1])
        b.macs += hw * hw * k * k * cin * cout
        if not bn:
            return y
        bnw = [b.weight(name + ".bn." + s, [cout]) for s in ("scale", "bias", "mean", "var")]
        y = b.node("BatchNormalization", [y] + bnw, name + "/BatchNormalization", epsilon=1e-5)
        return b.node("LeakyRelu", [y], name + "/LeakyRelu", alpha=0.1)

    def pool(t, name, stride=2):
        pads = [0, 0, 0, 0] if stride == 2 else [0, 0, 1, 1]  # darknet's size-2 stride-1 pool keeps 13x13
        return b.node("MaxPool", [t], name + "/MaxPool", kernel_shape=[2, 2], strides=[stride, stride], pads=pads)

    y, hw, cin = x, 416, 3
    for i, c in enumerate([16, 32, 64, 128, 256]):
        y = conv(y, cin, c, 3, hw, "/backbone/conv%d" % i)
        if c == 256:
            route26 = y  # 26x26x256, read again by the second head
        y = pool(y, "/backbone/pool%d" % i)
        cin, hw = c, hw // 2
    y = conv(y, 256, 512, 3, 13, "/backbone/conv5")
    y = pool(y, "/backbone/pool5", stride=1)
    y = conv(y, 512, 1024, 3, 13, "/backbone/conv6")
    neck = conv(y, 1024, 256, 1, 13, "/head13/conv0")
    h = conv(neck, 256, 512, 3, 13, "/head13/conv1")
    out13 = conv(h, 512, 3 * (5 + classes), 1, 13, "/head13/out", bn=False)
    u = conv(neck, 256, 128, 1, 13, "/head26/conv0")
    u = b.node("Resize", [u, "", b.const_f("scales", [1.0, 1.0, 2.0, 2.0], shape=[4])], "/head26/Resize", mode="nearest")
    u = b.node("Concat", [u, route26], "/head26/Concat", axis=1)
    h = conv(u, 384, 256, 3, 26, "/head26/conv1")
    out26 = conv(h, 256, 3 * (5 + classes), 1, 26, "/head26/out", bn=False)

    no = 5 + classes
    bs = shape_dims(b, x, "/decode", [0])[0]
    preds = []
    for head, (p, g, stride) in enumerate([(out13, 13, 32), (out26, 26, 16)]):
        q = "/decode/head%d" % head
        t = b.node("Reshape", [p, b.node("Concat", [bs, b.const_i64("grid", [3, no, g, g])], q + "/Concat", axis=0)],
                   q + "/Reshape")
        t = b.node("Transpose", [t], q + "/Transpose", perm=[0, 1, 3, 4, 2])  # [batch, 3, g, g, 85]
        def part(lo, hi, tag):
            return b.node("Slice", [t, b.const_i64("lo", [lo]), b.const_i64("hi", [hi]), b.const_i64("ax4", [4])],
                          q + "/Slice_" + tag)
        grid = b.const_f("grid_xy", [float(v) for j in range(g) for i in range(g) for v in (i, j)], shape=[1, 1, g, g, 2])
        anchors = b.const_f("anchor_wh", [float(v) for a in YOLO_TINY_ANCHORS[head] for v in a], shape=[1, 3, 1, 1, 2])
        xy = b.node("Mul", [b.node("Add", [b.node("Sigmoid", [part(0, 2, "xy")], q + "/Sigmoid"), grid], q + "/Add"),
                            b.const_f("stride", [float(stride)])], q + "/Mul")
        wh = b.node("Mul", [b.node("Exp", [part(2, 4, "wh")], q + "/Exp"), anchors], q + "/Mul_1")
        conf = b.node("Sigmoid", [part(4, no, "conf")], q + "/Sigmoid_1")
        t = b.node("Concat", [xy, wh, conf], q + "/Concat_1", axis=4)
        preds.append(b.node("Reshape", [t, b.node("Concat", [bs, b.const_i64("rows", [3 * g * g, no])], q + "/Concat_2",
                                                    axis=0)], q + "/Reshape_1"))
    pred = b.node("Concat", preds, "/decode/Concat", axis=1)  # [batch, 2535, 85]

    def cut(lo, hi, tag):
        return b.node("Slice", [pred, b.const_i64("lo", [lo]), b.const_i64("hi", [hi]), b.const_i64("ax2", [2])],
                      "/post/Slice_" + tag)
    xy, wh = cut(0, 2, "xy"), cut(2, 4, "wh")
    half = b.node("Mul", [wh, b.const_f("half", [0.5])], "/post/Mul")
    boxes = b.node("Concat", [b.node("Sub", [xy, half], "/post/Sub"), b.node("Add", [xy, half], "/post/Add")],
                   "/post/Concat", axis=2)                                                        # [batch, 2535, 4]
    scores = b.node("Mul", [cut(5, no, "cls"), cut(4, 5, "obj")], "/post/Mul_1")                # [batch, 2535, 80]
    best = b.node("ReduceMax", [scores], "/post/ReduceMax", axes=[2], keepdims=0)               # [batch, 2535]
    _, top = b.node("TopK", [best, b.const_i64("k", [pre_top_k])], "/post/TopK", n_out=2, axis=1, largest=1, sorted=1)
    top = b.node("Unsqueeze", [top, b.const_i64("axm1", [-1])], "/post/Unsqueeze")              # [batch, k, 1]
    b.node("GatherND", [boxes, top], "/post/GatherND", outputs=["boxes"], batch_dims=1)         # [batch, k, 4]
    top_scores = b.node("GatherND", [scores, top], "/post/GatherND_1", batch_dims=1)            # [batch, k, 80]
    b.node("Transpose", [top_scores], "/post/Transpose", outputs=["scores"], perm=[0, 2, 1])   # [batch, 80, k]
    b.node("NonMaxSuppression", ["boxes", "scores", b.const_i64("max_out", [100]), b.const_f("iou", [0.45], shape=[1]),
                                 b.const_f("score", [0.25], shape=[1])], "/post/NonMaxSuppression",
           outputs=["selected_indices"], center_point_box=0)
    b.output("boxes", FLOAT, ["batch", pre_top_k, 4])
    b.output("scores", FLOAT, ["batch", classes, pre_top_k])
    b.output("selected_indices", INT64, ["selected", 3])
    return b, "YOLOv3-tiny (darknet), 416x416, 80 classes, with box decoding, pre-NMS TopK and NonMaxSuppression, zero weights"


# ------------------------------------------------------------------ recurrent

def lstm_seq2seq(out_dir):
    """An NMT-style LSTM seq2seq: 2-layer encoder (bidirectional, then forward), a decoder
    started from the encoder's final state, and a 32000-way output layer; 32 steps each side."""
    T, E, Hh, V = 32, 512, 512, 32000
    b = Builder("lstm_seq2seq", 14)
    src = b.input("src_ids", INT64, ["batch", T])
    tgt = b.input("tgt_ids", INT64, ["batch", T])
    def embed(ids, name):
        e = b.node("Gather", [b.weight(name + ".weight", [V, E]), ids], "/" + name + "/Gather")
        return b.node("Transpose", [e], "/" + name + "/Transpose", perm=[1, 0, 2])  # [T, batch, E]
    def lstm(x, din, name, dirs, init=None):
        G = 4 * Hh
        ins = [x, b.weight(name + ".W", [dirs, G, din]), b.weight(name + ".R", [dirs, G, Hh]),
               b.weight(name + ".B", [dirs, 2 * G]), ""]
        if init:
            ins += list(init)
        outs = [name + "/Y", name + "/Y_h", name + "/Y_c"]
        b.nodes.append(helper.make_node("LSTM", ins, outs, name=name + "/LSTM", hidden_size=Hh,
                                        direction="bidirectional" if dirs == 2 else "forward"))
        b.macs += dirs * T * G * (din + Hh)
        return outs
    x = embed(src, "encoder.embedding")
    y1, _, _ = lstm(x, E, "/encoder/lstm_l0", 2)
    y1 = b.node("Transpose", [y1], "/encoder/Transpose", perm=[0, 2, 1, 3])  # [T, batch, 2, H]
    y1 = b.node("Reshape", [y1, b.const_i64("shape", [T, -1, 2 * Hh])], "/encoder/Reshape")
    _, h, c = lstm(y1, 2 * Hh, "/encoder/lstm_l1", 1)
    x = embed(tgt, "decoder.embedding")
    y, _, _ = lstm(x, E, "/decoder/lstm", 1, init=(h, c))
    y = b.node("Squeeze", [y, b.const_i64("axis1", [1])], "/decoder/Squeeze")  # [T, batch, H]
    y = b.node("Transpose", [y], "/decoder/Transpose", perm=[1, 0, 2])  # [batch, T, H]
    w = b.weight("generator.weight", [Hh, V])
    y = b.node("MatMul", [y, w], "/generator/MatMul")
    b.macs += T * Hh * V
    b.node("Add", [y, b.weight("generator.bias", [V])], "/generator/Add", outputs=["logits"])
    b.output("logits", FLOAT, ["batch", T, V])
    return b, "LSTM seq2seq (NMT-style), 32 source and 32 target steps, hidden 512, vocab 32000, zero weights"


MODELS = {
    "resnet50": resnet50,
    "mobilenet_v2": mobilenet_v2,
    "bert_base": bert_base,
    "gpt2_prefill": lambda out: gpt2(out, False),
    "gpt2_decode": lambda out: gpt2(out, True),
    "lstm_seq2seq": lstm_seq2seq,
    "llama2_7b_prefill": lambda out: llama(out, "llama2_7b", False),
    "llama2_7b_decode": lambda out: llama(out, "llama2_7b", True),
    "llama_tiny_prefill": lambda out: llama(out, "llama_tiny", False),
    "llama_tiny_decode": lambda out: llama(out, "llama_tiny", True),
    "vit_b16": vit_b16,
    "yolov3_tiny": yolov3_tiny,
}


# Written only when named: 27 GB (sparse) of weights each.
ON_DEMAND = {"llama2_7b_prefill", "llama2_7b_decode"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", help="models to write (default: all but %s): %s" % (
        ", ".join(sorted(ON_DEMAND)), ", ".join(MODELS)))
    ap.add_argument("--out", default="build/workloads/onnx", help="output directory")
    ap.add_argument("--list", action="store_true", help="print the models and their MACs per sample, write nothing")
    args = ap.parse_args()
    names = args.models or [n for n in MODELS if n not in ON_DEMAND]
    for n in names:
        if n not in MODELS:
            ap.error("unknown model '%s'; models: %s" % (n, ", ".join(MODELS)))
    if not args.list:
        os.makedirs(args.out, exist_ok=True)
    if args.list and not args.models:
        names = list(MODELS)
    for n in names:
        b, doc = MODELS[n](args.out)
        if args.list:
            print("%-14s %16d MACs/sample  %s" % (n, b.macs, doc))
            continue
        path = b.save(args.out, doc)
        print("%s: %d nodes, %d MACs/sample, %.1f MB of (sparse) weights" % (path, len(b.nodes), b.macs, b.data_offset / 1e6))


if __name__ == "__main__":
    sys.exit(main())
