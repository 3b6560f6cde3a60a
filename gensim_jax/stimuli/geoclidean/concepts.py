"""The 37 Geoclidean concept programs (paper Appendix O) and the paper's 30/7 train/test split.

The programs are those of the official Geoclidean benchmark (Hsu et al. 2022), as printed in
Appendix O of the GenSim paper, stored as canonical program text (one bare construction per line;
see :mod:`gensim_jax.stimuli.geoclidean.grammar`). Each concept has an integer *program id*: its
position in :data:`CONCEPT_NAMES` (Appendix O order). Ids index the rows and columns of the tree
kernel tables built from :func:`concept_parse_trees`, so a training step can gather the GenSim
target ``log K(tree_a, tree_b)`` by program id.

Split (Appendix M/O): 7 concepts are held out for testing (:data:`TEST_CONCEPTS`), the other 30
generate the training images (:data:`TRAIN_CONCEPTS`).

Benchmark directory layout:
``<root>/<family>/concept_<name>/{concept,close_concept,far_concept}.txt``, with the family of
each concept in :data:`CONCEPT_FAMILY` (``"elements"``: Euclidean constructions such as
``square``; ``"constraints"``: free arrangements such as ``ccl``).
"""

from __future__ import annotations

from types import MappingProxyType

from gensim_jax.kernels.trees import Tree
from gensim_jax.stimuli.geoclidean.grammar import Program, parse_program

__all__ = [
    "CONCEPT_PROGRAMS",
    "CONCEPT_NAMES",
    "CONCEPT_IDS",
    "CONCEPT_FAMILY",
    "TEST_CONCEPTS",
    "TRAIN_CONCEPTS",
    "TRAIN_IDS",
    "TEST_IDS",
    "concept_program",
    "concept_parse_trees",
    "split_ids",
]

