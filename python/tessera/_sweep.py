"""tessera.sweep: a design-space sweep (`tessera sweep`) as a DataFrame, with progress."""
import copy
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pandas as pd

from ._binary import binary, environment, error_message
from ._errors import TesseraError
from .config import plain, write_yaml

# tessera sweep's exit status when it ran but some points failed (sim/sweep/cli.h).
SWEEP_POINTS_FAILED = 4

FIXED = ["point", "index", "workload", "batch", "status", "error"]


# ----------------------------------------------------------------------------- progress

def _in_kernel():
    """True inside a Jupyter kernel (where a progress line is a display that updates)."""
    ip = sys.modules.get("IPython")
    if ip is None:
        return False
    try:
        shell = ip.get_ipython()
    except Exception:  # pragma: no cover - a broken IPython install
        return False
    return shell is not None and hasattr(shell, "kernel")


class _Progress:
    """One progress line: an updating display in Jupyter, '\\r' on a terminal, else a line at
    the start, every 10 s and at the end (on stderr)."""

    def __init__(self, enabled):
        self.mode = "off"
        self.last = 0.0
        self.text = None
        if not enabled:
            return
        if _in_kernel():
            self.mode = "kernel"
            self.handle = None
        elif hasattr(sys.stderr, "isatty") and sys.stderr.isatty():
            self.mode = "tty"
        else:
            self.mode = "lines"

    def show(self, text, final=False):
        if self.mode == "off" or (text == self.text and not final):
            return
        now = time.monotonic()
        if self.mode == "kernel":
            from IPython.display import Pretty, display
            if self.handle is None:
                self.handle = display(Pretty(text), display_id=True)
            else:
                self.handle.update(Pretty(text))
        elif self.mode == "tty":
            sys.stderr.write("\r" + text + "\033[K" + ("\n" if final else ""))
            sys.stderr.flush()
        elif final or self.text is None or now - self.last >= 10:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
            self.last = now
        self.text = text


def _eta(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else \
        f"{seconds // 60}:{seconds % 60:02d}"


# ----------------------------------------------------------------------------- results

def _read_rows(path):
    """The complete rows of a results.jsonl (a last line without its newline is a write in
    progress or a killed one, and is skipped, as the sweep runner does)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return []
    rows = []
    for line in text.split("\n")[:-1]:
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and "point" in row:
            rows.append(row)
    return rows


def frame(rows):
    """A DataFrame of sweep rows (results.jsonl objects): columns point, index, workload, batch,
    status, error, then every parameter and derived key, then every metric; sorted by index."""
    params, metrics, seen = [], [], set()
    for r in rows:
        for k in (r.get("params") or {}):
            if k not in seen:
                seen.add(k)
                params.append(k)
    for r in rows:
        for k in (r.get("metrics") or {}):
            if k not in seen:
                seen.add(k)
                metrics.append(k)
    records = []
    for r in rows:
        rec = {k: r.get(k) for k in FIXED}
        rec.update(r.get("params") or {})
        rec.update(r.get("metrics") or {})
        records.append(rec)
    df = pd.DataFrame.from_records(records, columns=FIXED + params + metrics)
    for k in metrics:  # a failed point's null metrics: NaN in a numeric column
        if df[k].map(lambda v: v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))).all():
            df[k] = pd.to_numeric(df[k])
    if len(df):
        df = df.sort_values("index", kind="stable").reset_index(drop=True)
    return df


def load_sweep(out):
    """Every row of a sweep's output directory (its results.jsonl) as a DataFrame (see frame)."""
    out = os.fspath(out)
    path = os.path.join(out, "results.jsonl") if os.path.isdir(out) else out
    if not os.path.isfile(path):
        raise TesseraError(f"{path}: no sweep results here (tessera sweep writes DIR/results.jsonl)")
    df = frame(_read_rows(path))
    df.attrs["out"] = os.path.abspath(os.path.dirname(path))
    return df


# ----------------------------------------------------------------------------- experiments

def _is_policy_value(value, base_dir):
    return (isinstance(value, str) and value.endswith((".yaml", ".yml")) and not os.path.isabs(value)
            and ".." not in value.split("/") and os.path.isfile(os.path.join(base_dir, value)))


def _strings(node):
    if isinstance(node, dict):
        for v in node.values():
            yield from _strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v)
    elif isinstance(node, str):
        yield node


