#!/usr/bin/python3
"""pytest: sweep figures are paper-ready (issue 33 item 5): every axis label carries a unit from
the one catalogue (metric_labels.py), values are SI-scaled with no offset notation, the Pareto
front has a colour no series has, every text of every figure stays inside the figure, and
plot_all names figures by parameter values and plots the experiment's own Pareto axes.

Run: /usr/bin/python3 -m pytest -q analysis/test_sweep_figures.py
"""
import glob
import json
import os
import subprocess
import sys

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIXTURES = os.path.join(HERE, "fixtures", "reports")
sys.path.insert(0, HERE)
import metric_labels  # noqa: E402
import plot_all  # noqa: E402
import plot_breakdown  # noqa: E402
import plot_sweep  # noqa: E402
import report_io  # noqa: E402


def rows():
    """A 3 x 5 x 2 sweep (array rows x weight-memory bandwidth x clock) of two workloads, with
    latencies of tens of µs and throughputs of millions per second, and one failed point."""
    out, i = [], 0
    for wl in ("mlp0", "cnn0"):
        for r in (128, 256, 512):
            for bw in (17, 34, 68, 136, 180):
                for clk in (700, 1050):
                    lat = 1e-4 * (256 / r) ** 0.3 * (34 / bw) ** 0.8 * (700 / clk) ** 0.1 * (2 if wl == "cnn0" else 1)
                    out.append({"point": f"{i:016x}", "index": i, "workload": wl, "batch": 200, "status": "ok",
                                "error": None, "params": {"array.rows": r, "weight_memory.bandwidth_gb_per_s": bw,
                                                          "clock_mhz": clk, "unified_buffer.capacity": "24 MiB"},
                                "metrics": {"summary.latency_s": lat, "summary.inferences_per_s": 200 / lat,
                                            "summary.peak_tops": r * r * 2 * clk * 1e6 / 1e12}})
                    i += 1
    out.append({"point": "f" * 16, "index": i, "workload": "mlp0", "batch": 200, "status": "failed",
                "error": "exit 2: tessera: error: x", "params": {"array.rows": 64, "weight_memory.bandwidth_gb_per_s": 34,
                                                                   "clock_mhz": 700}, "metrics": {}})
    return out


def args_of(*argv):
    return plot_sweep.parser().parse_args(["-", "--out", "-", *argv])


