#!/usr/bin/env python3
"""Measure a GPU with PyTorch on the shapes of Tessera's workload library.

The figures are the *measured* side of the GPU baseline check (docs/baselines.md,
"Measured: the H200 against its spec"): bench/gpu_baseline_check.py runs Tessera's analytic
baseline model (configs/baselines/h200.yaml) on the same workloads and puts both side by
side. This script needs a CUDA GPU and PyTorch; nothing in the build or the tests runs it.

What it measures (eager PyTorch, as users run a model; inference mode; weights random):
  - micro: framework overhead per small kernel, device-memory copy bandwidth;
  - GEMMs: bf16 (and int8 through torch._int_mm where PyTorch has it) over a grid of
    m x k x n that covers the workloads' matrix layers;
  - models (each timed eager, and replayed as one CUDA graph: the device time without the
    framework's per-kernel host overhead), written here to the shapes of workloads/onnx/generate_models.py:
    ResNet-50 (torchvision, batch 1 and 64), ViT-B/16 (torchvision, batch 1),
    BERT-base (batch 32, sequence 128), Llama-2-7B (prefill of 512 and 2,048 tokens, one
    decode step against a KV cache of 512 and 2,048 tokens, batch 1), all in bf16.
Each figure is the median of `--repeat` timed runs (CUDA events) after warm-up runs.

Usage: python3 bench/gpu_measure.py --out gpu.json [--quick]   (--quick: tiny shapes, CPU ok)
"""

import argparse
import json
import math
import platform
import statistics
import subprocess
import time

import torch
import torch.nn.functional as F


def now_ms(dev):
    if dev.type == "cuda":
        e = torch.cuda.Event(enable_timing=True)
        e.record()
        return e
    return time.perf_counter()


def elapsed_ms(dev, a, b):
    if dev.type == "cuda":
        torch.cuda.synchronize()
        return a.elapsed_time(b)
    return (b - a) * 1e3


def timeit(dev, fn, warmup, repeat, inner=1):
    """Median (and all) of `repeat` timings of `inner` back-to-back calls of fn, per call, in ms."""
    for _ in range(warmup):
        fn()
    if dev.type == "cuda":
        torch.cuda.synchronize()
    runs = []
    for _ in range(repeat):
        a = now_ms(dev)
        for _ in range(inner):
            fn()
        b = now_ms(dev)
        runs.append(elapsed_ms(dev, a, b) / inner)
    return statistics.median(runs), runs


# ------------------------------------------------------------------ models (plain torch)

