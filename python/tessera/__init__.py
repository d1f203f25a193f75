"""Tessera from Python: runs, sweeps and figures for notebooks.

    import tessera
    r = tessera.run("configs/tpu-v1.yaml", "workloads/tpu/mlp0.yaml", batch=16,
                    overrides={"array.rows": 128, "array.cols": 128})
    r.summary["latency_s"], r.layers            # dict, pandas DataFrame
    df = tessera.sweep("experiments/smoke.yaml", jobs=2)
    tessera.plot_pareto(df, "summary.latency_s:min", "sram_bytes:min")
    s = tessera.serve_llm("configs/tpu-v6e.yaml", "workloads/llm/llama-3-8b.yaml", rate=2)
    s.result["ttft_ms"]["p99"], s.requests, s.timeline   # dict, pandas DataFrames

The package drives the `tessera` executable ($TESSERA_BIN, else the repository's build/tessera);
it needs no installation: `PYTHONPATH=python` from the repository root. API: docs/python.md.
"""
from ._binary import REPO, binary, build_dir, onnx_model
from ._errors import TesseraError, TesseraNotFoundError
from ._run import Result, load_result, run
from ._serve_llm import ServeLlmResult, load_serve_llm, serve_llm, serve_llm_command
from ._sweep import frame, load_sweep, pareto, points, sweep
from .config import apply_overrides, get_path, load_arch, load_workload, set_path, write_yaml
from .plots import axis_label, plot_breakdown, plot_lines, plot_pareto, plot_roofline

__all__ = [
    "REPO", "Result", "axis_label", "TesseraError", "TesseraNotFoundError", "apply_overrides", "binary", "build_dir", "frame",
    "get_path", "load_arch", "load_result", "load_sweep", "load_workload", "onnx_model", "pareto", "plot_breakdown",
    "plot_lines", "plot_pareto", "plot_roofline", "points", "run", "set_path", "sweep", "write_yaml",
    "ServeLlmResult", "load_serve_llm", "serve_llm", "serve_llm_command",
]
