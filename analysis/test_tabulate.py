"""pytest: analysis/tabulate.py on real reports written by the built `tessera`."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "analysis"))
import tabulate  # noqa: E402

TESSERA = os.environ.get("TESSERA_BIN", os.path.join(ROOT, "build", "tessera"))


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    assert os.path.exists(TESSERA), f"{TESSERA} not built: run `bash cmake/run.sh build` first"
    out = tmp_path_factory.mktemp("reports")
    paths = []
    for app in ("mlp1", "cnn0"):
        subprocess.run([TESSERA, "run", "-q", "-a", "configs/tpu-v1.yaml", "-w", f"workloads/tpu/{app}.yaml",
                        "-o", str(out / app)], cwd=ROOT, check=True)
        paths.append(str(out / app / "report.json"))
    return paths


def test_table_has_a_row_per_report_with_real_values(reports, tmp_path):
    target = tmp_path / "apps.md"
    assert tabulate.main(reports + ["--out", str(target)]) == 0
    lines = target.read_text().splitlines()
    assert len(lines) == 2 + len(reports)
    mlp1 = json.load(open(reports[0]))
    row = lines[2].split(" | ")
    assert row[0] == "| mlp1" and row[2] == "168"
    assert row[5] == f"{mlp1['summary']['tops']:.2f}"
    assert row[6] == "9.7"  # the paper's MLP1: Table 3 row 9
    assert lines[3].split(" | ")[6] == "86.0"  # CNN0
    assert tabulate.paper_tops("resnet50") == "-"
    shares = [float(c.strip(" |%")) for c in row[10:]]
    assert abs(sum(shares) - 100.0) < 0.5  # the breakdown covers the whole run


def test_malformed_report_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "report.json"
    bad.write_text('{"arch": {"name": "x"}')
    assert tabulate.main([str(bad)]) == 2
    err = capsys.readouterr().err
    assert "not a Tessera report (invalid JSON" in err and str(bad) in err
    bad.write_text('{"arch": {"name": "x"}, "workload": {"name": "w", "batch": 1}}')
    assert tabulate.main([str(bad)]) == 2
    assert "missing 'summary'" in capsys.readouterr().err
