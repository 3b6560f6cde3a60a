"""Labelled ordered trees and Moschitti's tree kernels (ST, SST, PTK), in log space.

The GenSim Geoclidean experiment (paper Appendix M) regresses the cosine similarity of two image
embeddings onto the log of a *tree kernel* between the parse trees of the programs that generated
the images. This package holds everything about those trees that does not know about Geoclidean, in
three modules: :mod:`~gensim_jax.kernels.trees.tree` (the trees and their bracket notation),
:mod:`~gensim_jax.kernels.trees.pairwise` (the kernel between two trees) and
:mod:`~gensim_jax.kernels.trees.gram` (the Gram matrix of a corpus and the target table); every
public name is importable from here:

* :class:`Tree`: a small immutable labelled ordered tree ``(label, children)``. A node without
  children is a *leaf* (a terminal symbol of a grammar); every other node has a *production*
  ``label -> child labels`` (leaf children written in quotes, as NLTK prints productions).
* Three convolution kernels of Moschitti (2006), each a sum over pairs of nodes
  ``K(T1, T2) = sum_{n1 in T1} sum_{n2 in T2} Delta(n1, n2)``:

  - ``"st"``  subtree kernel (Vishwanathan & Smola 2002; Moschitti 2006 Sec. 2.1): a fragment is
    a node together with *all* its descendants.
    ``Delta = 0`` if the productions differ, else ``lam * prod_j Delta(c1_j, c2_j)`` over the
    non-leaf children (so ``lam`` for a pre-terminal). Equivalently ``Delta(n1, n2) = lam^size``
    when the complete subtrees below ``n1`` and ``n2`` are identical (``size`` = number of
    non-leaf nodes), else 0.
  - ``"sst"`` subset-tree kernel (Collins & Duffy 2002; Moschitti 2006 Eq. 2): a fragment is any
    connected piece that keeps whole productions.
    ``Delta = 0`` if the productions differ, else ``lam * prod_j (1 + Delta(c1_j, c2_j))``.
  - ``"ptk"`` partial-tree kernel (Moschitti 2006, "Efficient convolution kernels for dependency
    and constituent syntactic trees", Eq. 3): fragments may keep any subsequence of a node's
    children. ``Delta = 0`` if the labels differ, else
    ``mu * (lam^2 + sum_{I1, I2, |I1|=|I2|} lam^(d(I1)+d(I2)) prod_j Delta(c1[I1_j], c2[I2_j]))``
    where ``I1, I2`` are increasing child index sequences and ``d(I) = I_last - I_first + 1``.
    Every node, leaves included, roots fragments.

  The ST and SST sums run over nodes that have a production (leaves root no fragment), the PTK
  sum over all nodes.
* The normalized kernel ``K(T1, T2) / sqrt(K(T1, T1) K(T2, T2))`` (in ``[0, 1]``, 1 on identical
  trees) and its log, the GenSim regression target (paper Appendix M, Eq. 2 with the tree kernel
  as similarity).

Everything is computed in **log space** (``logaddexp``), so fragment counts that overflow
float64 (``lam = 1`` on large trees) stay finite. A kernel value of 0 (no shared fragment) has
log ``-inf`` in :func:`log_tree_kernel` and :func:`log_gram_matrix`; :func:`gram_log_table`, the
table a training step gathers from, clips it to a finite floor ``log_floor`` (default ``-30``,
i.e. ``K_norm ~ 1e-13``) so that the regression target is never infinite.

Algorithms. A single pair uses Moschitti's fast tree kernel (FTK): the nodes of each tree are
sorted by production (ST/SST) or label (PTK), the two sorted lists are merged to list only the
node pairs whose ``Delta`` can be non-zero, and ``Delta`` is memoized over those pairs in
post-order (children before parents). PTK's sum over child subsequences uses an ``O(n m)``
dynamic program (derived in the docstring of ``pairwise._ptk_children_sum``). A Gram matrix over a corpus uses
the same recursions, but observes that ``Delta(n1, n2)`` depends only on the two subtrees below
``n1`` and ``n2``: all subtrees of the corpus are interned into integer *types*, ``Delta`` is
computed once per pair of types (vectorized with numpy per production/label group and height
level), and ``K = C D C^T`` with ``C`` the (trees x types) count matrix. The ST Gram is a weighted
count match, ``C diag(lam^size) C^T``. These routines are plain numpy/scipy (trees are ragged,
nothing here is jitted); a training step gathers from the precomputed table.

References: A. Moschitti (2006), "Making tree kernels practical for natural language learning"
(EACL) and "Efficient convolution kernels for dependency and constituent syntactic trees" (ECML);
M. Collins and N. Duffy (2002), "New ranking algorithms for parsing and tagging: kernels over
discrete structures"; S. V. N. Vishwanathan and A. J. Smola (2002), "Fast kernels for string and
tree matching".
"""

from gensim_jax.kernels.trees.gram import gram_log_table, gram_matrix, log_gram_matrix
from gensim_jax.kernels.trees.pairwise import TreeKind, log_tree_kernel, normalized_tree_kernel, tree_kernel
from gensim_jax.kernels.trees.tree import Tree

__all__ = [
    "Tree",
    "TreeKind",
    "tree_kernel",
    "log_tree_kernel",
    "normalized_tree_kernel",
    "log_gram_matrix",
    "gram_matrix",
    "gram_log_table",
]