_PROGRAMS = {
    "perp_bisector": (
        "l1 = line(p1(), p2())\nc1* = circle(p1(), p2())\nc2* = circle(p2(), p1())\nl2 = line(p3(c1, c2), p4(c1, c2))\n"
    ),
    "rectilinear": (
        "l1 = line(p1(), p2())\n"
        "l2 = line(p2(), p3())\n"
        "l3 = line(p3(), p4())\n"
        "l4 = line(p4(), p5())\n"
        "l5 = line(p5(), p1())\n"
    ),
    "ang_bisector": (
        "l1 = line(p1(), p2())\n"
        "c1* = circle(p1(), p2())\n"
        "c2* = circle(p2(), p1())\n"
        "c3* = circle(p3(c1, c2), p1())\n"
        "l2 = line(p1(), p3(c1, c2))\n"
        "l3 = line(p1(), p4(c2, c3))\n"
    ),
    "oblong": (
        "l1* = line(p1(), p2())\n"
        "c1* = circle(p1(), p2())\n"
        "c2* = circle(p2(), p1())\n"
        "l2* = line(p3(c1, c2), p4(c1, c2))\n"
        "c3* = circle(p5(l2), p6(l2))\n"
        "c4* = circle(p6(l2), p5(l2))\n"
        "l3* = line(p7(c3, c4), p8(c3, c4))\n"
        "c5* = circle(p9(l3), p10(l3))\n"
        "c6* = circle(p10(l3), p9(l3))\n"
        "l4* = line(p11(c5, c6), p12(c5, c6))\n"
        "l5 = line(p13(l1, l2), p14(l2, l3))\n"
        "l6 = line(p14(l2, l3), p15(l3, l4))\n"
        "l7 = line(p15(l3, l4), p16(l1, l4))\n"
        "l8 = line(p16(l1, l4), p13(l1, l2))\n"
    ),
    "eq_t": (
        "l1 = line(p1(), p2())\n"
        "c1* = circle(p1(), p2())\n"
        "c2* = circle(p2(), p1())\n"
        "l2 = line(p1(), p3(c1, c2))\n"
        "l3 = line(p2(), p3())\n"
    ),
    "rhombus": (
        "l1* = line(p1(), p2())\n"
        "c1* = circle(p1(), p2())\n"
        "c2* = circle(p2(), p1())\n"
        "l2* = line(p3(c1, c2), p4(c1, c2))\n"
        "l3 = line(p1(), p3(c1, c2))\n"
        "l4 = line(p3(c1, c2), p2())\n"
        "l5 = line(p2(), p4(c1, c2))\n"
        "l6 = line(p4(c1, c2), p1())\n"
    ),
    "parallel_l": (
        "l1* = line(p1(), p2())\n"
        "c1* = circle(p1(), p3(l1))\n"
        "c2* = circle(p3(l1), p1())\n"
        "c3* = circle(p2(), p3(l1))\n"
        "l2 = line(p4(c1, c2), p5(c1, c2))\n"
        "l3 = line(p6(c2, c3), p7(c2, c3))\n"
    ),
    "rhomboid": (
        "l1* = line(p1(), p2())\n"
        "c1* = circle(p1(), p3(l1))\n"
        "c2* = circle(p3(l1), p1())\n"
        "c3* = circle(p4(l1, c2), p3(l1))\n"
        "c4* = circle(p5(l1, c3), p6(l1, c2))\n"
        "l2 = line(p1(), p7(c1, c2))\n"
        "l3 = line(p7(c1, c2), p8(c3, c4))\n"
        "l4 = line(p8(c3, c4), p4(l1, c2))\n"
        "l5 = line(p4(l1, c2), p1())\n"
    ),
    "angle": ("l1 = line(p1(), p2())\nl2 = line(p2(), p3())\n"),
    "square": (
        "l1* = line(p1(), p2())\n"
        "c1* = circle(p1(), p2())\n"
        "c2* = circle(p2(), p1())\n"
        "l2* = line(p3(c1, c2), p4(c1, c2))\n"
        "c3* = circle(p5(l1, l2), p1())\n"
        "l3 = line(p1(), p6(l2, c3))\n"
        "l4 = line(p6(l2, c3), p2())\n"
        "l5 = line(p2(), p7(l2, c3))\n"
        "l6 = line(p7(l2, c3), p1())\n"
    ),
    "sixty_ang": (
        "l1 = line(p1(), p2())\nc1* = circle(p1(), p2())\nc2* = circle(p2(), p1())\nl2 = line(p1(), p3(c1, c2))\n"
    ),
    "right_ang_t": (
        "l1* = line(p1(), p2())\n"
        "c1* = circle(p1(), p2())\n"
        "c2* = circle(p2(), p1())\n"
        "l2* = line(p3(c1, c2), p4(c1, c2))\n"
        "l3 = line(p5(l1, l2), p6(l2))\n"
        "l4 = line(p5(l1, l2), p7(l1))\n"
        "l5 = line(p6(l2), p7(l1))\n"
    ),
    "radii": ("c1 = circle(p1(), p2())\nl1 = line(p1(), p3(c1))\nl2 = line(p1(), p4(c1))\nl3 = line(p1(), p5(c1))\n"),
    "diameter": (
        "l1* = line(p1(), p2())\n"
        "c1* = circle(p1(), p2())\n"
        "c2* = circle(p2(), p1())\n"
        "l2 = line(p3(c1, c2), p4(c1, c2))\n"
        "c3 = circle(p5(l1, l2), p3(c1, c2))\n"
    ),
    "triangle": ("l1 = line(p1(), p2())\nl2 = line(p2(), p3())\nl3 = line(p3(), p1())\n"),
    "quadrilateral": ("l1 = line(p1(), p2())\nl2 = line(p2(), p3())\nl3 = line(p3(), p4())\nl4 = line(p4(), p1())\n"),
    "segment": ("c1 = circle(p1(), p2())\nl1 = line(p3(c1), p4(c1))\n"),
    "llcc": (
        "l1 = line(p1(), p2())\nl2 = line(p3(), p4())\nc3 = circle(p5(l1), p6(l1, l2))\nc4 = circle(p7(), p8(l1, l2))\n"
    ),
    "ccl": ("c1 = circle(p1(), p2())\nc2 = circle(p3(c1), p4())\nl3 = line(p5(c1), p6(c1, c2))\n"),
    "ccc": ("c1 = circle(p1(), p2())\nc2 = circle(p3(c1), p4(c1))\nc3 = circle(p5(c1), p6(c1, c2))\n"),
    "clcl": (
        "c1 = circle(p1(), p2())\nl2 = line(p3(c1), p4(c1))\nc3 = circle(p5(), p6(c1, l2))\nl4 = line(p7(c1), p8(c3))\n"
    ),
    "clt": (
        "c1 = circle(p1(), p2())\n"
        "l2 = line(p3(c1), p4())\n"
        "l3 = line(p5(c1, l2), p6(c1))\n"
        "l4 = line(p6(), p7(c1))\n"
        "l5 = line(p7(), p5())\n"
    ),
    "llt": (
        "l1 = line(p1(), p2())\n"
        "l2 = line(p3(), p4())\n"
        "l3 = line(p5(l1, l2), p6())\n"
        "l4 = line(p6(), p7())\n"
        "l5 = line(p7(), p5())\n"
    ),
    "clcc": (
        "c1 = circle(p1(), p2())\nl2 = line(p3(c1), p4(c1))\nc3 = circle(p5(c1), p6(c1))\nc4 = circle(p7(c1), p8(c1))\n"
    ),
    "lllc": (
        "l1 = line(p1(), p2())\nl2 = line(p3(l1), p4())\nl3 = line(p5(l2), p6())\nc4 = circle(p7(l1, l2), p8(l3))\n"
    ),
    "cccc": (
        "c1 = circle(p1(), p2())\n"
        "c2 = circle(p3(c1), p4(c1))\n"
        "c3 = circle(p5(c1, c2), p6(c1, c2))\n"
        "c4 = circle(p7(c2, c3), p8(c2, c3))\n"
    ),
    "cccl": (
        "c1 = circle(p1(), p2())\n"
        "c2 = circle(p3(), p4(c1))\n"
        "c3 = circle(p5(), p6(c1, c2))\n"
        "l4 = line(p7(c1, c2), p8(c1, c2))\n"
    ),
    "clll": (
        "c1 = circle(p1(), p2())\nl2 = line(p3(c1), p4())\nl3 = line(p5(l2), p6())\nl4 = line(p7(c1, l2), p8(l3))\n"
    ),
    "llll": (
        "l1 = line(p1(), p2())\nl2 = line(p3(), p4())\nl3 = line(p5(l1, l2), p6())\nl4 = line(p7(l1, l2), p8())\n"
    ),
    "tll": (
        "l1 = line(p1(), p2())\n"
        "l2 = line(p1(), p3())\n"
        "l3 = line(p2(), p3())\n"
        "l4 = line(p4(l1, l2), p5())\n"
        "l5 = line(p6(l1, l2), p7())\n"
    ),
    "cll": ("c1 = circle(p1(), p2())\nl2 = line(p3(c1), p4(c1))\nl3 = line(p5(c1), p6(c1))\n"),
    "lll": ("l1 = line(p1(), p2())\nl2 = line(p3(l1), p4())\nl3 = line(p5(l1), p6())\n"),
    "llc": ("l1 = line(p1(), p2())\nl2 = line(p3(), p4(l1))\nc3 = circle(p5(l1), p6(l1, l2))\n"),
    "cct": (
        "c1 = circle(p1(), p2())\n"
        "c2 = circle(p3(), p4())\n"
        "l3 = line(p5(c1, c2), p6(c1, c2))\n"
        "l4 = line(p6(), p7(c2))\n"
        "l5 = line(p7(), p5())\n"
    ),
    "tcl": (
        "l1 = line(p1(), p2())\n"
        "l2 = line(p1(), p3())\n"
        "l3 = line(p2(), p3())\n"
        "c4 = circle(p4(l1, l2), p5())\n"
        "l5 = line(p6(l1, l2), p7(l3))\n"
    ),
    "lcc": ("l1 = line(p1(), p2())\nc2 = circle(p3(l1), p4(l1))\nc3 = circle(p5(l1, c2), p6(l1, c2))\n"),
    "tcc": (
        "l1 = line(p1(), p2())\n"
        "l2 = line(p1(), p3())\n"
        "l3 = line(p2(), p3())\n"
        "c4 = circle(p4(l1, l2), p5())\n"
        "c5 = circle(p6(l1, l2), p7(l3))\n"
    ),
}