def _materialize(experiment, tmp, base_dir):
    """(experiment file, its loaded dict, {temporary path: label}) for a path or a dict."""
    if not isinstance(experiment, dict):
        path = os.fspath(experiment)
        import yaml
        try:
            with open(path, encoding="utf-8") as f:
                data = yaml.safe_load(f)
        except OSError as e:
            raise TesseraError(f"{path}: cannot read the experiment: {e.strerror}") from None
        except yaml.YAMLError:
            data = None  # tessera says what is wrong, with the line
        return path, data if isinstance(data, dict) else {}, {}
    exp = copy.deepcopy(plain(experiment))
    base_dir = os.path.abspath(os.fspath(base_dir) if base_dir is not None else os.getcwd())

    def absolute(p):
        if isinstance(p, str) and p and not p.startswith("${build}") and not os.path.isabs(p):
            return os.path.join(base_dir, p)
        return p

    if "base" in exp:
        exp["base"] = absolute(exp["base"])
    workloads = exp.get("workloads")
    if isinstance(workloads, list):
        for i, w in enumerate(workloads):
            if isinstance(w, str):
                workloads[i] = absolute(w)
            elif isinstance(w, dict) and "path" in w:
                w["path"] = absolute(w["path"])
    # Precision policy files must lie in the experiment's directory: copy them next to it.
    for value in set(_strings({k: exp.get(k) for k in ("parameters", "derived")})):
        if _is_policy_value(value, base_dir):
            dest = os.path.join(tmp, value)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copyfile(os.path.join(base_dir, value), dest)
    name = str(exp.get("name") or "experiment")
    fname = re.sub(r"[^A-Za-z0-9._-]+", "-", name) + ".yaml"
    path = write_yaml(exp, os.path.join(tmp, fname), "experiment written by tessera (Python)")
    return path, exp, {path: f"<experiment dict '{name}'>"}


def _call(cmd, labels, what):
    done = subprocess.run(cmd, capture_output=True, text=True, env=environment())
    if done.returncode != 0:
        raise TesseraError(error_message(done.stderr, done.returncode, labels), done.returncode, done.stderr, cmd)
    return done


def points(experiment, base_dir=None):
    """The design points of an experiment, without running them (`tessera sweep --list`): a
    DataFrame with point, index, workload, batch and every parameter and derived key."""
    tmp = tempfile.mkdtemp(prefix="tessera-sweep-")
    try:
        path, _, labels = _materialize(experiment, tmp, base_dir)
        done = _call([binary(), "sweep", path, "--list"], labels, "list")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    df = frame([dict(r, status=None, error=None) for r in rows])
    return df.drop(columns=["status", "error"])


