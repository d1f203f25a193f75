"""Figures from runs and sweeps, drawn by the analysis/ scripts (imported, not copied):
plot_roofline (analysis/plot_roofline.py), plot_breakdown (plot_breakdown.py), plot_pareto and
plot_lines (plot_sweep.py), whose axis labels, units and scaling come from analysis/metric_labels.py
(`axis_label` gives the same text for a figure of your own). Each returns a matplotlib Figure (closed in pyplot, so it shows once when it is
a cell's value, and `fig.savefig(...)` writes it)."""
import importlib
import math
import os
import sys

from ._binary import REPO
from ._errors import TesseraError

ANALYSIS = os.path.join(REPO, "analysis")
_loaded = {}
# Reading reports (report_io), the figures' look (style) and the plot scripts.
_ANALYSIS_MODULES = ("report_io", "style", "metric_labels", "plot_roofline", "plot_breakdown", "plot_sweep")


def _modules():
    """analysis/report_io.py, style.py and the plot scripts, imported once. style.py selects the
    Agg backend when it is imported (the scripts run headless); that call is skipped here so that
    a notebook keeps its backend and its open figures. analysis/ is on sys.path only while importing
    (it holds a tabulate.py that must not shadow the tabulate package)."""
    if len(_loaded) == len(_ANALYSIS_MODULES):
        return _loaded
    import matplotlib
    if not os.path.isdir(ANALYSIS):
        raise TesseraError(f"{ANALYSIS}: the analysis scripts are not there (the package uses the repository's)")
    use = matplotlib.use
    sys.path.insert(0, ANALYSIS)
    matplotlib.use = lambda *args, **kwargs: None
    try:
        for name in _ANALYSIS_MODULES:
            module = importlib.import_module(name)
            where = os.path.dirname(os.path.abspath(getattr(module, "__file__", "") or ""))
            if where != ANALYSIS:
                raise TesseraError(f"module '{name}' was already imported from {where or 'elsewhere'}, not from "
                                   f"{ANALYSIS}; the figures need analysis/{name}.py (rename the other module)")
            _loaded[name] = module
    finally:
        matplotlib.use = use
        try:
            sys.path.remove(ANALYSIS)
        except ValueError:
            pass
    return _loaded


def _reports(results):
    """Report dicts (with the "_path" the scripts name in messages) from Results, report dicts,
    or paths of report.json files or of directories holding one."""
    report_io = _modules()["report_io"]
    if isinstance(results, (str, os.PathLike, dict)) or hasattr(results, "report"):
        results = [results]
    reports = []
    for r in results:
        if hasattr(r, "report"):
            where = os.path.join(r.out, "report.json") if r.out else \
                f"<run: {r.workload.get('name')} on {r.arch.get('name')}>"
            reports.append(dict(r.report, _path=where))
        elif isinstance(r, dict):
            reports.append(dict(r, _path=r.get("_path", f"<report: {r.get('workload', {}).get('name')}>")))
        else:
            try:
                reports.append(report_io.load_report(os.fspath(r)))
            except report_io.InputError as e:
                raise TesseraError(str(e)) from None
    if not reports:
        raise TesseraError("nothing to plot: no report given")
    return reports


def _args(module, positional, options):
    """The script's options: its parser's defaults with `options` set (unknown ones refused)."""
    args = module.parser().parse_args([positional, "--out", "-"])
    for key, value in options.items():
        if not hasattr(args, key):
            raise TypeError(f"unknown option '{key}'")
        setattr(args, key, value)
    return args


def _draw(make):
    import matplotlib
    import matplotlib.pyplot as plt
    report_io = _modules()["report_io"]
    with matplotlib.rc_context():  # the scripts' style applies to their figure only
        try:
            fig = make()
        except report_io.InputError as e:
            raise TesseraError(str(e)) from None
        fig = fig[0] if isinstance(fig, tuple) else fig
        plt.close(fig)
    return fig


def plot_roofline(results, *, flavour="weight", platforms=None, layers=False, panels=False, title=None,
                  labels=True, width=None, height=None):
    """Roofline of one or more runs (Results, report dicts or report.json paths): the accelerator's
    roof per precision and every baseline in the reports (run with baselines=...), each workload
    a point. flavour "weight" (MACs per weight byte, the TPU paper's axis) or "dram"; platforms: names
    to keep; layers: each matrix layer of one report; panels: one panel per platform."""
    mod = _modules()["plot_roofline"]
    style = _modules()["style"]
    opts = dict(flavour=flavour, layers=layers, panels=panels, title=title, no_labels=not labels)
    if platforms:
        opts["platforms"] = platforms if isinstance(platforms, str) else ",".join(platforms)
    if width:
        opts["width"] = width
    if height:
        opts["height"] = height
    args = _args(mod, "-", opts)
    if width is None and panels:
        args.width = style.SINGLE_COLUMN_IN  # the script's own default: double column for panels
    reports = _reports(results)
    return _draw(lambda: mod.make_figure(reports, args))