def cuda_graph(fn):
    """fn captured once as a CUDA graph; the returned callable replays it (no host overhead)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay


def rms_norm(x, w, eps=1e-5):
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps).to(x.dtype) * w


def attention(q, k, v, causal, mask=None):
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal and mask is None)
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        n, m = s.shape[-2], s.shape[-1]
        s = s + torch.full((n, m), float("-inf"), device=s.device, dtype=s.dtype).triu(m - n + 1)
    if mask is not None:
        s = s + mask
    return s.softmax(-1) @ v


class Llama:
    """Llama-style decoder (workloads/onnx/generate_models.py `llama`): RMSNorm, rotary
    embeddings, attention with A query and KV key/value heads, SwiGLU, logits of the last
    token. Weights as [in, out] matrices, random."""

    def __init__(self, dev, dtype, L, H, A, KV, F_, V, P):
        self.L, self.H, self.A, self.KV, self.d = L, H, A, KV, H // A
        g = lambda *s: torch.randn(*s, device=dev, dtype=dtype) * 0.02
        self.embed = g(V, H)
        self.layers = [dict(n1=torch.ones(H, device=dev, dtype=dtype), q=g(H, A * self.d), k=g(H, KV * self.d),
                            v=g(H, KV * self.d), o=g(H, H), n2=torch.ones(H, device=dev, dtype=dtype),
                            gate=g(H, F_), up=g(H, F_), down=g(F_, H)) for _ in range(L)]
        self.norm = torch.ones(H, device=dev, dtype=dtype)
        self.lm_head = g(H, V)
        inv = 1.0 / (10000 ** (torch.arange(0, self.d, 2, device=dev).float() / self.d))
        f = torch.outer(torch.arange(P, device=dev).float(), inv)
        emb = torch.cat([f, f], -1)
        self.cos, self.sin = emb.cos().to(dtype), emb.sin().to(dtype)

    def rotary(self, x, pos):
        c, s = self.cos[pos][None, None], self.sin[pos][None, None]
        h = x.shape[-1] // 2
        rot = torch.cat([-x[..., h:], x[..., :h]], -1)
        return x * c + rot * s

    def forward(self, ids, past=None):
        b, s = ids.shape
        past_len = past[0][0].shape[2] if past else 0
        pos = torch.arange(past_len, past_len + s, device=ids.device)
        x = self.embed[ids]
        rep = self.A // self.KV
        for i, w in enumerate(self.layers):
            h = rms_norm(x, w["n1"])
            q = (h @ w["q"]).view(b, s, self.A, self.d).transpose(1, 2)
            k = (h @ w["k"]).view(b, s, self.KV, self.d).transpose(1, 2)
            v = (h @ w["v"]).view(b, s, self.KV, self.d).transpose(1, 2)
            q, k = self.rotary(q, pos), self.rotary(k, pos)
            if past:  # the cache is read (and, as the ONNX graph's Concat, copied) every step
                k = torch.cat([past[i][0], k], 2)
                v = torch.cat([past[i][1], v], 2)
            if rep > 1:
                k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
            o = attention(q, k, v, causal=past is None)
            x = x + o.transpose(1, 2).reshape(b, s, self.H) @ w["o"]
            h = rms_norm(x, w["n2"])
            x = x + (F.silu(h @ w["gate"]) * (h @ w["up"])) @ w["down"]
        return rms_norm(x, self.norm)[:, -1] @ self.lm_head


class Bert:
    """BERT-base encoder (workloads/onnx/generate_models.py `bert_base`), post-norm, exact GELU."""

    def __init__(self, dev, dtype, L=12, H=768, A=12, F_=3072, V=30522):
        self.L, self.H, self.A = L, H, A
        g = lambda *s: torch.randn(*s, device=dev, dtype=dtype) * 0.02
        self.we, self.pe, self.te = g(V, H), g(512, H), g(2, H)
        self.ln = (torch.ones(H, device=dev, dtype=dtype), torch.zeros(H, device=dev, dtype=dtype))
        self.layers = [dict(qkv=g(H, 3 * H), bqkv=g(3 * H), o=g(H, H), bo=g(H), ln1=self.ln, i=g(H, F_), bi=g(F_),
                            out=g(F_, H), bout=g(H), ln2=self.ln) for _ in range(L)]
        self.pool, self.bpool = g(H, H), g(H)

    def forward(self, ids, mask, types):
        b, s = ids.shape
        x = self.we[ids] + self.pe[:s][None] + self.te[types]
        x = F.layer_norm(x, (self.H,), *self.ln)
        add = ((1.0 - mask[:, None, None, :].to(x.dtype)) * -10000.0)
        d = self.H // self.A
        for w in self.layers:
            q, k, v = (x @ w["qkv"] + w["bqkv"]).view(b, s, 3, self.A, d).permute(2, 0, 3, 1, 4)
            o = attention(q, k, v, causal=False, mask=add).transpose(1, 2).reshape(b, s, self.H)
            x = F.layer_norm(x + o @ w["o"] + w["bo"], (self.H,), *w["ln1"])
            h = F.gelu(x @ w["i"] + w["bi"])
            x = F.layer_norm(x + h @ w["out"] + w["bout"], (self.H,), *w["ln2"])
        return torch.tanh(x[:, 0] @ self.pool + self.bpool)


# ------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="JSON file to write")
    ap.add_argument("--quick", action="store_true", help="tiny shapes and few runs (a dry run, e.g. on a CPU)")
    ap.add_argument("--repeat", type=int, default=15, help="timed runs per figure (median reported)")
    args = ap.parse_args()

    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    quick = args.quick
    rep = 3 if quick else args.repeat
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    res = {"env": {"torch": torch.__version__, "python": platform.python_version(), "device": str(dev),
                   "dtype": str(dtype).replace("torch.", ""), "date": time.strftime("%Y-%m-%d"),
                   "repeat": rep}, "micro": {}, "gemm": [], "models": []}
    if dev.type == "cuda":
        p = torch.cuda.get_device_properties(0)
        res["env"].update(gpu=p.name, sms=p.multi_processor_count, memory_gib=round(p.total_memory / 2**30, 1),
                          cuda=torch.version.cuda)
        try:
            res["env"]["nvidia_smi"] = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,clocks.max.mem,power.limit",
                 "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout.strip()
        except Exception as e:  # the figures stand without it
            res["env"]["nvidia_smi"] = "unavailable: %s" % e
    torch.backends.cuda.matmul.allow_tf32 = False
    print(json.dumps(res["env"]), flush=True)

    with torch.inference_mode():
        # Framework + launch overhead of one small kernel, back to back (no sync between).
        t = torch.zeros(1, device=dev)
        ms, _ = timeit(dev, lambda: t.add_(1), 10, rep, inner=1000)
        res["micro"]["small_kernel_us"] = ms * 1e3
        # Device-memory copy: bytes read + written per second.
        n = (1 << 20) if quick else (1 << 30)  # elements of fp32: 4 GiB per tensor on the GPU
        src = torch.empty(n, device=dev)
        dst = torch.empty_like(src)
        ms, _ = timeit(dev, lambda: dst.copy_(src), 2, rep)
        res["micro"]["copy_gb_per_s"] = 2 * n * 4 / (ms * 1e-3) / 1e9
        del src, dst
        print(json.dumps(res["micro"]), flush=True)

        ms_list = [1, 16, 64, 128, 512, 2048, 8192] if not quick else [1, 64]
        kn = [(768, 768), (768, 3072), (3072, 768), (4096, 4096), (4096, 11008), (11008, 4096), (4096, 32000)]
        if quick:
            kn = kn[:2]
        for m in ms_list:
            for k, n_ in kn:
                a = torch.randn(m, k, device=dev, dtype=dtype)
                b = torch.randn(k, n_, device=dev, dtype=dtype)
                inner = 20 if m * k * n_ < 1e9 else 5
                ms, _ = timeit(dev, lambda: a @ b, 3, rep, inner=inner)
                res["gemm"].append(dict(m=m, k=k, n=n_, dtype=res["env"]["dtype"], ms=ms,
                                        tflops=2 * m * k * n_ / (ms * 1e-3) / 1e12))
                if dev.type == "cuda" and hasattr(torch, "_int_mm") and m > 16:
                    a8 = torch.randint(-128, 127, (m, k), device=dev, dtype=torch.int8)
                    # B column-major: the layout cuBLASLt's int8 kernels take (row-major B
                    # runs about 6x slower through torch._int_mm on the H200).
                    b8 = torch.randint(-128, 127, (n_, k), device=dev, dtype=torch.int8).t()
                    try:
                        ms, _ = timeit(dev, lambda: torch._int_mm(a8, b8), 3, rep, inner=inner)
                        res["gemm"].append(dict(m=m, k=k, n=n_, dtype="int8", ms=ms,
                                                tflops=2 * m * k * n_ / (ms * 1e-3) / 1e12))
                    except RuntimeError as e:
                        res["gemm"].append(dict(m=m, k=k, n=n_, dtype="int8", error=str(e)[:200]))
                del a, b
        print("gemm: %d figures" % len(res["gemm"]), flush=True)

        save(res, args.out)

        def model(name, fn, **meta):
            try:
                ms, runs = timeit(dev, fn, 3, rep)
                row = dict(name=name, ms=ms, runs_ms=[round(r, 4) for r in runs], **meta)
                if dev.type == "cuda":  # the same work replayed as one CUDA graph: device time alone
                    gms, gruns = timeit(dev, cuda_graph(fn), 3, rep)
                    row.update(graph_ms=gms, graph_runs_ms=[round(r, 4) for r in gruns])
            except Exception as e:  # keep the other figures: record what failed
                row = dict(name=name, error="%s: %s" % (type(e).__name__, str(e)[:300]), **meta)
            res["models"].append(row)
            save(res, args.out)
            print(json.dumps({k: v for k, v in row.items() if not k.endswith("runs_ms")}), flush=True)

        import torchvision
        for batch in ([1] if quick else [1, 64]):
            net = torchvision.models.resnet50().to(dev, dtype).eval().to(memory_format=torch.channels_last)
            x = torch.randn(batch, 3, 224, 224, device=dev, dtype=dtype).to(memory_format=torch.channels_last)
            model("resnet50", lambda: net(x), batch=batch, workload="resnet50.onnx")
            del net, x
        if not quick:
            net = torchvision.models.vit_b_16().to(dev, dtype).eval()
            x = torch.randn(1, 3, 224, 224, device=dev, dtype=dtype)
            model("vit_b16", lambda: net(x), batch=1, workload="vit_b16.onnx")
            del net, x

        bert = Bert(dev, dtype, L=2 if quick else 12)
        bsz, seq = (2, 16) if quick else (32, 128)
        ids = torch.randint(0, 30522, (bsz, seq), device=dev)
        mask = torch.ones(bsz, seq, device=dev, dtype=torch.int64)
        types = torch.zeros(bsz, seq, device=dev, dtype=torch.int64)
        model("bert_base", lambda: bert.forward(ids, mask, types), batch=bsz, sequence=seq, workload="bert_base.onnx")
        del bert

        cfg = dict(L=2, H=256, A=8, KV=2, F_=688, V=1000, P=4096) if quick else \
            dict(L=32, H=4096, A=32, KV=32, F_=11008, V=32000, P=4096)  # Llama-2-7B (generate_models.py LLAMA)
        llm = Llama(dev, dtype, **cfg)
        for tokens in ([32] if quick else [512, 2048]):
            ids = torch.randint(0, cfg["V"], (1, tokens), device=dev)
            model("llama2_7b_prefill", lambda: llm.forward(ids), batch=1, tokens=tokens,
                  workload="llama2_7b_prefill.onnx")
        for past_len in ([32] if quick else [512, 2048]):
            past = [(torch.randn(1, cfg["KV"], past_len, cfg["H"] // cfg["A"], device=dev, dtype=dtype),
                     torch.randn(1, cfg["KV"], past_len, cfg["H"] // cfg["A"], device=dev, dtype=dtype))
                    for _ in range(cfg["L"])]
            ids = torch.randint(0, cfg["V"], (1, 1), device=dev)
            model("llama2_7b_decode", lambda: llm.forward(ids, past), batch=1, past=past_len,
                  workload="llama2_7b_decode.onnx")
            del past
    save(res, args.out)
    print("wrote", args.out)


def save(res, path):
    """Written after every section, so a run cut short still leaves what it measured."""
    with open(path, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
