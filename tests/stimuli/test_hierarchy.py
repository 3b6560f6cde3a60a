"""Synthetic hierarchy images: the balanced class tree, node/class attributes and both image generators."""

import numpy as np
import pytest

from gensim_jax.kernels.hierarchy import level_labels
from gensim_jax.stimuli import hierarchy as sh


def _root_path(parents, node):
    path = [int(node)]
    while parents[path[-1]] >= 0:
        path.append(int(parents[path[-1]]))
    return path[::-1]


def test_balanced_tree_shape():
    t = sh.balanced_tree((2, 3))
    assert t.num_nodes == 1 + 2 + 6 and len(t.leaves) == 6
    # breadth-first numbering, written out by hand
    assert t.parents.tolist() == [-1, 0, 0, 1, 1, 1, 2, 2, 2]
    labels, n = level_labels(t, t.leaves)
    assert n.tolist() == [1, 2, 6]
    # leaves 0..2 share the first child of the root, 3..5 the second
    assert labels[:, 1].tolist() == [0, 0, 0, 1, 1, 1]
    with pytest.raises(ValueError, match="branching"):
        sh.balanced_tree((2, 0))


def test_class_attributes_follow_the_tree():
    tree = sh.balanced_tree((2, 3, 3))
    nodes = tree.leaves
    # classes that share more of their path have closer attributes on average (every seed)
    k = np.array(
        [[len(set(_root_path(tree.parents, a)) & set(_root_path(tree.parents, b))) - 1 for b in nodes] for a in nodes]
    )
    off = ~np.eye(len(nodes), dtype=bool)
    for seed in range(4):
        attrs = sh.class_attributes(tree, nodes, seed=seed)
        dist = np.linalg.norm(attrs[:, None] - attrs[None], axis=-1)
        means = [dist[(k == d) & off].mean() for d in range(3)]
        assert means[0] > means[1] > means[2]
        # a class's attributes are the sum of its nodes' offsets along the root path (root offset 0)
        node_attr = sh.node_attributes(tree, seed)
        assert np.all(node_attr[0] == 0)
        np.testing.assert_allclose(attrs[5], sum(node_attr[n] for n in _root_path(tree.parents, nodes[5])))


def test_hierarchy_images_are_seeded_class_major_discs():
    tree = sh.balanced_tree((2, 3, 3))
    nodes = tree.leaves
    images, labels = sh.hierarchy_images(tree, nodes, 2, 32, attribute_seed=0, image_seed=1)
    assert images.shape == (36, 32, 32, 3) and images.dtype == np.uint8
    np.testing.assert_array_equal(labels, np.repeat(np.arange(18), 2))
    again, _ = sh.hierarchy_images(tree, nodes, 2, 32, attribute_seed=0, image_seed=1)
    other, _ = sh.hierarchy_images(tree, nodes, 2, 32, attribute_seed=0, image_seed=2)
    np.testing.assert_array_equal(images, again)
    assert not np.array_equal(images, other)
    # without noise the background is exactly grey 0.5 and the disc covers 0.25..0.4 of the side as radius
    clean, _ = sh.hierarchy_images(tree, nodes, 2, 32, attribute_seed=0, image_seed=1, noise=0.0)
    for img in clean:
        disc = np.any(img != 128, axis=-1)
        area = disc.sum()
        assert np.pi * (0.25 * 32) ** 2 * 0.8 <= area <= np.pi * (0.4 * 32) ** 2 * 1.05
        assert np.all(img[~disc] == 128)
    with pytest.raises(ValueError, match="per_class"):
        sh.hierarchy_images(tree, nodes, 0, 32, attribute_seed=0, image_seed=1)
