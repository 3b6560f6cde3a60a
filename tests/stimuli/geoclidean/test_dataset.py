"""Tests for the Geoclidean datasets: packaged benchmark programs equal the benchmark files,
tree ids, determinism and resume-at-index of the training stream, npz shard caching, and that
the stimuli package stays free of TensorFlow."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gensim_jax.stimuli.geoclidean.concepts import (
    CONCEPT_FAMILY,
    CONCEPT_NAMES,
    TRAIN_IDS,
    concept_parse_trees,
    concept_program,
)
from gensim_jax.stimuli.geoclidean.dataset import (
    VARIANTS,
    benchmark_images,
    benchmark_parse_trees,
    benchmark_program,
    example,
    generate,
    read_shards,
    sample_image,
    tree_id,
    write_shards,
)
from gensim_jax.stimuli.geoclidean.grammar import parse_program
from gensim_jax.stimuli.geoclidean.render import render
from gensim_jax.stimuli.geoclidean.sampler import sample_scene

REPO = Path(__file__).resolve().parents[3]
GEOCLIDEAN = REPO / ".." / "shared" / "reference" / "geoclidean"
FILES = {"concept": "concept.txt", "close": "close_concept.txt", "far": "far_concept.txt"}


@pytest.mark.skipif(not GEOCLIDEAN.is_dir(), reason="shared/reference/geoclidean not present")
def test_packaged_programs_equal_benchmark_files():
    for name in CONCEPT_NAMES:
        d = GEOCLIDEAN / CONCEPT_FAMILY[name] / f"concept_{name}"
        for v, f in FILES.items():
            assert benchmark_program(name, v) == parse_program((d / f).read_text()), (name, v)


def test_concept_variant_is_appendix_o_and_negatives_differ():
    for i, name in enumerate(CONCEPT_NAMES):
        assert benchmark_program(i) == concept_program(name)
        assert benchmark_program(name, "close") != concept_program(name)
        assert benchmark_program(name, "far") != concept_program(name)


def test_tree_ids_index_benchmark_parse_trees():
    trees = benchmark_parse_trees()
    assert len(trees) == 3 * 37
    assert trees[:37] == concept_parse_trees()
    for i, name in enumerate(CONCEPT_NAMES):
        for v in VARIANTS:
            assert trees[tree_id(i, v)] == parse_program(benchmark_program(name, v).to_source()).parse_tree()
    np.testing.assert_array_equal(tree_id(np.arange(3), "close"), 37 + np.arange(3))


def test_example_is_a_function_of_seed_and_index():
    ex = example(41, seed=3, size=48)
    pid = TRAIN_IDS[41 % 30]
    assert int(ex["program_id"]) == pid and int(ex["tree_id"]) == pid and int(ex["index"]) == 41
    # regenerate independently: the documented generator and the public sampler/renderer
    scene = sample_scene(concept_program(CONCEPT_NAMES[pid]), np.random.default_rng([3, 41]))
    np.testing.assert_array_equal(ex["image"], render(scene, 48))
    np.testing.assert_array_equal(ex["image"], sample_image(pid, 3, 41, size=48))
    assert not np.array_equal(ex["image"], example(41, seed=4, size=48)["image"])


def test_stream_resumes_at_index_and_is_balanced():
    full = list(generate(12, seed=5, size=32))
    tail = list(generate(5, seed=5, start=7, size=32))
    for a, b in zip(full[7:], tail):
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])
    assert [int(e["program_id"]) for e in full] == [TRAIN_IDS[i % 30] for i in range(12)]
    assert {e["image"].dtype for e in full} == {np.dtype(np.uint8)}
    # a different variant on the test split
    ex = next(generate(1, seed=0, concepts="test", variant="far", size=32))
    assert int(ex["variant"]) == 2 and int(ex["tree_id"]) == 74 + int(ex["program_id"])


def test_benchmark_images_shapes_and_distinct_streams():
    a = benchmark_images("ccl", "close", 3, seed=1, size=40)
    b = benchmark_images("ccl", "far", 3, seed=1, size=40)
    assert a.shape == (3, 40, 40) and a.dtype == np.uint8
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(a, benchmark_images("ccl", "close", 3, seed=1, size=40))


def test_npz_shards_round_trip_and_resume(tmp_path):
    d = tmp_path / "shards"
    paths = write_shards(d, 7, seed=2, shard_size=3, size=32, progress=False)
    assert len(paths) == 3
    got = list(read_shards(d))
    ref = list(generate(7, seed=2, size=32))
    assert len(got) == 7
    for a, b in zip(got, ref):
        for k in b:
            np.testing.assert_array_equal(a[k], b[k])
    # an interrupted job: a shard is missing -> reading fails clearly; re-running resumes
    before = paths[1].read_bytes()
    paths[1].unlink()
    with pytest.raises(ValueError, match="incomplete"):
        list(read_shards(d))
    mtime0 = paths[0].stat().st_mtime_ns
    write_shards(d, 7, seed=2, shard_size=3, size=32, progress=False)
    assert paths[0].stat().st_mtime_ns == mtime0  # complete shards are not rewritten
    with np.load(paths[1]) as z1:
        import io

        with np.load(io.BytesIO(before)) as z0:
            for k in z0.files:
                np.testing.assert_array_equal(z0[k], z1[k])
    with pytest.raises(ValueError, match="other settings"):
        write_shards(d, 7, seed=3, shard_size=3, size=32, progress=False)


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown Geoclidean concept"):
        benchmark_program("pentagon")
    with pytest.raises(ValueError, match="variant"):
        benchmark_program("square", "near")
    with pytest.raises(ValueError, match="program id"):
        sample_image(37, 0, 0)
    with pytest.raises(ValueError, match="seed"):
        example(0, seed=-1)
    with pytest.raises(ValueError, match="index"):
        example(-3)
    with pytest.raises(ValueError, match="n must be"):
        list(generate(-1))
    with pytest.raises(ValueError, match="MIN_SIZE"):
        example(0, size=8)


@pytest.mark.slow
def test_stimuli_do_not_import_tensorflow_or_need_shared():
    code = (
        "import sys; import gensim_jax.stimuli.geoclidean.dataset as d; "
        "d.benchmark_program('square', 'far'); "
        "assert 'tensorflow' not in sys.modules and 'torch' not in sys.modules, 'TF imported'"
    )
    # run from an unrelated directory so that nothing from ../shared is reachable by cwd
    r = subprocess.run(
        [sys.executable, "-c", code], cwd="/", capture_output=True, text=True, env={"PYTHONPATH": str(REPO)}
    )
    assert r.returncode == 0, r.stderr