def texts_inside(fig):
    """Every text the figure draws (titles, axis labels, tick labels in view, legend entries and
    titles, colour-bar labels, annotations), rendered with Agg, lies inside the figure: the
    [(text, bbox)] of those that do not."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = list(fig.texts)
    for ax in fig.axes:
        texts += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label,
                  ax.xaxis.get_offset_text(), ax.yaxis.get_offset_text()]
        for axis, labels in ((ax.xaxis, ax.get_xticklabels()), (ax.yaxis, ax.get_yticklabels())):
            lo, hi = sorted(axis.get_view_interval())
            at = (lambda t: t.get_position()[0]) if axis is ax.xaxis else (lambda t: t.get_position()[1])
            texts += [t for t in labels if lo - 1e-9 * abs(hi - lo) <= at(t) <= hi + 1e-9 * abs(hi - lo)]  # drawn ones
        texts += list(ax.texts)
        if ax.get_legend():
            texts += list(ax.get_legend().get_texts()) + [ax.get_legend().get_title()]
    box = fig.bbox
    out = []
    for t in texts:
        if not t.get_visible() or not t.get_text().strip():
            continue
        b = t.get_window_extent(renderer)
        if b.x0 < box.x0 - 0.5 or b.y0 < box.y0 - 0.5 or b.x1 > box.x1 + 0.5 or b.y1 > box.y1 + 0.5:
            out.append((t.get_text(), b))
    return out


# ------------------------------------------------------------------------------ the catalogue


def test_catalogue_labels_carry_units_and_scale():
    assert metric_labels.axis("summary.latency_s", [8e-5, 2.1e-4]) == ("latency (µs)", 1e6)
    assert metric_labels.axis("summary.latency_s", [3e-3]) == ("latency (ms)", 1e3)
    assert metric_labels.axis("summary.inferences_per_s", [3.2e6]) == ("throughput (M inferences/s)", 1e-6)
    label, scale = metric_labels.axis("unified_buffer.capacity", [24 * 2 ** 20])
    assert (label, scale * 24 * 2 ** 20) == ("unified buffer (MiB)", 24)
    assert metric_labels.axis("weight_memory.bandwidth_gb_per_s", [34, 180]) == ("weight-memory bandwidth (GB/s)", 1)
    assert metric_labels.axis("summary.utilization", [0.137]) == ("MAC utilization (%)", 100)
    assert metric_labels.axis("summary.cycles.weight_stall", [5e6]) == ("cycles, weight stall (M cycles)", 1e-6)
    # Not in the catalogue: the unit from the key's name.
    assert metric_labels.axis("summary.spill_bytes", [3 * 2 ** 10])[0] == "spill (KiB)"
    assert metric_labels.legend("array.rows", 256) == "256 PEs"
    assert metric_labels.legend("summary.latency_s", 8e-5) == "80 µs"
    assert metric_labels.slug("weight_memory.bandwidth_gb_per_s", 34.0) == "wmem_bw34"
    assert metric_labels.numeric("24 MiB") == 24 * 2 ** 20


def test_every_numeric_catalogue_entry_has_a_unit():
    for key, q in metric_labels.CATALOGUE.items():
        if key in ("array.dataflow", "weight_memory.technology", "precision", "workload", "pcie.generation"):
            continue  # names, not quantities
        label, _ = metric_labels.axis(key, [1.0])
        assert label.endswith(")") and "(" in label, key


def test_shipped_experiments_metrics_and_parameters_have_units():
    """Every metric and numeric parameter of experiments/*.yaml gets a label with a unit."""
    for path in glob.glob(os.path.join(ROOT, "experiments", "*.yaml")):
        with open(path, encoding="utf-8") as f:
            exp = yaml.safe_load(f)
        keys = [m if isinstance(m, str) else m.get("name") for m in exp.get("metrics", [])]
        blocks = exp.get("parameters") or []
        for block in blocks if isinstance(blocks, list) else [blocks]:
            for section in ("grid", "zip"):
                groups = block.get(section) or {}
                for group in groups if isinstance(groups, list) else [groups]:
                    keys += [k for k, v in group.items() if all(metric_labels.numeric(x) is not None for x in v)]
        for key in keys:
            if key in ("roofline.weight_memory.bound", "workload.precision"):
                continue  # a number but not a quantity of a figure, a name
            label, _ = metric_labels.axis(key, [1.0])
            assert "(" in label and label.endswith(")"), f"{os.path.basename(path)}: {key} -> {label!r}"


# ------------------------------------------------------------------------------ figures


def test_pareto_plot_units_front_colour_and_bounds():
    fig, front = plot_sweep.make_figure("mem", rows(), args_of("--x", "summary.latency_s:min",
                                                              "--y", "summary.inferences_per_s:max"))
    ax = fig.axes[0]
    assert ax.get_xlabel() == "latency (µs)" and ax.get_ylabel() == "throughput (M inferences/s)"
    assert ax.xaxis.get_offset_text().get_text() == "" and ax.yaxis.get_offset_text().get_text() == ""
    assert "1 failed" in ax.get_title()
    # The front is black; the series (one per workload) are not.
    front_lines = [ln for ln in ax.get_lines() if ln.get_label() == "Pareto front"]
    assert len(front_lines) == 1 and front_lines[0].get_color() == plot_sweep.FRONT
    series = [c for c in ax.collections if c.get_label() in ("mlp0", "cnn0")]
    assert len(series) == 2
    for c in series:
        assert tuple(c.get_facecolor()[0][:3]) != (0.0, 0.0, 0.0)
    # Plotted x values are µs: the fastest point's latency times 1e6.
    xs = [p[0] for c in series for p in c.get_offsets()]
    assert min(xs) == pytest.approx(min(x for _, (x, _) in front) * 1e6)
    assert texts_inside(fig) == []


def test_line_plot_one_line_per_group_in_units():
    fig = plot_sweep.make_figure("mem", rows(), args_of("--kind", "line", "--x", "weight_memory.bandwidth_gb_per_s",
                                                         "--group", "array.rows", "--workload", "mlp0",
                                                         "--where", "clock_mhz=700", "--logx"))[0]
    ax = fig.axes[0]
    assert ax.get_xlabel() == "weight-memory bandwidth (GB/s)" and ax.get_ylabel() == "latency (µs)"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["128 PEs", "256 PEs", "512 PEs"]
    assert ax.get_legend().get_title().get_text() == "array rows"
    assert ax.get_title() == "mlp0, batch 200, 700 MHz"
    lines = ax.get_lines()
    assert len(lines) == 3 and all(list(ln.get_xdata()) == [17, 34, 68, 136, 180] for ln in lines)
    # 256 rows, 34 GB/s, 700 MHz, mlp0: 1e-4 s = 100 µs.
    assert lines[1].get_ydata()[1] == pytest.approx(100.0)
    assert ax.get_xscale() == "log"
    assert texts_inside(fig) == []


def test_line_plot_refuses_points_it_would_mix():
    with pytest.raises(report_io.InputError, match=r"clock_mhz takes 700, 1050.*--where"):
        plot_sweep.make_figure("mem", rows(), args_of("--kind", "line", "--x", "weight_memory.bandwidth_gb_per_s",
                                                      "--group", "array.rows", "--workload", "mlp0"))
    with pytest.raises(report_io.InputError, match="clock_mhz takes: 1050, 700"):
        plot_sweep.make_figure("mem", rows(), args_of("--kind", "line", "--x", "array.rows", "--where", "clock_mhz=900"))
    with pytest.raises(report_io.InputError, match="needs --x"):
        plot_sweep.make_figure("mem", rows(), args_of("--kind", "line"))


def test_line_plot_of_a_size_parameter_in_mib():
    rs = [dict(r, params=dict(r["params"], **{"unified_buffer.capacity": f"{c} MiB"}))
          for r, c in zip([r for r in rows() if r["workload"] == "mlp0" and r["params"].get("clock_mhz") == 700
                           and r["params"]["weight_memory.bandwidth_gb_per_s"] == 34], (8, 16, 24))]
    fig = plot_sweep.make_figure("mem", rs, args_of("--kind", "line", "--x", "unified_buffer.capacity"))[0]
    ax = fig.axes[0]
    assert ax.get_xlabel() == "unified buffer (MiB)"
    assert list(ax.get_lines()[0].get_xdata()) == [8, 16, 24]


def test_many_layer_breakdown_legend_clear_of_tick_labels():
    report = report_io.load_report(os.path.join(FIXTURES, "lstm0-b8", "report.json"))
    fig = plot_breakdown.make_figure([report], plot_breakdown.parser().parse_args(
        ["-", "--per", "layer", "--top", "40", "--out", "-"]))
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    assert len(ax.get_xticklabels()) == 40
    legend = ax.get_legend().get_window_extent(renderer)
    for t in ax.get_xticklabels():
        assert not legend.overlaps(t.get_window_extent(renderer)), t.get_text()
    assert texts_inside(fig) == []


def test_plot_all_uses_the_experiments_pareto_axes_and_names_points_by_values(tmp_path):
    d = tmp_path / "out"
    sweep = d / "sweeps" / "bw"
    (sweep / "points").mkdir(parents=True)
    exp = tmp_path / "bw.yaml"
    exp.write_text("name: bw\npareto: [summary.latency_s:min, summary.peak_tops:min]\n")
    (sweep / "sweep.json").write_text(json.dumps({"experiment_file": str(exp)}))
    rs = rows()
    (sweep / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rs))
    point = rs[0]  # mlp0, 128 rows, 17 GB/s, 700 MHz
    pdir = sweep / "points" / point["point"]
    pdir.mkdir()
    with open(os.path.join(FIXTURES, "mlp0-b16", "report.json"), encoding="utf-8") as f:
        (pdir / "report.json").write_text(f.read())
    done = subprocess.run([sys.executable, os.path.join(HERE, "plot_all.py"), str(d)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    figs = d / "figures"
    assert (figs / "breakdown-bw-mlp0-b200-rows128-clock700-wmem_bw17.png").exists(), sorted(os.listdir(figs))
    assert not list(figs.glob(f"*{point['point']}*"))
    # The sweep figure's axes are the experiment's pareto: latency vs peak TOPS.
    _, rows_read = plot_sweep.read_results(str(sweep))
    assert plot_all.sweep_axes(str(sweep / "results.jsonl"), rows_read) == ("summary.latency_s:min",
                                                                          "summary.peak_tops:min")
    assert (figs / "sweep-bw.png").exists()
    # Without an experiment: latency against throughput, never a metric picked by its name's order.
    os.unlink(sweep / "sweep.json")
    assert plot_all.sweep_axes(str(sweep / "results.jsonl"), rows_read) == ("summary.latency_s:min",
                                                                          "summary.inferences_per_s:max")
