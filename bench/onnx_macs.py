#!/usr/bin/python3
"""Independent MAC counter for ONNX models (Debian's python3-onnx + numpy; no Tessera code).

Used by bench/onnx_corpus.py to check the MAC count Tessera reports for real exported models.
MACs (multiply-accumulates) are counted for the matrix ops only, as Tessera does; element-wise
ops, normalisations, pools and biases count 0:

    Conv          N · prod(output spatial) · C_out · (C_in / group) · prod(kernel)
    ConvTranspose N · prod(input spatial) · C_in · (C_out / group) · prod(kernel)
    MatMul        prod(broadcast batch dims) · M · K · N   (1-D operands as in numpy)
    Gemm          M · K · N
    LSTM / GRU / RNN   directions · T · N · gates · hidden · (input + hidden)  (4 / 3 / 1 gates)
    Einsum        two operands with a contraction: the product of every index's size
    QLinearConv, ConvInteger        as Conv;   QLinearMatMul, MatMulInteger   as MatMul

How the shapes are found:

1. Every graph input gets a static shape: `shapes={name: [d0, d1, ...]}` for whole inputs,
   `dims={dim_param: value}` for named dimensions, and a dynamic dimension 0 left over is the
   batch, 1. Anything still unbound is an error naming it. `values={name: number or array}` gives
   an input a value (e.g. a sample rate `sr=16000`): it becomes a constant.
2. ONNX shape inference (`onnx.shape_inference.infer_shapes`, with data propagation), then a small
   numpy evaluator folds every node whose inputs are known and small (shape arithmetic: Shape,
   Gather, Concat, Equal, Cast, ...), replacing it by a Constant, so shapes that depend on it
   become static on the next pass.
3. An `If` whose condition folds is replaced by the nodes of the branch it takes (values renamed
   apart); repeat from 2 until nothing changes.
4. MACs per node from the inferred shapes. An `If` whose condition stays data-dependent counts
   the larger of its two branches (noted), a `Loop` its body times a constant trip count, a `Scan`
   its body times the scanned length. A matrix node whose shapes stay unknown is reported in
   `unresolved` (and counts 0), never guessed.

    /usr/bin/python3 bench/onnx_macs.py model.onnx --shape input=1,512 --value sr=16000
"""
import argparse
import collections
import copy
import dataclasses
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

MATRIX_OPS = {"Conv", "ConvTranspose", "MatMul", "Gemm", "LSTM", "GRU", "RNN", "Einsum",
              "QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger"}
SMALL = 1 << 16        # the evaluator folds values of at most this many elements


@dataclasses.dataclass
class MacCount:
    total: int = 0
    by_op: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    nodes: list = dataclasses.field(default_factory=list)        # (node name, op, macs)
    unresolved: list = dataclasses.field(default_factory=list)   # "name (op): why"
    notes: list = dataclasses.field(default_factory=list)
    folded_ifs: int = 0

    def add(self, name, op, macs):
        self.total += macs
        self.by_op[op] += macs
        self.nodes.append((name, op, macs))

    def merge(self, other, times=1):
        self.total += other.total * times
        for k, v in other.by_op.items():
            self.by_op[k] += v * times
        self.nodes += [(n, o, m * times) for n, o, m in other.nodes]
        self.unresolved += other.unresolved
        self.notes += other.notes
        self.folded_ifs += other.folded_ifs


class CounterError(Exception):
    pass


# ---------------------------------------------------------------- binding the inputs

def np_dtype(elem_type):
    """numpy dtype of an ONNX TensorProto element type (onnx 1.12 and later)."""
    if hasattr(helper, "tensor_dtype_to_np_dtype"):
        return helper.tensor_dtype_to_np_dtype(elem_type)
    return onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[elem_type]


