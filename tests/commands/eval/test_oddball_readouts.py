"""``eval oddball`` reads out as training does: by default graded (the headline) first, then argmax."""

import json

import numpy as np

from gensim_jax.commands.eval import main
from gensim_jax.evaluation.sable_meyer import SHAPES


def _run(tmp_path, *extra):
    out = tmp_path / f"o{len(list(tmp_path.glob('o*.json')))}.json"
    assert main(["oddball", "--trials", str(tmp_path / "t.npz"), "--out", str(out), *extra]) == 0
    return json.loads(out.read_text())


def test_default_is_graded_then_argmax(tmp_path):
    rng = np.random.default_rng(5)
    emb = rng.standard_normal((11 * 8, 6, 5))
    dev = rng.integers(0, 6, 88)
    emb[np.arange(88), dev] *= np.repeat(np.linspace(4.0, 1.5, 11), 8)[:, None]
    np.savez(tmp_path / "t.npz", embeddings=emb, deviant=dev, shapes=np.repeat(np.array(SHAPES), 8))
    both = _run(tmp_path)
    graded = _run(tmp_path, "--readout", "graded")
    argmax = _run(tmp_path, "--readout", "argmax")
    assert both["readout"] == "graded" and both["readouts"] == ["graded", "argmax"]
    assert list(both).index("error_rate") < list(both).index("argmax")  # graded first
    assert both["error_rate"] == graded["error_rate"] and both["temperature"] == graded["temperature"]
    assert both["summary"] == graded["summary"]
    assert both["argmax"]["readout"] == "argmax" and both["argmax"]["error_rate"] == argmax["error_rate"]
    assert both["argmax"]["summary"] == argmax["summary"] and "argmax" not in argmax
    assert graded["readout"] == "graded" and "readouts" not in graded
