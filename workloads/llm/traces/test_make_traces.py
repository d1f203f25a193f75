"""The shipped traces are what make_traces.py writes, and follow its stated distribution."""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_traces  # noqa: E402


def test_shipped_trace_is_the_generators():
    assert make_traces.main(["--check"]) == 0


def test_medians_near_the_sourced_ones():
    rows = [line.split(",") for line in make_traces.conversation_trace().splitlines() if line[0].isdigit()]
    assert len(rows) == 1000
    prompts = [int(r[1]) for r in rows]
    outputs = [int(r[2]) for r in rows]
    # The median of 1,000 lognormal draws (sigma 1) is within ~8% of the distribution's (2 standard errors).
    assert abs(statistics.median(prompts) / 1020 - 1) < 0.1
    assert abs(statistics.median(outputs) / 129 - 1) < 0.1
    assert max(p + o for p, o in zip(prompts, outputs)) <= 4000