def bind_inputs(model, shapes=None, dims=None, values=None):
    """Give every graph input a static shape; inputs with a value become initializers."""
    shapes = dict(shapes or {})
    dims = dict(dims or {})
    values = dict(values or {})
    g = model.graph
    inits = {t.name for t in g.initializer}
    unbound = []
    for inp in list(g.input):
        if inp.name in inits:
            continue
        if inp.name in values:
            tt = inp.type.tensor_type
            arr = np.asarray(values.pop(inp.name), dtype=np_dtype(tt.elem_type))
            if tt.HasField("shape") and len(tt.shape.dim) != arr.ndim:
                arr = arr.reshape([d.dim_value if d.dim_value > 0 else 1 for d in tt.shape.dim])
            g.initializer.append(numpy_helper.from_array(arr, inp.name))
            g.input.remove(inp)
            continue
        dl = inp.type.tensor_type.shape.dim
        if inp.name in shapes:
            want = list(shapes.pop(inp.name))
            if len(want) != len(dl):
                raise CounterError(f"input '{inp.name}' has rank {len(dl)}, binding gives {len(want)} dims")
            for d, v in zip(dl, want):
                if d.dim_value > 0 and d.dim_value != v:
                    raise CounterError(f"input '{inp.name}': dimension is {d.dim_value}, binding says {v}")
                if d.dim_param:
                    dims.setdefault(d.dim_param, v)
                d.dim_value = int(v)
    for inp in g.input:
        if inp.name in inits:
            continue
        for k, d in enumerate(inp.type.tensor_type.shape.dim):
            if d.dim_value > 0:
                continue
            if d.dim_param and d.dim_param in dims:
                d.dim_value = int(dims[d.dim_param])
            elif k == 0:
                d.dim_value = 1          # the batch
            else:
                unbound.append(f"'{inp.name}' dim {k}" + (f" ('{d.dim_param}')" if d.dim_param else ""))
    if shapes or values:
        raise CounterError(f"no such graph input(s): {sorted(list(shapes) + list(values))}")
    if unbound:
        raise CounterError("dynamic dimension(s) left unbound: " + ", ".join(unbound))


# ---------------------------------------------------------------- shapes

def _dims(t):
    if not t.type.HasField("tensor_type") or not t.type.tensor_type.HasField("shape"):
        return None
    out = []
    for d in t.type.tensor_type.shape.dim:
        if d.dim_value > 0 or (d.HasField("dim_value") and not d.dim_param):
            out.append(d.dim_value)
        else:
            return None
    return out


def shape_table(graph, outer=None):
    table = dict(outer or {})
    for t in graph.initializer:
        table[t.name] = list(t.dims)
    for coll in (graph.input, graph.value_info, graph.output):
        for v in coll:
            s = _dims(v)
            if s is not None:
                table[v.name] = s
    for n in graph.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    table[n.output[0]] = list(a.t.dims)
    return table


def infer(model):
    try:
        return shape_inference.infer_shapes(model, check_type=False, strict_mode=False, data_prop=False)
    except TypeError:   # older onnx
        return shape_inference.infer_shapes(model)


# ---------------------------------------------------------------- a small constant evaluator

def _attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _axes(node, vals, idx, attr="axes"):
    if len(node.input) > idx and node.input[idx]:
        return [int(x) for x in np.asarray(vals[node.input[idx]]).reshape(-1)]
    a = _attr(node, attr)
    return None if a is None else [int(x) for x in a]


