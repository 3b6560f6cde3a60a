"""python -m eval hierarchy with --workdir and --export: JSON against a separate computation, PNG opens."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from gensim_jax.commands.eval import main
from gensim_jax.evaluation.hierarchy import decode_levels, synthetic_stimuli
from tests.commands.eval.conftest import IMAGENET_MEAN, IMAGENET_STD


def _png_ok(path):
    with Image.open(path) as im:
        assert im.format == "PNG" and im.size[0] > 0 and im.size[1] > 0


def test_hierarchy_pixels_workdir(tmp_path):
    wd = tmp_path / "wd"
    assert main(["hierarchy", "--per-leaf", "6", "--noise", "0.3", "--workdir", str(wd)]) == 0
    out = json.loads((wd / "hierarchy.json").read_text())
    # 2 x 3 x 3 tree: 2, 6 and 18 labels; chance 1/labels; score = sum log(a / c) recomputed by hand
    assert [(lv["level"], lv["num_labels"]) for lv in out["levels"]] == [(1, 2), (2, 6), (3, 18)]
    acc = np.array([lv["accuracy"] for lv in out["levels"]])
    assert out["score"] == pytest.approx(np.log(acc[0] * 2) + np.log(acc[1] * 6) + np.log(acc[2] * 18))
    assert np.all(acc > 1.0 / np.array([2, 6, 18]))  # the grating pixels carry every level above chance
    # independent: the same seeded gratings (the generator of gensim-jax score), raw pixels, decoded directly
    images, classes, tree, nodes = synthetic_stimuli(0, per_class=6, image_size=16, noise=0.3)
    want = decode_levels(images.reshape(len(images), -1), classes, tree, nodes, seed=0)
    np.testing.assert_array_equal(acc, [lv.accuracy for lv in want.levels])
    _png_ok(wd / "hierarchy.png")


@pytest.mark.slow
def test_hierarchy_exports(exports, tmp_path):
    import jax

    from gensim_jax.training.export import load_exported

    wd = tmp_path / "wd"
    assert (
        main(
            [
                "hierarchy",
                "--export",
                *map(str, exports),
                "--per-leaf",
                "4",
                "--size",
                "32",
                "--seed",
                "2",
                "--workdir",
                str(wd),
            ]
        )
        == 0
    )
    out = json.loads((wd / "hierarchy.json").read_text())
    images, classes, tree, nodes = synthetic_stimuli(2, per_class=4, image_size=32)
    unit = images.astype(np.float32) / 255.0  # uint8 gratings, normalised as each export says
    scores = []
    for d, run in zip(exports, out["runs"]):
        model, variables, meta = load_exported(d)
        x = (unit - IMAGENET_MEAN) / IMAGENET_STD if meta["preprocess"] == "imagenet" else unit
        emb = np.asarray(jax.jit(lambda v, b: model.apply(v, b)["embedding"])(variables, x.astype(np.float32)))
        want = decode_levels(emb, classes, tree, nodes, seed=2)
        np.testing.assert_allclose(
            [lv["accuracy"] for lv in run["levels"]], [lv.accuracy for lv in want.levels], atol=1.01 / 72
        )  # float32 rounding (batched vs one jit) may move one image
        scores.append(run["score"])
    s = out["across_runs"]["score"]
    assert s["mean"] == pytest.approx(np.mean(scores)) and s["sem"] == pytest.approx(
        np.std(scores, ddof=1) / np.sqrt(2)
    )
    _png_ok(wd / "hierarchy.png")


def test_hierarchy_images_need_export(tmp_path):
    with pytest.raises(SystemExit):
        main(["hierarchy", "--images", str(tmp_path / "x.npz")])


@pytest.mark.slow
def test_hierarchy_export_images_on_the_imagenet_tree(exports, tmp_path):
    import jax

    from gensim_jax.kernels.hierarchy import imagenet1k_hierarchy
    from gensim_jax.training.export import load_exported

    rng = np.random.default_rng(4)
    classes = np.repeat([0, 1, 400, 950], 9)  # tench, goldfish, an artefact, a fruit
    images = rng.random((len(classes), 32, 32, 3)).astype(np.float32)
    images[:, :16] *= (classes[:, None, None, None] % 7) / 7.0  # class-dependent brightness
    np.savez(tmp_path / "img.npz", images=images, classes=classes)
    wd = tmp_path / "wd"
    assert (
        main(["hierarchy", "--export", str(exports[1]), "--images", str(tmp_path / "img.npz"), "--workdir", str(wd)])
        == 0
    )
    out = json.loads((wd / "hierarchy.json").read_text())
    model, variables, meta = load_exported(exports[1])
    assert meta["preprocess"] == "none"
    emb = np.asarray(jax.jit(lambda v, b: model.apply(v, b)["embedding"])(variables, images))
    h = imagenet1k_hierarchy()
    want = decode_levels(emb, classes, h.tree, h.class_nodes, seed=0)
    got = out["runs"][0]["levels"]
    assert [lv["level"] for lv in got] == [lv.level for lv in want.levels]
    assert [lv["num_labels"] for lv in got] == [lv.num_labels for lv in want.levels]
    np.testing.assert_allclose(
        [lv["accuracy"] for lv in got], [lv.accuracy for lv in want.levels], atol=1.01 / 36
    )  # at most one of 36 images may differ (float32 rounding)
    _png_ok(wd / "hierarchy.png")