#: name -> program text (Appendix O), read-only.
CONCEPT_PROGRAMS = MappingProxyType(_PROGRAMS)

#: Concept names in Appendix O order; ``CONCEPT_NAMES[i]`` has program id ``i``.
CONCEPT_NAMES: tuple[str, ...] = tuple(_PROGRAMS)

#: name -> program id (row/column of the tree kernel table over all 37 concepts).
CONCEPT_IDS = MappingProxyType({name: i for i, name in enumerate(CONCEPT_NAMES)})

#: The 7 concepts held out for testing in the paper (Appendix M/O).
TEST_CONCEPTS: tuple[str, ...] = (
    "cccc",
    "clcc",
    "quadrilateral",
    "triangle",
    "perp_bisector",
    "llcc",
    "ccc",
)

#: The 30 training concepts, in Appendix O order.
TRAIN_CONCEPTS: tuple[str, ...] = tuple(n for n in CONCEPT_NAMES if n not in TEST_CONCEPTS)

#: Program ids of the training and test concepts.
TRAIN_IDS: tuple[int, ...] = tuple(CONCEPT_IDS[n] for n in TRAIN_CONCEPTS)
TEST_IDS: tuple[int, ...] = tuple(CONCEPT_IDS[n] for n in TEST_CONCEPTS)