def evaluate(node, vals, shapes, opset):
    """Value(s) of a node whose inputs are known, or None when this evaluator cannot."""
    op = node.op_type
    x = [vals.get(i) if i else None for i in node.input]
    if op == "Shape":
        s = shapes.get(node.input[0])
        if s is None:
            return None
        s = np.array(s, dtype=np.int64)
        start, end = _attr(node, "start", 0), _attr(node, "end", None)
        return [s[start:end]]
    if op == "Size":
        s = shapes.get(node.input[0])
        return None if s is None else [np.array(int(np.prod(s)), dtype=np.int64)]
    if op == "Constant":
        for a in node.attribute:
            v = helper.get_attribute_value(a)
            if a.name == "value":
                return [numpy_helper.to_array(v)]
            if a.name in ("value_int", "value_float"):
                return [np.array(v, dtype=np.int64 if a.name == "value_int" else np.float32)]
            if a.name in ("value_ints", "value_floats"):
                return [np.array(v, dtype=np.int64 if a.name == "value_ints" else np.float32)]
        return None
    if op == "ConstantOfShape":
        if x[0] is None:
            return None
        t = _attr(node, "value")
        fill = numpy_helper.to_array(t).reshape(-1)[0] if t is not None else np.float32(0)
        n = int(np.prod(x[0])) if x[0].size else 1
        if n > SMALL:
            return None
        return [np.full([int(d) for d in x[0]], fill, dtype=np.asarray(fill).dtype)]
    if any(v is None for i, v in zip(node.input, x) if i):
        return None
    ew = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Equal": np.equal,
          "Greater": np.greater, "Less": np.less, "GreaterOrEqual": np.greater_equal,
          "LessOrEqual": np.less_equal, "And": np.logical_and, "Or": np.logical_or,
          "Xor": np.logical_xor, "Max": np.maximum, "Min": np.minimum, "Pow": np.power}
    un = {"Neg": np.negative, "Not": np.logical_not, "Abs": np.abs, "Floor": np.floor,
          "Ceil": np.ceil, "Sqrt": np.sqrt, "Reciprocal": np.reciprocal, "Sign": np.sign,
          "Identity": lambda a: a}
    if op in ew and len(x) == 2:
        r = ew[op](x[0], x[1])
        return [r.astype(x[0].dtype) if op not in ("Equal", "Greater", "Less", "GreaterOrEqual",
                                                   "LessOrEqual", "And", "Or", "Xor") else r]
    if op in ("Max", "Min") and len(x) > 2:
        r = x[0]
        for v in x[1:]:
            r = ew[op](r, v)
        return [r]
    if op in un:
        return [np.asarray(un[op](x[0])).astype(x[0].dtype) if op != "Not" else np.logical_not(x[0])]
    if op == "Div":
        if np.issubdtype(x[0].dtype, np.integer):
            return [np.trunc(x[0] / x[1]).astype(x[0].dtype)]
        return [(x[0] / x[1]).astype(x[0].dtype)]
    if op == "Mod":
        return [np.fmod(x[0], x[1]) if _attr(node, "fmod", 0) else np.mod(x[0], x[1])]
    if op == "Cast":
        return [np.asarray(x[0]).astype(np_dtype(_attr(node, "to")))]
    if op == "Gather":
        return [np.take(x[0], x[1].astype(np.int64), axis=_attr(node, "axis", 0))]
    if op == "Unsqueeze":
        axes = _axes(node, vals, 1)
        r = x[0]
        rank = r.ndim + len(axes)
        for a in sorted(a % rank for a in axes):
            r = np.expand_dims(r, a)
        return [r]
    if op == "Squeeze":
        axes = _axes(node, vals, 1)
        if axes is None:
            return [np.squeeze(x[0])]
        return [np.squeeze(x[0], axis=tuple(a % x[0].ndim for a in axes))]
    if op == "Concat":
        return [np.concatenate([np.atleast_1d(v) for v in x], axis=_attr(node, "axis", 0))]
    if op == "Reshape":
        shape = [int(s) for s in x[1]]
        shape = [x[0].shape[k] if s == 0 and not _attr(node, "allowzero", 0) else s
                 for k, s in enumerate(shape)]
        return [x[0].reshape(shape)]
    if op == "Flatten":
        a = _attr(node, "axis", 1) % max(x[0].ndim, 1)
        return [x[0].reshape(int(np.prod(x[0].shape[:a])), -1)]
    if op == "Transpose":
        return [np.transpose(x[0], _attr(node, "perm"))]
    if op == "Slice":
        if opset < 10:
            starts, ends, axes = _attr(node, "starts"), _attr(node, "ends"), _attr(node, "axes")
            steps = None
        else:
            starts, ends = list(x[1]), list(x[2])
            axes = list(x[3]) if len(x) > 3 and x[3] is not None else None
            steps = list(x[4]) if len(x) > 4 and x[4] is not None else None
        axes = axes if axes is not None else list(range(len(starts)))
        steps = steps or [1] * len(starts)
        sl = [slice(None)] * x[0].ndim
        for s, e, a, st in zip(starts, ends, axes, steps):
            n = x[0].shape[int(a)]
            s, e, st = int(s), int(e), int(st)
            s = max(-n - 1, min(n, s)) if s < 0 else min(s, n)
            e = max(-n - 1, min(n, e)) if e < 0 else min(e, n)
            if st < 0 and e < -n:
                e = None      # runs through index 0
            sl[int(a)] = slice(s, e, st)
        return [x[0][tuple(sl)]]
    if op == "Range":
        return [np.arange(x[0], x[1], x[2]).astype(x[0].dtype)]
    if op == "Where":
        return [np.where(x[0], x[1], x[2])]
    if op == "Expand":
        return [x[0] * np.ones([int(d) for d in x[1]], dtype=x[0].dtype)]
    if op in ("ReduceProd", "ReduceSum", "ReduceMax", "ReduceMin"):
        axes = _axes(node, vals, 1)
        fn = {"ReduceProd": np.prod, "ReduceSum": np.sum, "ReduceMax": np.max, "ReduceMin": np.min}[op]
        keep = bool(_attr(node, "keepdims", 1))
        return [np.asarray(fn(x[0], axis=None if axes is None else tuple(axes), keepdims=keep))]
    return None