def plot_breakdown(results, *, per=None, baseline=None, baselines=None, top=0, absolute=False, title=None,
                   width=None, height=None):
    """Latency by cause (array active, weight shift, weight stall, ...): per layer of one run
    (top: the N slowest layers; baseline: that baseline's layers instead) or per workload across
    runs, next to the baselines (names; default: those the runs share), as shares or absolute."""
    mod = _modules()["plot_breakdown"]
    opts = dict(per=per, baseline=baseline, top=top, absolute=absolute, title=title, width=width, height=height)
    if baselines:
        opts["baselines"] = baselines if isinstance(baselines, str) else ",".join(baselines)
    args = _args(mod, "-", opts)
    reports = _reports(results)
    return _draw(lambda: mod.make_figure(reports, args))


def _rows(df):
    """plot_sweep's row form from a sweep DataFrame (every column a metric and a parameter, as
    it reads results.csv); NaN cells are left out like empty CSV cells."""
    fixed = ["point", "index", "workload", "batch", "status", "error"]
    rows = []
    for rec in df.to_dict("records"):
        values = {}
        for k, v in rec.items():
            if k in fixed or v is None or (isinstance(v, float) and math.isnan(v)):
                continue
            values[k] = v.item() if type(v).__module__ == "numpy" and hasattr(v, "item") else v
        rows.append({"point": str(rec.get("point", "")), "workload": rec.get("workload", ""),
                     "batch": rec.get("batch"), "index": rec.get("index"), "status": rec.get("status", "ok"),
                     "error": rec.get("error"), "params": values, "metrics": values})
    return rows


def _sweep_rows(mods, sweep):
    if hasattr(sweep, "to_dict"):
        path, rows = sweep.attrs.get("out", "<sweep DataFrame>"), _rows(sweep)
        if not rows:
            raise TesseraError(f"{path}: no result rows")
        return path, rows
    try:
        return mods["plot_sweep"].read_results(os.fspath(sweep))
    except mods["style"].InputError as e:
        raise TesseraError(str(e)) from None


def _where(where):
    """--where options from {key: value} or ["key=value", ...]."""
    if not where:
        return None
    if isinstance(where, dict):
        return [f"{k}={v}" for k, v in where.items()]
    return [where] if isinstance(where, str) else list(where)


def plot_pareto(sweep, x="summary.latency_s:min", y="summary.tops:max", *, color=None, workload=None, where=None,
                logx=False, logy=False, label_front=False, title=None, width=None, height=None):
    """Scatter of a sweep's ok points with the Pareto front over x and y (NAME:min|max): `sweep` is
    a DataFrame from tessera.sweep/load_sweep, or a results.jsonl/results.csv path or sweep
    directory; color: a column to colour by; where: {key: value} keeps only those points."""
    mods = _modules()
    mod = mods["plot_sweep"]
    opts = dict(x=x, y=y, color=color, workload=workload, where=_where(where), logx=logx, logy=logy,
                label_front=label_front, title=title)
    if width:
        opts["width"] = width
    if height:
        opts["height"] = height
    args = _args(mod, "-", opts)
    path, rows = _sweep_rows(mods, sweep)
    return _draw(lambda: mod.make_figure(path, rows, args))


def plot_lines(sweep, x, y="summary.latency_s", *, group=None, workload=None, where=None, logx=False, logy=False,
               title=None, width=None, height=None):
    """A metric `y` against a parameter `x`, one line per value of `group` (the sweep figure of
    papers): plot_lines(df, "weight_memory.bandwidth_gb_per_s", group="array.rows",
    workload="mlp0", where={"clock_mhz": 700}). Every other parameter must be fixed (by the
    sweep or by workload/where): two points of a line at one x are a TesseraError naming them."""
    mods = _modules()
    mod = mods["plot_sweep"]
    opts = dict(kind="line", x=x, y=y, group=group, workload=workload, where=_where(where), logx=logx, logy=logy,
                title=title)
    if width:
        opts["width"] = width
    if height:
        opts["height"] = height
    args = _args(mod, "-", opts)
    path, rows = _sweep_rows(mods, sweep)
    return _draw(lambda: mod.make_figure(path, rows, args))


def axis_label(key, values=()):
    """The figures' label of a metric or parameter with its unit, and the scale for `values`:
    axis_label("summary.latency_s", [8e-5]) -> ("latency (µs)", 1e6)."""
    return _modules()["metric_labels"].axis(key, list(values))
