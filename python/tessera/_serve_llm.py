"""tessera.serve_llm: LLM serving (`tessera serve-llm`) as a Python call."""
import json
import os
import shutil
import subprocess
import tempfile

import pandas as pd

from ._binary import binary, environment, error_message
from ._errors import TesseraError


class ServeLlmResult:
    """What `tessera serve-llm` wrote, read back.

    Attributes:
      report:   report.json as a dict (mode, target, scheduler, requests, slo, rate_per_s, capacity_per_s,
                result: ttft_ms / tpot_ms / inter_token_ms / e2e_ms {mean, p50, p90, p99, max}, output_tokens_per_s,
                goodput_per_s, kv_occupancy_mean, preemptions, energy_kwh_per_million_output_tokens, ...; mlperf)
      result:   report["result"]
      requests: requests.csv as a DataFrame, one row per request (arrival_s, prompt_tokens, output_tokens,
                ttft_ms, tpot_ms, e2e_ms, max_gap_ms, preemptions, ...)
      timeline: timeline.csv as a DataFrame, one row per iteration (start_s, seconds, prefill_tokens,
                decode_sequences, running, waiting, kv_occupancy, preempted, ...)
      curve:    curve.csv as a DataFrame (rate_per_s, output_tokens_per_s, ttft_p99_ms, tpot_p99_ms, ...), or None
      text:     what tessera printed
      out:      the output directory, or None when it was a temporary one (removed)
    """

    def __init__(self, report, requests, timeline, curve, text, out):
        self.report = report
        self.result = report["result"]
        self.requests = requests
        self.timeline = timeline
        self.curve = curve
        self.text = text
        self.out = out

    def __repr__(self):
        r = self.result
        return (f"<ServeLlmResult {self.report['target']['name']} x {self.report['target']['replicas']}: "
                f"{r['output_tokens_per_s']:.4g} tokens/s, TTFT p99 {r['ttft_ms']['p99']:.4g} ms, "
                f"TPOT p99 {r['tpot_ms']['p99']:.4g} ms>")


def load_serve_llm(out):
    """A ServeLlmResult from an existing `tessera serve-llm --out DIR` directory."""
    out = os.fspath(out)
    with open(os.path.join(out, "report.json"), encoding="utf-8") as f:
        report = json.load(f)
    curve_path = os.path.join(out, "curve.csv")
    curve = pd.read_csv(curve_path) if os.path.exists(curve_path) else None
    return ServeLlmResult(report, pd.read_csv(os.path.join(out, "requests.csv")),
                          pd.read_csv(os.path.join(out, "timeline.csv")), curve, "", os.path.abspath(out))


_OPTIONS = {  # keyword -> flag; True adds the bare flag
    "tp": "--tp", "pp": "--pp", "weight_dtype": "--weight-dtype", "kv_dtype": "--kv-dtype", "block_tokens": "--block-tokens",
    "cache": "--cache", "rate": "--rate", "arrivals": "--arrivals", "cv": "--cv", "trace": "--trace",
    "prompt_tokens": "--prompt-tokens", "output_tokens": "--output-tokens", "requests": "--requests", "seed": "--seed",
    "max_batch_tokens": "--max-batch-tokens", "max_batch": "--max-batch", "max_running": "--max-running",
    "preemption": "--preemption", "replicas": "--replicas", "dispatch": "--dispatch", "slo_ttft_ms": "--slo-ttft-ms",
    "slo_tpot_ms": "--slo-tpot-ms", "percentile": "--percentile", "mlperf": "--mlperf",
    "min_duration_s": "--min-duration-s", "max_requests": "--max-requests", "curve": "--curve",
    "usd_per_chip_hour": "--usd-per-chip-hour", "usd_per_kwh": "--usd-per-kwh", "baseline": "--baseline",
}


def serve_llm_command(arch, model, out, chunked_prefill=True, mlperf_interactive=False, **options):
    """The `tessera serve-llm` command line for these arguments (a list; the executable first)."""
    cmd = [binary(), "serve-llm", "--arch", os.fspath(arch), "--model", os.fspath(model), "--out", os.fspath(out)]
    for key, value in options.items():
        if key not in _OPTIONS:
            raise TypeError(f"serve_llm() got an unexpected keyword argument '{key}' (takes {', '.join(sorted(_OPTIONS))})")
        if value is None:
            continue
        cmd += [_OPTIONS[key], os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
    if not chunked_prefill:
        cmd.append("--no-chunked-prefill")
    if mlperf_interactive:
        cmd.append("--mlperf-interactive")
    return cmd


def serve_llm(arch, model, out=None, *, chunked_prefill=True, mlperf_interactive=False, timeout=None, **options):
    """Serves an LLM under a request stream with `tessera serve-llm`; returns a ServeLlmResult.

    arch:     a chip config (configs/tpu-v6e.yaml) or GPU baseline (configs/baselines/h100-sxm.yaml)
    model:    an LLM spec (workloads/llm/llama-3-8b.yaml)
    out:      directory for the files (kept); default: a temporary one
    options:  the command's options by name, '-' as '_': tp, pp, weight_dtype, kv_dtype, block_tokens, cache, rate,
              arrivals, cv, trace, prompt_tokens ("lognormal:1020:1000:3000"), output_tokens, requests, seed,
              max_batch_tokens, max_batch, max_running, preemption ("recompute" | "swap"), replicas, dispatch,
              slo_ttft_ms, slo_tpot_ms, percentile, mlperf ("server" | "offline"), min_duration_s, max_requests,
              curve, usd_per_chip_hour, usd_per_kwh, baseline ("h100-sxm:4:3.5,a100:4")
    chunked_prefill=False: --no-chunked-prefill; mlperf_interactive: --mlperf-interactive
    timeout:  seconds before the run is killed (TesseraError)

    On failure raises TesseraError with Tessera's message and exit status (2 for bad input);
    nothing is written then. docs/serving.md, "LLM serving"; docs/python.md.
    """
    tmp = tempfile.mkdtemp(prefix="tessera-serve-llm-") if out is None else None
    out_dir = os.path.join(tmp, "out") if out is None else os.fspath(out)
    try:
        cmd = serve_llm_command(arch, model, out_dir, chunked_prefill, mlperf_interactive, **options)
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, env=environment(), timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TesseraError(f"tessera serve-llm did not finish within {timeout} s (killed)", None, "", cmd) from None
        labels = {out_dir: "<temporary output directory>"} if out is None else {}
        if done.returncode != 0:
            raise TesseraError(error_message(done.stderr, done.returncode, labels), done.returncode, done.stderr, cmd)
        r = load_serve_llm(out_dir)
        r.text = done.stdout
        r.out = None if out is None else os.path.abspath(out_dir)
        return r
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
