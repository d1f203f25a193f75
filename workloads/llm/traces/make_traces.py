#!/usr/bin/python3
"""Writes the synthetic LLM request traces of `tessera serve-llm` (docs/serving.md, "LLM serving").

conversation-1k.csv: 1,000 requests of a chat service, `arrival_s,prompt_tokens,output_tokens`.
  - Lengths: lognormal around the medians of the Azure LLM inference trace 2023, conversation
    service: prompt 1020 tokens, output 129 tokens (Patel et al., "Splitwise: Efficient generative
    LLM inference using phase splitting", ISCA 2024, arXiv:2311.18677, Sec. III, Fig. 3; the trace is
    github.com/Azure/AzurePublicDataset, AzureLLMInferenceDataset2023.md).
  - The spread is an assumption, not from the paper: sigma of the log = 1.0 for both lengths.
  - Truncated to prompt <= 3000 and output <= 1000 tokens so every request fits a 4096-token context
    (Llama-2's), an assumption.
  - Arrivals: Poisson at 1 request/s (serve-llm time-scales a trace to --rate or a searched rate).
Deterministic: Python's random.Random(31) (Mersenne Twister; the same draws on every platform).
Usage: /usr/bin/python3 workloads/llm/traces/make_traces.py [--check]
"""
import math
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PROMPT_MEDIAN, OUTPUT_MEDIAN = 1020, 129   # Splitwise (ISCA 2024) Sec. III, conversation trace medians
SIGMA = 1.0                                # assumption: spread of the log of both lengths
PROMPT_MAX, OUTPUT_MAX = 3000, 1000        # assumption: prompt + output <= 4000 < 4096 (Llama-2 context)
RATE_PER_S = 1.0
REQUESTS = 1000


def conversation_trace(seed=31):
    rng = random.Random(seed)
    lines = [
        "# Synthetic chat requests (workloads/llm/traces/make_traces.py): lognormal lengths around the Azure LLM",
        "# inference trace 2023 conversation medians, prompt 1020 / output 129 tokens (Splitwise, ISCA 2024, Sec. III),",
        "# sigma of the log 1.0 (assumed), prompt <= 3000, output <= 1000 tokens; Poisson arrivals at 1 request/s.",
        "arrival_s,prompt_tokens,output_tokens",
    ]
    t = 0.0
    for k in range(REQUESTS):
        if k:
            t += rng.expovariate(RATE_PER_S)
        prompt = min(PROMPT_MAX, max(1, round(PROMPT_MEDIAN * math.exp(SIGMA * rng.gauss(0, 1)))))
        output = min(OUTPUT_MAX, max(1, round(OUTPUT_MEDIAN * math.exp(SIGMA * rng.gauss(0, 1)))))
        lines.append(f"{t:.6f},{prompt},{output}")
    return "\n".join(lines) + "\n"


def main(argv):
    text = conversation_trace()
    path = os.path.join(HERE, "conversation-1k.csv")
    if "--check" in argv:
        with open(path, encoding="utf-8") as f:
            if f.read() != text:
                print(f"{path}: differs from make_traces.py's output; rerun it", file=sys.stderr)
                return 1
        return 0
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
