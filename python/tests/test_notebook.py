"""The design-space notebook runs end to end, headless (nbclient, kernel python3 on
/usr/bin/python3), against the real executable, so it cannot rot: every cell executes and its
checks of the conclusion hold.

Run: /usr/bin/python3 -m pytest -q python/tests/test_notebook.py
"""
import os
import time

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOTEBOOK = os.path.join(ROOT, "analysis", "notebooks", "design-space.ipynb")


def test_notebook_is_stored_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, "clear the outputs before committing"


def test_design_space_notebook_executes(tmp_path, monkeypatch):
    # The kernel inherits this environment: its sweep output, IPython and Jupyter state go to tmp_path.
    monkeypatch.setenv("TESSERA_NOTEBOOK_OUT", str(tmp_path / "out"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "mpl"))
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": os.path.dirname(NOTEBOOK)}})
    start = time.monotonic()
    try:
        client.execute()
    except CellExecutionError as e:
        raise AssertionError(f"the notebook failed:\n{e}") from None
    elapsed = time.monotonic() - start
    assert elapsed < 60, f"the notebook took {elapsed:.0f} s; keep it under a minute"

    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "Answer: a " in text and "ms per token within 8 MiB of SRAM" in text
    # The figures (roofline, Pareto, breakdown) are displayed as images.
    images = [o for o in outputs if o.output_type in ("display_data", "execute_result") and "image/png" in o.data]
    assert len(images) >= 3
    # The sweep's progress is a display that ends with the point count.
    progress = [o.data["text/plain"] for o in outputs if o.output_type in ("display_data", "update_display_data")
                and "text/plain" in o.get("data", {}) and o.data["text/plain"].startswith("sweep gpt2-decode-sram")]
    assert progress and " done, 0 failed" in progress[-1]
    assert (tmp_path / "out" / "gpt2-decode-sram" / "results.jsonl").is_file()
