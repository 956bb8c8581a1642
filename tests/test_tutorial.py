"""docs/tutorial.ipynb runs top to bottom (train, evaluate, plot, export, virtual board, deploy,
inference and a closed loop on the board), so that it never goes stale: executed by nbclient in
a kernel that imports this checkout. About 15-30 s with numba's cache warm."""
import os

import pytest

from helpers import ROOT, needs_micropython, repo_env

nbformat = pytest.importorskip("nbformat", reason='nbformat not installed: pip install -e ".[test]"')
nbclient = pytest.importorskip("nbclient", reason='nbclient not installed: pip install -e ".[test]"')
pytest.importorskip("ipykernel", reason='ipykernel not installed: pip install -e ".[test]"')

NOTEBOOK = os.path.join(ROOT, "docs", "tutorial.ipynb")


def text_of(cell):
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


@needs_micropython
def test_tutorial_runs_top_to_bottom(tmp_path, monkeypatch):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit the notebook without outputs"
    monkeypatch.setenv("PYTHONPATH", repo_env()["PYTHONPATH"])  # the kernel (and its subprocesses) import this checkout
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    out = "\n".join(text_of(c) for c in nb.cells if c.cell_type == "code")
    assert "trained 10000 steps" in out and "return over 10 episodes" in out
    assert any(o.output_type == "display_data" and "image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.outputs), "no learning curve drawn"
    assert "wrote " in out and ".mrlq" in out  # the int16 export
    assert "files copied" in out and "loaded on the board" in out
    # the board's actions and closed-loop returns are the host's
    infer = [line.split() for line in out.splitlines() if line.startswith("obs ")]
    assert len(infer) == 3 and all(words[words.index("board") + 1] == words[words.index("host") + 1] for words in infer)
    rollout = [line.split() for line in out.splitlines() if line.startswith("episode return on the board")]
    assert len(rollout) == 3 and all(abs(float(w[5]) - float(w[9])) < 0.05 for w in rollout)
    assert "removed" in out and not os.listdir(tmp_path)  # nothing left beside it
