"""pytest: analysis/table3.py on synthetic reports whose errors and host-inclusive figures are
derived by hand, and the Table 5 arithmetic of analysis/tpu_paper.py."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "analysis"))
import report_io  # noqa: E402
import table3  # noqa: E402
import tpu_paper  # noqa: E402

SCRIPT = os.path.join(ROOT, "analysis", "table3.py")
# Synthetic TOPS: paper x (1 + error), errors chosen so the means are easy by hand.
ERRORS = {"mlp0": 0.10, "mlp1": -0.10, "lstm0": 0.20, "lstm1": 0.40, "cnn0": -0.20, "cnn1": 1.00}


def report(app, latency_s, tops, table3_rows=None):
    r = {"arch": {"name": "tpu-v1"}, "workload": {"name": app, "batch": tpu_paper.TPU_BATCH[app]},
         "summary": {"latency_s": latency_s, "inferences_per_s": tpu_paper.TPU_BATCH[app] / latency_s, "tops": tops,
                     "peak_tops": 91.75, "oi_macs_per_weight_byte": 1.0, "cycles": {}},
         "roofline": {"peak_tops": 91.75, "weight_memory": {}}, "layers": []}
    if table3_rows is not None:
        r["table3"] = {"rows": [{"row": n, "value": v, "unit": "TOPS" if n == 9 else "%"}
                                for n, v in enumerate(table3_rows, 1)]}
    return r


def write(tmp_path, with_table3=False, drop=None, **over):
    paths = []
    for app in tpu_paper.APPS:
        if app == drop:
            continue
        rows = [v + 1.0 for v in tpu_paper.TABLE3[app]] if with_table3 else None
        r = report(app, 1e-3, tpu_paper.PAPER_TOPS[app] * (1 + ERRORS[app]), rows)
        if app in over:
            r = over[app](r)
        d = tmp_path / app
        d.mkdir()
        (d / "report.json").write_text(json.dumps(r))
        paths.append(str(d / "report.json"))
    return paths


def run(*args, expect=0):
    done = subprocess.run([sys.executable, SCRIPT, *map(str, args)], capture_output=True, text=True)
    assert done.returncode == expect, done.stdout + done.stderr
    return done


def test_table5_data_and_host_inclusive_arithmetic():
    assert tpu_paper.HOST_INTERACTION == {"mlp0": 0.21, "mlp1": 0.76, "lstm0": 0.11, "lstm1": 0.20,
                                          "cnn0": 0.51, "cnn1": 0.14}
    # TPU v1 itself: 2 ms of device time + 76% of it on the host = 3.52 ms
    assert tpu_paper.host_inclusive_s("mlp1", 2e-3) == pytest.approx(3.52e-3)
    # a what-if design at 0.5 ms keeps v1's host time (Sec. 7): 0.5 + 0.76 x 2 = 2.02 ms
    assert tpu_paper.host_inclusive_s("mlp1", 0.5e-3, 2e-3) == pytest.approx(2.02e-3)
    # so a 4x device speed-up becomes 3.52 / 2.02 = 1.74x with host time
    assert tpu_paper.host_inclusive_s("mlp1", 2e-3) / tpu_paper.host_inclusive_s("mlp1", 0.5e-3, 2e-3) == \
        pytest.approx(1.7426, abs=1e-4)


def test_table3_data_sums_as_the_caption_says():
    for app, rows in tpu_paper.TABLE3.items():
        # rows 1 + 4 + 5 + 6 = 100% (to the paper's rounding); rows 2 + 3 = row 1
        assert rows[0] + rows[3] + rows[4] + rows[5] == pytest.approx(100.0, abs=0.15), app
        assert rows[1] + rows[2] == pytest.approx(rows[0], abs=0.15), app
    assert tpu_paper.PAPER_TOPS == {"mlp0": 12.3, "mlp1": 9.7, "lstm0": 3.7, "lstm1": 2.8, "cnn0": 86.0,
                                    "cnn1": 14.1}


def test_errors_mean_and_host_columns(tmp_path):
    reps = table3.by_app([report_io.load_report(p) for p in write(tmp_path)])
    rows = table3.tops_rows(reps)
    for app, err in ERRORS.items():
        assert rows[app]["error"] == pytest.approx(err)
    # |errors| 0.1, 0.1, 0.2, 0.4, 0.2, 1.0: mean 2.0 / 6; without CNN1 1.0 / 5
    assert table3.mean_abs_error(rows) == pytest.approx(2.0 / 6)
    assert table3.mean_abs_error(rows, [a for a in tpu_paper.APPS if a != "cnn1"]) == pytest.approx(0.2)
    # MLP1: 1 ms + 76% = 1.76 ms; TOPS 9.7 x 0.9 / 1.76
    assert rows["mlp1"]["host_latency_s"] == pytest.approx(1.76e-3)
    assert rows["mlp1"]["host_tops"] == pytest.approx(9.7 * 0.9 / 1.76)
    assert rows["cnn0"]["host_tops"] == pytest.approx(86.0 * 0.8 / 1.51)
    text = table3.markdown(reps)
    assert "| MLP1 | 168 | 1.000 ms | 8.73 | 9.7 | -10% | 76% | 1.760 ms | 4.96 |" in text
    assert "33% over the six apps, 20% without CNN1" in text
    assert "no `table3` object" in text


def test_table3_rows_side_by_side(tmp_path):
    done = run(*write(tmp_path, with_table3=True))
    # every Tessera row is the paper's + 1: mean |diff| 1.0 on every row
    assert "| 1 | Array active cycles | 12.7 / 13.7 | 10.6 / 11.6 | 8.2 / 9.2 | 10.5 / 11.5 | 78.2 / 79.2 | " \
           "46.2 / 47.2 | 1.0 |" in done.stdout
    assert "| 9 | TeraOps/sec (92 peak) | 12.3 / 13.3 |" in done.stdout
    assert done.stdout.count(" | 1.0 |") == 9


def test_update_doc(tmp_path):
    doc = tmp_path / "v.md"
    doc.write_text(f"intro\n{table3.MARK_BEGIN}\nold\n{table3.MARK_END}\ntail\n")
    run(*write(tmp_path), "--update-doc", doc)
    text = doc.read_text()
    assert text.startswith("intro\n" + table3.MARK_BEGIN + "\nTOPS:") and text.endswith(table3.MARK_END + "\ntail\n")
    assert "old" not in text


def one_line_error(done, needle):
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], done.stderr


def test_bad_input_is_one_line_exit_2(tmp_path):
    (tmp_path / "a").mkdir()
    one_line_error(run(*write(tmp_path / "a", drop="lstm1"), expect=2), "no report for lstm1")
    (tmp_path / "b").mkdir()
    wrong_batch = write(tmp_path / "b", cnn1=lambda r: dict(r, workload={"name": "cnn1", "batch": 16}))
    one_line_error(run(*wrong_batch, expect=2), "cnn1 at batch 16, Table 1's is 32")
    (tmp_path / "c").mkdir()
    partial = write(tmp_path / "c", with_table3=True, cnn0=lambda r: {k: v for k, v in r.items() if k != "table3"})
    one_line_error(run(*partial, expect=2), "no 'table3' object")
    (tmp_path / "d").mkdir()
    short = write(tmp_path / "d", with_table3=True,
                  mlp0=lambda r: dict(r, table3={"rows": r["table3"]["rows"][:8]}))
    one_line_error(run(*short, expect=2), "table3.rows has no row 9")
    doc = tmp_path / "nomarks.md"
    doc.write_text("no markers\n")
    (tmp_path / "e").mkdir()
    one_line_error(run(*write(tmp_path / "e"), "--update-doc", doc, expect=2), "section to replace")
