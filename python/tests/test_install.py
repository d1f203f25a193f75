"""pytest: `cmake --install` gives a tessera that works from any directory (issue 33 item 8).

Installs the repository's build (build/, as `bash cmake/run.sh build` leaves it) into a temporary
prefix, then, from another directory, runs PREFIX/bin/tessera on the installed config and
workload with a baseline found by name, and imports the installed Python package, which must
find the installed executable and the analysis scripts its figures use.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build")


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    if not os.path.isfile(os.path.join(BUILD, "CMakeCache.txt")) or not os.path.isfile(os.path.join(BUILD, "tessera")):
        pytest.skip("no build/ with build/tessera to install")
    if not shutil.which("cmake"):
        pytest.skip("no cmake")
    p = tmp_path_factory.mktemp("prefix")
    done = subprocess.run(["cmake", "--install", BUILD, "--prefix", str(p)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return p


def test_installed_files(prefix):
    share = prefix / "share" / "tessera"
    for rel in ("configs/tpu-v1.yaml", "configs/baselines/k80.yaml", "configs/hosts/haswell-tpu-server.yaml",
                "workloads/tpu/mlp0.yaml", "experiments/tpu-bandwidth.yaml", "python/tessera/__init__.py",
                "analysis/plot_sweep.py", "analysis/metric_labels.py", "analysis/style.py"):
        assert (share / rel).is_file(), rel
    assert os.access(prefix / "bin" / "tessera", os.X_OK)
    assert not (share / "analysis" / "test_plots.py").exists()


def test_installed_tessera_runs_from_another_directory(prefix, tmp_path):
    share = prefix / "share" / "tessera"
    # A baseline only the installed tree has: found by name only through PREFIX/share/tessera.
    shutil.copy(share / "configs" / "baselines" / "k80.yaml", share / "configs" / "baselines" / "only-installed.yaml")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
    env.pop("TESSERA_BASELINES_DIR", None)
    done = subprocess.run([str(prefix / "bin" / "tessera"), "run", "-a", str(share / "configs" / "tpu-v1.yaml"),
                           "-w", str(share / "workloads" / "tpu" / "mlp1.yaml"), "-b", "8", "-q", "-o", "out",
                           "--baseline", "only-installed"], cwd=elsewhere, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with open(elsewhere / "out" / "report.json", encoding="utf-8") as f:
        report = json.load(f)
    assert [b["name"] for b in report["baselines"]] == ["only-installed"]
    assert report["workload"]["batch"] == 8


def test_installed_python_package(prefix, tmp_path):
    code = ("import tessera, sys; print(tessera.binary()); "
            "print(tessera.axis_label('summary.latency_s', [8e-5])[0]); "
            "r = tessera.run(sys.argv[1], sys.argv[2], batch=8); print(r.summary['latency_s'] > 0)")
    share = prefix / "share" / "tessera"
    env = {k: v for k, v in os.environ.items() if k not in ("TESSERA_BIN", "PYTHONPATH")}
    env["PYTHONPATH"] = str(share / "python")
    done = subprocess.run([sys.executable, "-c", code, str(share / "configs" / "tpu-v1.yaml"),
                           str(share / "workloads" / "tpu" / "mlp1.yaml")], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [str(prefix / "bin" / "tessera"), "latency (µs)", "True"]
