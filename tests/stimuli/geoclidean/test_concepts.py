"""Tests for the Appendix O concept table: the 30/7 split, program ids, benchmark families."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gensim_jax.kernels.trees import gram_log_table, normalized_tree_kernel
from gensim_jax.stimuli.geoclidean.concepts import (
    CONCEPT_FAMILY,
    CONCEPT_IDS,
    CONCEPT_NAMES,
    CONCEPT_PROGRAMS,
    TEST_CONCEPTS,
    TEST_IDS,
    TRAIN_CONCEPTS,
    TRAIN_IDS,
    concept_parse_trees,
    concept_program,
    split_ids,
)

GEOCLIDEAN = Path(__file__).resolve().parents[3] / ".." / "shared" / "reference" / "geoclidean"


def test_split_is_the_papers():
    # Appendix M/O: held out 'cccc', 'clcc', 'quadrilateral', 'triangle', 'perp bisector',
    # 'llcc', 'ccc'; the other 30 train.
    assert len(CONCEPT_NAMES) == len(set(CONCEPT_NAMES)) == 37
    assert set(TEST_CONCEPTS) == {
        "cccc",
        "clcc",
        "quadrilateral",
        "triangle",
        "perp_bisector",
        "llcc",
        "ccc",
    }
    assert len(TRAIN_CONCEPTS) == 30
    assert set(TRAIN_CONCEPTS) | set(TEST_CONCEPTS) == set(CONCEPT_NAMES)
    assert not set(TRAIN_CONCEPTS) & set(TEST_CONCEPTS)
    assert [CONCEPT_NAMES[i] for i in TRAIN_IDS] == list(TRAIN_CONCEPTS)
    assert [CONCEPT_NAMES[i] for i in TEST_IDS] == list(TEST_CONCEPTS)
    assert split_ids("all") == tuple(range(37))
    assert sorted(split_ids("train") + split_ids("test")) == list(range(37))
    with pytest.raises(ValueError, match="split"):
        split_ids("val")


def test_ids_index_parse_trees_and_tables():
    trees = concept_parse_trees()
    assert len(trees) == 37
    for name, i in CONCEPT_IDS.items():
        assert trees[i] == concept_program(name).parse_tree()
    # a table over the training concepts gathers by position in TRAIN_IDS
    train_trees = concept_parse_trees(TRAIN_CONCEPTS)
    tab = gram_log_table(train_trees, "st", lam=0.5)
    full = gram_log_table(trees, "st", lam=0.5)
    np.testing.assert_allclose(tab, full[np.ix_(TRAIN_IDS, TRAIN_IDS)], rtol=1e-6)
    a, b = CONCEPT_IDS["square"], CONCEPT_IDS["rhombus"]
    assert full[a, b] == pytest.approx(np.log(normalized_tree_kernel(trees[a], trees[b], "st", 0.5)), rel=1e-5)


def test_program_facts_by_hand():
    # Appendix O: square has 9 constructions, 4 of them drawn (the sides l3..l6).
    sq = concept_program("square")
    assert len(sq) == 9
    assert sq.visible_objects == ("l3", "l4", "l5", "l6")
    assert concept_program("angle").to_source() == CONCEPT_PROGRAMS["angle"]
    with pytest.raises(ValueError, match="unknown Geoclidean concept"):
        concept_program("hexagon")


@pytest.mark.skipif(not GEOCLIDEAN.is_dir(), reason="shared/reference/geoclidean not present")
def test_families_match_the_benchmark_directories():
    for name in CONCEPT_NAMES:
        assert (GEOCLIDEAN / CONCEPT_FAMILY[name] / f"concept_{name}" / "concept.txt").is_file()