def _opset(model):
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return 1


def _subgraphs(node):
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            yield a.name, a.g
        for g in a.graphs:
            yield a.name, g


def fold_pass(model, folded_ops=None):
    """Evaluate known values, replace them by Constant nodes, inline If nodes with a known
    condition. Returns (changes, Ifs inlined)."""
    g = model.graph
    opset = _opset(model)
    shapes = shape_table(g)
    vals = {}
    for t in g.initializer:
        if np.prod(t.dims) <= SMALL:
            vals[t.name] = numpy_helper.to_array(t)
    changes = ifs = 0
    new_nodes = []
    taken = set()
    for n in g.node:
        names = {v for v in list(n.input) + list(n.output)}
        taken |= names
    counter = [0]

    def fresh(prefix):
        while True:
            counter[0] += 1
            name = f"{prefix}__inl{counter[0]}"
            if name not in taken:
                taken.add(name)
                return name

    graph_outputs = {o.name for o in g.output}
    for n in g.node:
        if n.op_type == "If":
            c = vals.get(n.input[0])
            if c is not None and np.asarray(c).size == 1:
                branch = _attr(n, "then_branch" if bool(np.asarray(c).reshape(-1)[0]) else "else_branch")
                new_nodes += inline_branch(n, branch, fresh)
                changes += 1
                ifs += 1
                continue
            new_nodes.append(n)
            continue
        if n.op_type != "Constant" and not any(True for _ in _subgraphs(n)):
            r = evaluate(n, vals, shapes, opset)
            outs = [o for o in n.output if o]
            if r is not None and len(r) == len(outs) and all(np.asarray(v).size <= SMALL for v in r):
                for o, v in zip(outs, r):
                    vals[o] = np.asarray(v)
                if any(o in graph_outputs for o in outs):
                    new_nodes.append(n)          # a graph output stays what it is
                    continue
                if folded_ops is not None:
                    folded_ops[n.op_type] += 1
                for o in outs:
                    new_nodes.append(helper.make_node("Constant", [], [o], name=(n.name or o) + "/folded",
                                                      value=numpy_helper.from_array(vals[o], o)))
                changes += 1
                continue
        elif n.op_type == "Constant":
            r = evaluate(n, vals, shapes, opset)
            if r is not None:
                vals[n.output[0]] = np.asarray(r[0])
        new_nodes.append(n)
    del g.node[:]
    g.node.extend(new_nodes)
    return changes, ifs


