"""Hierarchy decoding: leaf-encoding embeddings decode every level, random ones give chance."""

import numpy as np
import pytest
from PIL import Image

from gensim_jax.evaluation import hierarchy as hd
from gensim_jax.kernels.hierarchy import Tree


def test_leaf_encoding_embeddings_decode_every_level():
    rng = np.random.default_rng(0)
    tree = hd.balanced_tree((2, 3, 2))
    classes = np.repeat(np.arange(12), 15)
    onehot = np.eye(12)[classes] * 5 + 0.3 * rng.standard_normal((len(classes), 12))
    r = hd.decode_levels(onehot, classes, tree, seed=0)
    assert [lv.level for lv in r.levels] == [1, 2, 3]
    assert [lv.num_labels for lv in r.levels] == [2, 6, 12]
    for lv in r.levels:
        assert lv.accuracy >= 0.95
        assert lv.chance == pytest.approx(1 / lv.num_labels)
        assert len(lv.fold_accuracies) == 3
    want = sum(np.log(lv.accuracy * lv.num_labels) for lv in r.levels)
    assert r.score == pytest.approx(want)
    assert r.score > 0.9 * np.log(2 * 6 * 12)


def test_random_embeddings_give_chance():
    rng = np.random.default_rng(1)
    tree = hd.balanced_tree((2, 3))
    classes = np.repeat(np.arange(6), 60)
    x = rng.standard_normal((len(classes), 10))
    r = hd.decode_levels(x, classes, tree, seed=1)
    for lv in r.levels:
        n = len(classes)
        assert abs(lv.accuracy - lv.chance) < 4 * np.sqrt(lv.chance * (1 - lv.chance) / n)
    assert abs(r.score) < 0.5


def test_synthetic_stimuli_are_the_experiments_gratings_and_decodable():
    from gensim_jax.stimuli.hierarchy import balanced_tree, hierarchy_images

    images, classes, tree, nodes = hd.synthetic_stimuli(2, per_class=10, image_size=16, branching=(2, 3))
    assert images.shape == (60, 16, 16, 3) and images.dtype == np.uint8 and classes.dtype == np.int64
    np.testing.assert_array_equal(classes, np.repeat(np.arange(6), 10))
    # the one generator: the imagenet_hierarchy experiment's gratings, appearance seed 2, image seed 3
    want, labels = hierarchy_images(balanced_tree((2, 3)), balanced_tree((2, 3)).leaves, 10, 16, attribute_seed=2,
                                    image_seed=3, noise=0.1)  # fmt: skip
    np.testing.assert_array_equal(images, want)
    np.testing.assert_array_equal(nodes, tree.leaves)
    r = hd.decode_levels(hd.pixel_embedding(images, 4), classes, tree, nodes, seed=0)
    assert all(lv.accuracy > lv.chance for lv in r.levels)  # every level above chance from 4 x 4 pooled pixels
    # deterministic in the seed
    np.testing.assert_array_equal(images, hd.synthetic_stimuli(2, per_class=10, image_size=16, branching=(2, 3))[0])


def test_aggregate_and_errors():
    assert hd.aggregate_score([0.5, 0.2], [0.25, 0.1]) == pytest.approx(2 * np.log(2))
    with pytest.raises(ValueError, match="> 0"):
        hd.aggregate_score([0.0], [0.5])
    tree = hd.balanced_tree((2,))
    with pytest.raises(ValueError, match="classes"):
        hd.decode_levels(np.zeros((10, 2)), np.full(10, 5), tree)


def test_majority_chance_on_unbalanced_levels():
    # root -> A (5 leaves), B (1 leaf): level 1 is 5:1 unbalanced
    tree = Tree.from_parents(np.array([-1, 0, 0, 1, 1, 1, 1, 1, 2]))
    classes = np.repeat(np.arange(6), 40)
    x = np.random.default_rng(3).standard_normal((len(classes), 6))
    uni = hd.decode_levels(x, classes, tree, seed=0)
    maj = hd.decode_levels(x, classes, tree, seed=0, chance="majority")
    lv_u, lv_m = uni.levels[0], maj.levels[0]
    assert lv_u.chance == 0.5 and lv_m.chance == pytest.approx(5 / 6) and lv_u.majority == pytest.approx(5 / 6)
    assert lv_u.accuracy == lv_m.accuracy
    # random features cannot beat always guessing the majority label
    assert lv_m.accuracy < 5 / 6 + 0.05
    assert maj.score == pytest.approx(sum(np.log(lv.accuracy / lv.majority) for lv in maj.levels))
    assert maj.score < uni.score
    with pytest.raises(ValueError, match="chance"):
        hd.decode_levels(x, classes, tree, chance="prior")


def _png_ok(path):
    with Image.open(path) as im:
        assert im.format == "PNG" and im.size[0] > 0 and im.size[1] > 0


def test_plot_hierarchy_lines_and_scores(tmp_path):
    acc = np.array([[0.9, 0.5, 0.2], [0.8, 0.4, 0.3]])
    chance = np.array([0.5, 1 / 6, 1 / 18])
    score = np.log(acc / chance).sum(1)
    fig = hd.plot_hierarchy(
        {"m": {"levels": [1, 2, 3], "accuracy": acc, "chance": chance, "score": score}}, tmp_path / "h.png"
    )
    ax_l, ax_s = fig.axes[:2]
    bars = [c for c in ax_l.containers if c.get_label() == "m"][0]  # ErrorbarContainer
    np.testing.assert_allclose(bars.lines[0].get_ydata(), [0.85, 0.45, 0.25])
    assert ax_s.patches[0].get_height() == pytest.approx(score.mean())
    _png_ok(tmp_path / "h.png")
    with pytest.raises(ValueError, match="accuracy must be"):
        hd.plot_hierarchy({"m": {"levels": [1, 2], "accuracy": acc, "chance": chance[:2], "score": score}})
