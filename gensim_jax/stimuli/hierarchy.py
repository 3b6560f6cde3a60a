"""Synthetic image sets whose classes follow a class tree (the offline stand-ins for ImageNet).

One generator, seeded and deterministic, numpy only: :func:`hierarchy_images` draws one coloured
grating disc per image whose colour, orientation and spatial frequency are sums of per-node offsets
along the class's root-to-leaf path (:func:`node_attributes`, :func:`class_attributes`), at a random
position, size and phase, with pixel noise. It makes the training and held-out images of the
``imagenet_hierarchy`` experiment's ``cpu_small`` config (``dataset="synthetic"``) and the offline
stimuli of ``gensim-jax score`` and ``gensim-jax eval hierarchy``
(:func:`gensim_jax.evaluation.hierarchy.synthetic_stimuli`).

The class tree is :func:`balanced_tree` (``branching[l]`` children per level-``l`` node), the tree
that also gives the GenSim table (paper Eq. 4) and the decoding levels
(:mod:`gensim_jax.evaluation.hierarchy`).
"""

from __future__ import annotations

import numpy as np

from gensim_jax.kernels.hierarchy import Tree

__all__ = ["balanced_tree", "node_attributes", "class_attributes", "hierarchy_images"]


def balanced_tree(branching) -> Tree:
    """A tree whose level ``l`` nodes each have ``branching[l]`` children (root at level 0).

    Nodes are numbered breadth-first; the leaves are the last ``prod(branching)`` nodes.
    """
    branching = [int(b) for b in branching]
    if not branching or any(b < 1 for b in branching):
        raise ValueError(f"branching must be a non-empty list of positive ints, got {branching}")
    parents = [-1]
    frontier = [0]
    for b in branching:
        nxt = []
        for p in frontier:
            for _ in range(b):
                parents.append(p)
                nxt.append(len(parents) - 1)
        frontier = nxt
    return Tree.from_parents(np.array(parents))


def node_attributes(tree: Tree, seed: int) -> np.ndarray:
    """``(N, 5)`` per-node offsets (colour logits RGB, orientation, log frequency); root 0.

    The offsets of a node's children are drawn i.i.d., centred over the siblings and rescaled so
    that their root-mean-square (in units of the per-column scales ``1.5, 1.5, 1.5, 0.9, 0.4``) is 1,
    then shrunk with depth (``0.6 ** (depth - 1)``): siblings are always equally far apart on
    average, and deeper levels are finer distinctions.
    """
    rng = np.random.default_rng([int(seed), 7_001])
    col_scale = np.array([1.5, 1.5, 1.5, 0.9, 0.4])
    raw = rng.standard_normal((tree.num_nodes, 5))
    attr = np.zeros((tree.num_nodes, 5))
    for parent in np.flatnonzero(tree.num_children > 0):
        kids = np.flatnonzero(tree.parents == parent)
        v = raw[kids]
        if len(kids) > 1:
            v = v - v.mean(axis=0)
        v = v / max(float(np.sqrt(np.mean(np.sum(v**2, axis=1)) / 5)), 1e-12)
        attr[kids] = v * col_scale * 0.6 ** (tree.depth[kids][:, None] - 1)
    return attr


def class_attributes(tree: Tree, class_nodes, seed: int) -> np.ndarray:
    """``(C, 5)`` attributes of each class: the sum of the node offsets along its root path."""
    attr = node_attributes(tree, seed)
    return np.stack([attr[tree.path(int(n))].sum(axis=0) for n in np.asarray(class_nodes)])


def hierarchy_images(
    tree: Tree, class_nodes, per_class: int, size: int, *, attribute_seed: int, image_seed: int, noise: float = 0.1
) -> tuple[np.ndarray, np.ndarray]:
    """A labelled image set whose classes follow ``tree`` (the imagenet_hierarchy ``cpu_small`` stand-in for ImageNet).

    Each image is a grey background with one disc (centre, radius ``0.25..0.4 size`` random) filled
    with a sinusoidal grating of random phase; the disc's colour (sigmoid of the class's colour
    logits), orientation and spatial frequency (``exp(2 + log-frequency) / size`` cycles per
    pixel, 1.3 to 20 cycles per image) come from :func:`class_attributes` (sums of per-node
    offsets along the root path, drawn with ``attribute_seed``), so classes sharing a deeper
    ancestor look more alike. Gaussian pixel noise ``noise`` is added.

    Args:
      tree, class_nodes: the class tree and the ``(C,)`` node of each class.
      per_class: images per class.
      size: image side.
      attribute_seed: seed of the class appearance (the "world"; share it between train and test).
      image_seed: seed of positions, sizes, phases and noise (differs between sets).
      noise: pixel-noise standard deviation on the ``[0, 1]`` scale.

    Returns:
      ``(images (C * per_class, size, size, 3) uint8, labels (C * per_class,) int32)``, class-major.
    """
    nodes = np.asarray(class_nodes)
    if per_class < 1 or size < 4:
        raise ValueError(f"per_class must be >= 1 and size >= 4, got {per_class}, {size}")
    attr = class_attributes(tree, nodes, attribute_seed)
    labels = np.repeat(np.arange(len(nodes), dtype=np.int32), per_class)
    n = len(labels)
    rng = np.random.default_rng([int(image_seed), 7_002])
    radius = rng.uniform(0.25, 0.4, n) * size
    cx = rng.uniform(radius, size - radius)
    cy = rng.uniform(radius, size - radius)
    phase = rng.uniform(0, 2 * np.pi, n)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float64) + 0.5
    a = attr[labels]
    colour = 1.0 / (1.0 + np.exp(-a[:, :3]))
    theta = a[:, 3]
    freq = np.exp(np.clip(2.0 + a[:, 4], 0.3, 3.0)) / size
    proj = xx[None] * np.cos(theta)[:, None, None] + yy[None] * np.sin(theta)[:, None, None]
    grating = 0.6 + 0.4 * np.cos(2 * np.pi * freq[:, None, None] * proj + phase[:, None, None])
    inside = ((xx[None] - cx[:, None, None]) ** 2 + (yy[None] - cy[:, None, None]) ** 2) <= radius[:, None, None] ** 2
    img = np.where(inside[..., None], colour[:, None, None, :] * grating[..., None], 0.5)
    img = img + noise * rng.standard_normal(img.shape)
    return np.clip(np.round(img * 255), 0, 255).astype(np.uint8), labels