def sweep(experiment, jobs=None, resume=True, out=None, *, retry_failed=False, timeout=None, progress=True,
          base_dir=None):
    """Runs every design point of an experiment with `tessera sweep`; returns its rows as a DataFrame.

    experiment:   an experiment file (experiments/*.yaml, docs/experiments.md) or a dict of the same
                  form; a dict's relative paths (base, workloads, precision policy files) are relative
                  to `base_dir` (default: the current directory); "${build}/..." is the build directory
    jobs:         points run at a time (-j; default: all cores)
    resume:       --resume: skip the points `out` already holds (finished rows are kept; a fresh
                  directory simply starts). False refuses a directory that holds results.
    out:          output directory (default: the experiment's out:, else out/sweeps/<name>, relative
                  to the current directory)
    retry_failed: with resume, run failed points again
    timeout:      seconds a point may run before it is recorded as failed (--timeout)
    progress:     show "sweep NAME: 12/40 done, 1 failed, 3.1 points/s, ETA 0:09" (a display that
                  updates in Jupyter, a line on stderr otherwise)

    Returns one row per design point of the experiment (earlier rows of points no longer in it
    stay in out/results.jsonl: load_sweep(out) reads everything), sorted by index: columns point,
    index, workload, batch, status ("ok"/"failed"), error, the parameter and derived keys, the
    metrics. A failed point is a row, not an exception. TesseraError: the experiment is invalid
    (exit 2, with file:line and key), some points failed because their environment did (exit 3;
    run again to resume), or the sweep could not run; df.attrs["out"] is the output directory.
    """
    if retry_failed and not resume:
        raise TesseraError("retry_failed needs resume=True (tessera sweep --retry-failed needs --resume)")
    exe = binary()
    tmp = tempfile.mkdtemp(prefix="tessera-sweep-")
    try:
        path, exp, labels = _materialize(experiment, tmp, base_dir)
        listed = _call([exe, "sweep", path, "--list"], labels, "list")
        ids = [json.loads(line)["point"] for line in listed.stdout.splitlines() if line.strip()]
        wanted = set(ids)
        name = str(exp.get("name") or os.path.splitext(os.path.basename(path))[0])
        if out is None:
            out = exp.get("out") or os.path.join("out", "sweeps", name)
        out = os.path.abspath(os.fspath(out))
        cmd = [exe, "sweep", path, "--out", out, "-q"]
        if jobs is not None:
            cmd += ["-j", str(int(jobs))]
        if resume:
            cmd += ["--resume"]
        if retry_failed:
            cmd += ["--retry-failed"]
        if timeout is not None:
            cmd += ["--timeout", str(timeout)]
        results = os.path.join(out, "results.jsonl")
        bar = _Progress(progress)

        def count():
            rows = [r for r in _read_rows(results) if r.get("point") in wanted]
            return len({r["point"] for r in rows}), sum(r.get("status") == "failed" for r in rows)

        before = count()[0]  # rows a resumed sweep already has
        start = time.monotonic()
        stderr_file = tempfile.TemporaryFile(mode="w+", dir=tmp)
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=stderr_file, env=environment())
        try:
            interval = 0.2
            while True:
                try:
                    proc.wait(timeout=interval)
                    break
                except subprocess.TimeoutExpired:
                    pass
                t0 = time.monotonic()
                done, failed = count()
                interval = min(2.0, max(0.2, 20 * (time.monotonic() - t0)))
                elapsed = time.monotonic() - start
                rate = max(done - before, 0) / elapsed if elapsed > 0 else 0.0
                eta = f", ETA {_eta((len(ids) - done) / rate)}" if rate > 0 else ""
                bar.show(f"sweep {name}: {done}/{len(ids)} done, {failed} failed, {rate:.2f} points/s{eta}")
        except BaseException:
            # Ctrl-C (or a kernel interrupt): stop the sweep as tessera does on SIGINT (running
            # points stopped, finished rows kept for resume), then re-raise.
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            raise
        stderr_file.seek(0)
        stderr = stderr_file.read()
        stderr_file.close()
        done, failed = count()
        elapsed = time.monotonic() - start
        bar.show(f"sweep {name}: {done}/{len(ids)} done, {failed} failed, {elapsed:.1f} s", final=True)
        # Exit 4: the sweep ran and some points failed; they are rows with their errors, not an
        # exception (docs/experiments.md, exit codes).
        if proc.returncode not in (0, SWEEP_POINTS_FAILED):
            raise TesseraError(error_message(stderr, proc.returncode, labels), proc.returncode, stderr, cmd)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    df = frame([r for r in _read_rows(results) if r.get("point") in wanted])
    df.attrs["out"] = out
    df.attrs["experiment"] = name
    return df


def pareto(df, x="summary.latency_s:min", y="sram_bytes:min"):
    """The Pareto front of a sweep's ok rows over two columns, each NAME:min or NAME:max (as in
    an experiment's pareto:): the rows no other row beats in both, sorted along x. Uses
    analysis/plot_sweep.py's pareto()."""
    from .plots import _modules
    plot_sweep = _modules()["plot_sweep"]
    xkey, xdir = plot_sweep.parse_axis(x, "min")
    ykey, ydir = plot_sweep.parse_axis(y, "min")
    for key in (xkey, ykey):
        if key not in df.columns:
            raise KeyError(f"{key}: no such column (columns: {', '.join(map(str, df.columns))})")
    ok = df[df["status"] == "ok"] if "status" in df.columns else df
    ok = ok[pd.to_numeric(ok[xkey], errors="coerce").notna() & pd.to_numeric(ok[ykey], errors="coerce").notna()]
    pts = list(zip(ok[xkey].astype(float), ok[ykey].astype(float)))
    front = plot_sweep.pareto(pts, xdir, ydir)
    return ok.iloc[front].reset_index(drop=True)