def inline_branch(if_node, branch, fresh):
    """The nodes of `branch` with the values it defines renamed apart, its outputs renamed to the
    If node's outputs; its initializers become Constant nodes."""
    rename = {}
    for t in branch.initializer:
        rename[t.name] = fresh(t.name)
    for n in branch.node:
        for o in n.output:
            if o:
                rename[o] = fresh(o)
    out_nodes = []
    for t in branch.initializer:
        t2 = copy.deepcopy(t)
        t2.name = rename[t.name]
        out_nodes.append(helper.make_node("Constant", [], [t2.name], name=t2.name + "/init", value=t2))
    for n in branch.node:
        n2 = copy.deepcopy(n)
        del n2.input[:]
        n2.input.extend([rename.get(i, i) for i in n.input])
        del n2.output[:]
        n2.output.extend([rename.get(o, o) for o in n.output])
        _rename_in_subgraphs(n2, rename)
        out_nodes.append(n2)
    for bo, io in zip(branch.output, if_node.output):
        if io:
            out_nodes.append(helper.make_node("Identity", [rename.get(bo.name, bo.name)], [io],
                                              name=(if_node.name or io) + "/taken"))
    return out_nodes


def _rename_in_subgraphs(node, rename):
    for _, sg in _subgraphs(node):
        local = {t.name for t in sg.initializer} | {i.name for i in sg.input}
        for n in sg.node:
            local |= set(n.output)
        for n in sg.node:
            ins = [i if i in local else rename.get(i, i) for i in n.input]
            del n.input[:]
            n.input.extend(ins)
            _rename_in_subgraphs(n, {k: v for k, v in rename.items() if k not in local})
        for o in sg.output:
            if o.name not in local and o.name in rename:
                o.name = rename[o.name]


def toposort(graph):
    """Order the nodes so each comes after the producers of its inputs (some converters append
    nodes, e.g. the float16 converter's input Casts, at the end; shape inference reads in order)."""
    known = {t.name for t in graph.initializer} | {i.name for i in graph.input}
    pending = list(graph.node)
    order = []
    outer = set()
    for n in pending:      # names used but never produced in this graph come from an outer scope
        for i in n.input:
            outer.add(i)
    produced = {o for n in pending for o in n.output}
    known |= {i for i in outer if i not in produced} | {""}
    while pending:
        rest = []
        for n in pending:
            needs = set(n.input)
            for _, sg in _subgraphs(n):
                needs |= _free_names(sg)
            if needs <= known:
                order.append(n)
                known.update(n.output)
            else:
                rest.append(n)
        if len(rest) == len(pending):
            raise CounterError("graph has a cycle or undefined values: " +
                               ", ".join(sorted(set().union(*(set(n.input) for n in rest)) - known))[:300])
        pending = rest
    del graph.node[:]
    graph.node.extend(order)


def _free_names(graph):
    local = {t.name for t in graph.initializer} | {i.name for i in graph.input}
    used = set()
    for n in graph.node:
        local.update(n.output)
    for n in graph.node:
        used.update(n.input)
        for _, sg in _subgraphs(n):
            used |= _free_names(sg)
    used |= {o.name for o in graph.output}
    return used - local - {""}


def prepare(model, shapes=None, dims=None, values=None, max_passes=50, folded_ops=None):
    """Bind inputs, then alternate shape inference and folding until nothing changes.
    Returns (the model, the number of If nodes inlined); `folded_ops`, a Counter, receives the op
    types of the nodes folded to constants."""
    m = copy.deepcopy(model)
    bind_inputs(m, shapes, dims, values)
    toposort(m.graph)
    folded_ifs = 0
    for _ in range(max_passes):
        del m.graph.value_info[:]
        m = infer(m)
        changes, ifs = fold_pass(m, folded_ops)
        folded_ifs += ifs
        if not changes:
            break
    del m.graph.value_info[:]
    m = infer(m)
    return m, folded_ifs


