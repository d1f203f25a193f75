#!/usr/bin/python3
"""LLM serving on the simulated chip against a published measurement (issue 31, docs/serving.md
"Validation"). Nothing in Tessera is tuned to these figures: each case runs `tessera serve-llm`
at the measured configuration and prints predicted beside measured, with the error.

The measurement: AI-Hypercomputer/jetstream-pytorch, benchmarks/summary.md (commit f636ff7e),
JetStream-PyTorch on a Cloud TPU v5e-8 (8 chips, the model sharded over them), bf16 weights and
KV cache, ShareGPT prompts (`benchmark_serving.py --num-prompts 2000 --dataset sharegpt`, every
request sent at once: the default request rate is infinite), decode slots = the table's batch
size, inputs at most 1024 and outputs at most 1024 tokens. Its throughput column is in tokens/s;
which tokens it counts is not stated there, so both output and input+output tokens/s are printed.

ShareGPT's lengths after JetStream's filter, from the same benchmark script's output in
AI-Hypercomputer/JetStream pull request 83 (2024-05-17): Llama 3, 1780 requests, 214,914 input
and 415,416 generated tokens; Llama 2, 100 requests, 12,503 and 30,175. Their spread is not
published: lognormal with sd = mean x CV is an assumption, CV 1 by default (--cv 0.5 2 for the
sensitivity), capped at 1024 tokens.

  /usr/bin/python3 bench/llm_validation.py --tessera build/tessera --cache out/llm-cache [--cases llama-3-8b] [--cv 0.5 1 2]
"""
import argparse
import csv
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SOURCE = "AI-Hypercomputer/jetstream-pytorch benchmarks/summary.md @ f636ff7e"

# (input tokens, output tokens, requests) of JetStream's ShareGPT runs, JetStream PR 83.
SHAREGPT = {"llama3": (214914, 415416, 1780), "llama2": (12503, 30175, 100)}


def sharegpt_means(tokenizer):
    """Mean prompt and output tokens of JetStream's filtered ShareGPT, rounded to a token."""
    inp, out, n = SHAREGPT[tokenizer]
    return round(inp / n), round(out / n)


# name: model file, table row (date, batch size), measured tokens/s, which length statistics.
CASES = {
    "llama-3-8b": ("llama-3-8b", "2024-04-24, Llama 3 - 8B, bfloat16, batch 128, cache 2048", 128, 8249, "llama3"),
    "llama-2-7b": ("llama-2-7b", "2024-03-28, Llama 2 - 7B, bfloat16, batch 96, cache 2048", 96, 3663, "llama2"),
    "llama-2-13b": ("llama-2-13b", "2024-03-28, Llama 2 - 13B, bfloat16, batch 48, cache 2048", 48, 2056, "llama2"),
}


def error_pct(predicted, measured):
    return 100.0 * (predicted - measured) / measured


def serve_llm_args(case, cv, cache, out):
    model, _, slots, _, lengths = CASES[case]
    p, o = sharegpt_means(lengths)
    return ["serve-llm", "-a", os.path.join(ROOT, "configs/tpu-v5e.yaml"), "-m", os.path.join(ROOT, f"workloads/llm/{model}.yaml"),
            "--tp", "8", "--mlperf", "offline", "--requests", "2000", "--seed", "1",
            "--prompt-tokens", f"lognormal:{p}:{round(p * cv)}:1024", "--output-tokens", f"lognormal:{o}:{round(o * cv)}:1024",
            "--max-running", str(slots), "--max-batch", str(slots), "--cache", cache, "--out", out, "-q"]


def run_case(tessera, case, cv, cache, out_root):
    out = os.path.join(out_root, f"{case}-cv{cv}")
    subprocess.run([tessera] + serve_llm_args(case, cv, cache, out), check=True)
    with open(os.path.join(out, "report.json")) as f:
        result = json.load(f)["result"]
    span = 0.0
    tokens = 0
    with open(os.path.join(out, "requests.csv")) as f:
        for row in csv.DictReader(f):
            span = max(span, float(row["finish_s"]))
            tokens += int(row["prompt_tokens"]) + int(row["output_tokens"])
    return result["output_tokens_per_s"], tokens / span


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tessera", default=os.path.join(ROOT, "build/tessera"))
    ap.add_argument("--cache", default=os.path.join(ROOT, "out/llm-cache"))
    ap.add_argument("--out", default=os.path.join(ROOT, "out/llm-validation"))
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--cv", nargs="+", type=float, default=[1.0])
    a = ap.parse_args()
    print(f"measured: {SOURCE}; predicted: tessera serve-llm, tpu-v5e x8 (tp 8), 2000 requests at t = 0\n")
    print("| model | measured row | CV of lengths | measured tokens/s | predicted output tokens/s | error | predicted input+output tokens/s | error |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for case in a.cases:
        for cv in a.cv:
            out_tps, all_tps = run_case(a.tessera, case, cv, a.cache, a.out)
            _, row, _, measured, _ = CASES[case]
            print(f"| {case} | {row} | {cv:g} | {measured:,} | {out_tps:,.0f} | {error_pct(out_tps, measured):+.0f}% | "
                  f"{all_tps:,.0f} | {error_pct(all_tps, measured):+.0f}% |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
