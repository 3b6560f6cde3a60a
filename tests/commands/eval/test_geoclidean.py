"""python -m eval geoclidean with --workdir: JSON against a brute-force few-shot computation, PNG opens."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from gensim_jax.commands.eval import main
from gensim_jax.evaluation.geoclidean import load_geoclidean
from tests.commands.eval.conftest import reference_embed

CONCEPTS = ["triangle", "ccc"]


def _brute_force_accuracy(train, test, kind, task):
    """Best accuracy of 'in iff normalised L1 distance to the prototype <= t' over every t (explicit loops)."""
    proto = [sum(row[d] for row in train) / len(train) for d in range(train.shape[1])]
    rows = [(float(np.mean(np.abs(x - np.array(proto)))), k == "in") for x, k in zip(test, kind) if k in ("in", task)]
    best = 0.0
    for t in [-np.inf] + [s for s, _ in rows]:
        best = max(best, sum((s <= t) == y for s, y in rows) / len(rows))
    return best


def _png_ok(path):
    with Image.open(path) as im:
        assert im.format == "PNG" and im.size[0] > 0 and im.size[1] > 0


def test_geoclidean_pixels_workdir(shared_dir, tmp_path):
    root = shared_dir / "reference" / "geoclidean"
    wd = tmp_path / "wd"
    assert (
        main(
            [
                "geoclidean",
                "--root",
                str(root),
                "--concepts",
                ",".join(CONCEPTS),
                "--threshold",
                "per_concept",
                "--human-close",
                "0.8",
                "--workdir",
                str(wd),
                "--out",
                str(tmp_path / "g.json"),
            ]
        )
        == 0
    )
    out = json.loads((wd / "geoclidean.json").read_text())
    assert out == json.loads((tmp_path / "g.json").read_text())
    for name, c in load_geoclidean(root, CONCEPTS).items():
        grey = lambda x: x.mean(-1)[:, :352, :352].reshape(len(x), 32, 11, 32, 11).mean((2, 4)).reshape(len(x), -1)  # noqa: E731
        for task in ("close", "far"):
            want = _brute_force_accuracy(grey(c.train), grey(c.test), c.test_kind, task)
            assert out["per_concept"]["per_concept"][name][f"acc_{task}"] == pytest.approx(want)
    _png_ok(wd / "geoclidean.png")


@pytest.mark.slow
def test_geoclidean_exports(shared_dir, exports, tmp_path):
    root = shared_dir / "reference" / "geoclidean"
    wd = tmp_path / "wd"
    assert (
        main(
            [
                "geoclidean",
                "--root",
                str(root),
                "--concepts",
                ",".join(CONCEPTS),
                "--export",
                *map(str, exports),
                "--label",
                "tiny",
                "--workdir",
                str(wd),
            ]
        )
        == 0
    )
    out = json.loads((wd / "geoclidean.json").read_text())
    assert out["model"] == "tiny" and len(out["runs"]) == 2
    concepts = load_geoclidean(root, CONCEPTS, image_size=32)
    accs = []
    for d, run in zip(exports, out["runs"]):
        row = []
        for name, c in concepts.items():
            # the official images are grey drawn as RGB: one channel is the grey image
            assert np.allclose(c.train[..., 0], c.train[..., 2])
            tr, te = reference_embed(d, c.train[..., 0]), reference_embed(d, c.test[..., 0])
            for task in ("close", "far"):
                want = _brute_force_accuracy(tr, te, c.test_kind, task)
                assert run["per_concept"]["per_concept"][name][f"acc_{task}"] == pytest.approx(want)
                row.append(want)
        accs.append(np.mean(row))
    acc = out["across_runs"]["per_concept"]["acc"]
    assert acc["mean"] == pytest.approx(np.mean(accs))
    assert acc["sem"] == pytest.approx(np.std(accs, ddof=1) / np.sqrt(2))
    _png_ok(wd / "geoclidean.png")


def test_geoclidean_export_excludes_model(shared_dir, exports):
    with pytest.raises(SystemExit):
        main(
            [
                "geoclidean",
                "--root",
                str(shared_dir / "reference" / "geoclidean"),
                "--export",
                str(exports[0]),
                "--model",
                "resnet18",
            ]
        )