_CONSTRAINTS = (
    "llcc",
    "ccl",
    "ccc",
    "clcl",
    "clt",
    "llt",
    "clcc",
    "lllc",
    "cccc",
    "cccl",
    "clll",
    "llll",
    "tll",
    "cll",
    "lll",
    "llc",
    "cct",
    "tcl",
    "lcc",
    "tcc",
)

#: name -> benchmark family directory (``"elements"`` or ``"constraints"``).
CONCEPT_FAMILY = MappingProxyType({n: ("constraints" if n in _CONSTRAINTS else "elements") for n in CONCEPT_NAMES})


def concept_program(name: str) -> Program:
    """The parsed program of a concept (Appendix O).

    Args:
      name: a key of :data:`CONCEPT_PROGRAMS`, e.g. ``"square"``.

    Returns:
      :class:`~gensim_jax.stimuli.geoclidean.grammar.Program`.

    Example:
      >>> concept_program("angle").object_names
      ('l1', 'l2')
    """
    if name not in _PROGRAMS:
        raise ValueError(f"unknown Geoclidean concept {name!r}; known: {', '.join(CONCEPT_NAMES)}")
    return parse_program(_PROGRAMS[name], strict=True)


def split_ids(split: str = "all") -> tuple[int, ...]:
    """Program ids of ``"train"`` (30), ``"test"`` (7) or ``"all"`` (37) concepts.

    The split is the paper's (Appendix M/O); ids are positions in :data:`CONCEPT_NAMES`.

    Args:
      split: ``"train"``, ``"test"`` or ``"all"``.

    Returns:
      Tuple of ints, in Appendix O order.

    Example:
      >>> len(split_ids("train")), len(split_ids("test")), split_ids("all")[:3]
      (30, 7, (0, 1, 2))
    """
    if split == "train":
        return TRAIN_IDS
    if split == "test":
        return TEST_IDS
    if split == "all":
        return tuple(range(len(CONCEPT_NAMES)))
    raise ValueError(f"split must be 'train', 'test' or 'all', got {split!r}")


def concept_parse_trees(names: tuple[str, ...] | list[str] | None = None) -> tuple[Tree, ...]:
    """Parse trees (Appendix P grammar) of the given concepts, default all 37 in id order.

    The result indexes like the names, so ``gram_log_table(concept_parse_trees())[i, j]`` is the
    GenSim target between program ids ``i`` and ``j`` (paper Appendix M).

    Args:
      names: concept names (default: all of :data:`CONCEPT_NAMES`, i.e. ids 0..36).

    Returns:
      Tuple of :class:`~gensim_jax.kernels.trees.Tree`, one per name.

    Example:
      >>> trees = concept_parse_trees()
      >>> len(trees), trees[CONCEPT_IDS["angle"]].label
      (37, 'S')
    """
    names = CONCEPT_NAMES if names is None else tuple(names)
    return tuple(concept_program(n).parse_tree() for n in names)