# ---------------------------------------------------------------- MACs per node

def _conv_macs(x, w, y):
    # x [N, C, spatial...], w [M, C/group, k...], y [N, M, out spatial...]
    return int(y[0] * int(np.prod(y[2:])) * w[0] * int(np.prod(w[1:])))


def _convT_macs(x, w, group):
    # x [N, C, spatial...], w [C, M/group, k...]
    return int(x[0] * int(np.prod(x[2:])) * x[1] * w[1] * int(np.prod(w[2:])))


def _matmul_macs(a, b):
    a, b = list(a), list(b)
    if len(a) == 1:
        a = [1] + a
    if len(b) == 1:
        b = b + [1]
    m, k, n = a[-2], a[-1], b[-1]
    batch = np.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2])) if (len(a) > 2 or len(b) > 2) else ()
    return int(np.prod(batch, dtype=np.int64)) * m * k * n


def node_macs(node, shapes, model_opset=13):
    """MACs of one node from the shapes of its inputs/outputs; None when a needed shape is unknown."""
    op = node.op_type
    s = lambda i: shapes.get(node.input[i]) if len(node.input) > i and node.input[i] else None
    so = lambda i: shapes.get(node.output[i]) if len(node.output) > i and node.output[i] else None
    if op in ("Conv", "ConvInteger"):
        x, w, y = s(0), s(1), so(0)
        return None if None in (x, w, y) else _conv_macs(x, w, y)
    if op == "QLinearConv":
        x, w, y = s(0), s(3), so(0)
        return None if None in (x, w, y) else _conv_macs(x, w, y)
    if op == "ConvTranspose":
        x, w = s(0), s(1)
        return None if None in (x, w) else _convT_macs(x, w, _attr(node, "group", 1))
    if op in ("MatMul", "MatMulInteger"):
        a, b = s(0), s(1)
        return None if None in (a, b) else _matmul_macs(a, b)
    if op == "QLinearMatMul":
        a, b = s(0), s(3)
        return None if None in (a, b) else _matmul_macs(a, b)
    if op == "Gemm":
        a, b = s(0), s(1)
        if None in (a, b):
            return None
        m, k = (a[1], a[0]) if _attr(node, "transA", 0) else (a[0], a[1])
        n = b[0] if _attr(node, "transB", 0) else b[1]
        return int(m * k * n)
    if op in ("LSTM", "GRU", "RNN"):
        x, w, r = s(0), s(1), s(2)
        if None in (x, w, r):
            return None
        gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
        hidden = _attr(node, "hidden_size") or r[2]
        dirs = w[0]
        if _attr(node, "layout", 0):
            n, t = x[0], x[1]
        else:
            t, n = x[0], x[1]
        return int(dirs * t * n * gates * hidden * (x[2] + hidden))
    if op == "Einsum":
        eq = _attr(node, "equation")
        eq = eq.decode() if isinstance(eq, bytes) else eq
        lhs = eq.replace(" ", "").split("->")[0].split(",")
        if len(lhs) != 2:
            return 0
        ins = [s(0), s(1)]
        if None in ins:
            return None
        size = {}
        for term, shape in zip(lhs, ins):
            if "..." in term:
                k = len(shape) - (len(term) - 3)
                term = "".join(chr(0x100 + j) for j in range(k)) + term.replace("...", "")
            for c, d in zip(term, shape):
                size[c] = max(size.get(c, 1), d)
        out = eq.replace(" ", "").split("->")[1] if "->" in eq else None
        contracted = set(lhs[0]) & set(lhs[1]) - set(out or "")
        if out is not None and not contracted:
            return 0            # element-wise / outer product: no accumulation
        return int(np.prod(list(size.values()), dtype=np.int64))
    return 0


