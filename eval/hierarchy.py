"""``python -m eval hierarchy``: decode every class-tree level from embeddings (paper Sec. 3.3, Appendix N).

With ``--embeddings FILE.npz`` (arrays ``embeddings`` ``(N, D)`` and ``classes`` ``(N,)``, ImageNet-1k
labels in tensorflow-datasets order) the tree is the packaged WordNet tree of ImageNet-1k. Without
it the protocol runs offline on :func:`~gensim_jax.evaluation.hierarchy_decoding.synthetic_hierarchy_images`
(a 2 x 3 x 3 tree) embedded as raw pixels (``--shuffle-embeddings`` breaks the image-label link to
show chance).
"""

from __future__ import annotations

import argparse

import numpy as np

from eval._common import emit, load_npz
from gensim_jax.evaluation.hierarchy_decoding import decode_levels, synthetic_hierarchy_images


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m eval hierarchy", description=__doc__)
    p.add_argument("--embeddings", default=None, help="npz with embeddings (N,D) and classes (N,)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--per-leaf", type=int, default=12, help="synthetic images per leaf")
    p.add_argument("--noise", type=float, default=2.0, help="synthetic pixel noise")
    p.add_argument("--shuffle-embeddings", action="store_true")
    p.add_argument("--chance", choices=("uniform", "majority"), default="uniform")
    p.add_argument("--n-jobs", type=int, default=None, help="parallel one-vs-all SVM fits")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)

    rng = np.random.default_rng(a.seed)
    if a.embeddings:
        from gensim_jax.kernels.hierarchy import imagenet1k_hierarchy

        z = load_npz(a.embeddings, ("embeddings", "classes"))
        h = imagenet1k_hierarchy()
        x, y, tree, nodes = z["embeddings"], z["classes"].astype(np.int64), h.tree, h.class_nodes
        source = a.embeddings
    else:
        images, y, tree = synthetic_hierarchy_images(rng, per_leaf=a.per_leaf, noise=a.noise)
        x, nodes, source = images.reshape(len(images), -1), None, "synthetic pixels"
    if a.shuffle_embeddings:
        x = x[rng.permutation(len(x))]
    r = decode_levels(x, y, tree, nodes, seed=a.seed, chance=a.chance, n_jobs=a.n_jobs)
    emit({"source": source, "shuffled": a.shuffle_embeddings, "chance": a.chance, "score": r.score,
          "levels": [lv for lv in r.levels]}, a.out)
    return 0
