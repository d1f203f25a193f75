"""bench/llm_validation.py: the lengths it derives from the cited totals, its error, its command."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llm_validation as v  # noqa: E402


def test_sharegpt_means_from_the_cited_totals():
    # JetStream PR 83: Llama 3, 214,914 / 1,780 = 120.7 input and 415,416 / 1,780 = 233.4 output
    # tokens a request; Llama 2, 12,503 / 100 = 125.0 and 30,175 / 100 = 301.75.
    assert v.sharegpt_means("llama3") == (121, 233)
    assert v.sharegpt_means("llama2") == (125, 302)


def test_error_is_relative_to_the_measurement():
    assert v.error_pct(110.0, 100.0) == 10.0
    assert v.error_pct(4124.5, 8249) == -50.0


def test_command_is_the_measured_configuration():
    args = v.serve_llm_args("llama-3-8b", 1.0, "C", "O")
    s = " ".join(args)
    assert "configs/tpu-v5e.yaml" in s and "workloads/llm/llama-3-8b.yaml" in s
    assert "--tp 8" in s and "--mlperf offline" in s and "--requests 2000" in s
    assert "--max-running 128" in s and "--max-batch 128" in s
    assert "--prompt-tokens lognormal:121:121:1024" in s and "--output-tokens lognormal:233:233:1024" in s