def count_graph(graph, outer_shapes, model, result, prefix=""):
    shapes = shape_table(graph, outer_shapes)
    vals = {t.name: numpy_helper.to_array(t) for t in graph.initializer if np.prod(t.dims) <= 16}
    for n in graph.node:
        if n.op_type == "Constant":
            r = evaluate(n, vals, shapes, _opset(model))
            if r is not None:
                vals[n.output[0]] = np.asarray(r[0])
    for n in graph.node:
        name = prefix + (n.name or n.output[0])
        if n.op_type == "If":
            branches = []
            for key in ("then_branch", "else_branch"):
                sub = MacCount()
                count_graph(_attr(n, key), shapes, model, sub, prefix=name + "/" + key + "/")
                branches.append(sub)
            big = max(branches, key=lambda b: b.total)
            result.merge(big)
            result.notes.append(f"{name}: data-dependent If, counted the larger branch "
                                f"({branches[0].total:,} vs {branches[1].total:,} MACs)")
            continue
        if n.op_type == "Loop":
            m = vals.get(n.input[0]) if n.input and n.input[0] else None
            body = _attr(n, "body")
            sub = MacCount()
            count_graph(body, shapes, model, sub, prefix=name + "/body/")
            if m is None:
                result.unresolved.append(f"{name} (Loop): trip count not known at import time")
                result.merge(sub, 1)
            else:
                result.merge(sub, int(np.asarray(m).reshape(-1)[0]))
                result.notes.append(f"{name}: Loop body x {int(np.asarray(m).reshape(-1)[0])}")
            continue
        if n.op_type == "Scan":
            body = _attr(n, "body")
            sub = MacCount()
            count_graph(body, shapes, model, sub, prefix=name + "/body/")
            nscan = _attr(n, "num_scan_inputs")
            first_scan = shapes.get(n.input[len(n.input) - nscan])
            axes = _attr(n, "scan_input_axes") or [0] * nscan
            if first_scan is None:
                result.unresolved.append(f"{name} (Scan): scan length unknown")
                result.merge(sub, 1)
            else:
                result.merge(sub, first_scan[axes[0]])
            continue
        macs = node_macs(n, shapes)
        if macs is None:
            if n.op_type in MATRIX_OPS:
                result.unresolved.append(f"{name} ({n.op_type}): shape unknown")
            continue
        if macs or n.op_type in MATRIX_OPS:
            result.add(name, n.op_type, macs)


def count_macs(model, shapes=None, dims=None, values=None):
    """MacCount of a model (an onnx.ModelProto or a path) with its inputs bound."""
    if not isinstance(model, onnx.ModelProto):
        model = onnx.load(model)
    m, folded = prepare(model, shapes, dims, values)
    result = MacCount()
    result.folded_ifs = folded
    count_graph(m.graph, {}, m, result)
    return result


def _parse_kv(items, ints=True):
    out = {}
    for it in items or []:
        k, v = it.split("=", 1)
        if ints:
            out[k] = [int(x) for x in v.split(",")]
        else:
            out[k] = float(v) if "." in v else int(v)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--shape", action="append", help="NAME=d0,d1,... (a whole input)")
    ap.add_argument("--dim", action="append", help="DIM_PARAM=value")
    ap.add_argument("--value", action="append", help="NAME=number: a graph input's value")
    ap.add_argument("--nodes", action="store_true", help="list every matrix node")
    a = ap.parse_args(argv)
    dims = {k: v[0] for k, v in _parse_kv(a.dim).items()}
    r = count_macs(a.model, _parse_kv(a.shape), dims, _parse_kv(a.value, ints=False))
    if a.nodes:
        for name, op, macs in r.nodes:
            print(f"{macs:>16,}  {op:<14} {name}")
    print(f"total {r.total:,} MACs  ({', '.join(f'{k} {v:,}' for k, v in r.by_op.most_common())})")
    for n in r.notes:
        print("note:", n)
    for u in r.unresolved:
        print("unresolved:", u)
    return 1 if r.unresolved else 0


if __name__ == "__main__":
    sys.exit(main())
