"""Tests for gensim_jax.data.sources and gensim_jax.data.indexing (numpy only, no TensorFlow)."""

import sys

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gensim_jax.data.indexing import StreamIndex, derive_key, stateless_uniform
from gensim_jax.data.sources import (
    ArraySource,
    FunctionSource,
    GroupIndex,
    IndexedSource,
    SyntheticImageSource,
    gather,
    group_index,
)


def test_import_does_not_load_tensorflow():
    import subprocess

    code = "import gensim_jax.data, sys; assert 'tensorflow' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_array_source_and_gather():
    images = np.arange(5 * 2 * 2 * 1, dtype=np.uint8).reshape(5, 2, 2, 1)
    src = ArraySource({"image": images, "label": np.array([3, 1, 4, 1, 5])})
    assert isinstance(src, IndexedSource)
    assert len(src) == 5
    np.testing.assert_array_equal(src.example(2)["image"], images[2])
    out = gather(src, np.array([4, 0, 4]))
    np.testing.assert_array_equal(out["label"], [5, 3, 5])
    np.testing.assert_array_equal(out["image"], images[[4, 0, 4]])
    with pytest.raises(ValueError, match="out of range"):
        src.example(5)
    with pytest.raises(ValueError, match=r"\[0, 5\)"):
        gather(src, np.array([0, 7]))
    with pytest.raises(ValueError, match="leading size"):
        ArraySource({"image": images, "label": np.arange(4)})
    with pytest.raises(ValueError, match="'image'"):
        ArraySource({"label": np.arange(4)})


def test_function_source_is_a_pure_function_of_seed_and_index():
    def fn(rng, i):
        return {"image": rng.integers(0, 256, (3, 3, 1), dtype=np.uint8), "label": np.int64(i % 3)}

    src = FunctionSource(fn, length=10, seed=4)
    a, b = src.example(7), src.example(7)
    np.testing.assert_array_equal(a["image"], b["image"])
    expected = np.random.default_rng([4, 7]).integers(0, 256, (3, 3, 1), dtype=np.uint8)
    np.testing.assert_array_equal(a["image"], expected)
    assert not np.array_equal(src.example(6)["image"], a["image"])
    # gather falls back to stacking example() calls.
    stacked = gather(src, np.array([7, 6]))
    np.testing.assert_array_equal(stacked["image"][0], a["image"])
    with pytest.raises(TypeError):
        src.example(1.5)
    with pytest.raises(ValueError, match="'image'"):
        FunctionSource(lambda rng, i: {"x": np.zeros(1)}, length=2).example(0)


def test_synthetic_source():
    src = SyntheticImageSource(12, (16, 8, 3), num_classes=5, seed=2)
    ex = src.example(11)
    assert ex["image"].shape == (16, 8, 3) and ex["image"].dtype == np.uint8
    assert int(ex["label"]) == 11 % 5
    np.testing.assert_array_equal(ex["image"], SyntheticImageSource(12, (16, 8, 3), 5, 2).example(11)["image"])


def test_group_index_structure():
    ids = np.array([7, 2, 7, 9, 2, 7])
    g = GroupIndex(ids)
    np.testing.assert_array_equal(g.ids, [2, 7, 9])
    np.testing.assert_array_equal(g.ids[g.group_of], ids)
    for k in range(g.num_groups):
        members = g.members[g.starts[k] : g.starts[k + 1]]
        np.testing.assert_array_equal(np.sort(members), np.flatnonzero(ids == g.ids[k]))
    np.testing.assert_allclose(g.prior, [2 / 6, 3 / 6, 1 / 6])
    with pytest.raises(ValueError, match="one entry per group"):
        GroupIndex(ids, prior=[1.0, 1.0])


def test_sample_member_excludes_anchor_and_is_uniform():
    ids = np.array([0, 0, 0, 1, 1, 2])
    g = GroupIndex(ids)
    n = 30_000
    u = stateless_uniform(1, 0, np.arange(n))
    anchors = np.full(n, 1)  # group 0 = {0, 1, 2}
    out = g.sample_member(u, np.zeros(n, np.int64), exclude=anchors)
    assert set(np.unique(out)) == {0, 2}
    assert abs(np.mean(out == 0) - 0.5) < 0.02
    # singleton group: the anchor itself is the only member
    out = g.sample_member(u[:10], np.full(10, 2), exclude=np.full(10, 5))
    np.testing.assert_array_equal(out, 5)
    # no exclusion: uniform over the group
    out = g.sample_member(u, np.zeros(n, np.int64))
    np.testing.assert_allclose(np.bincount(out, minlength=3)[:3] / n, 1 / 3, atol=0.02)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0.0, 5.0), min_size=2, max_size=6), st.integers(0, 5))
def test_sample_other_group_follows_restricted_prior(weights, own):
    weights = np.asarray(weights)
    own = own % weights.size
    assume(np.count_nonzero(np.delete(weights, own)) > 0)
    g = GroupIndex(np.arange(weights.size), prior=weights)
    n = 20_000
    u = stateless_uniform(5, 1, np.arange(n))
    out = g.sample_other_group(u, np.full(n, own))
    assert not (out == own).any()
    expected = g.prior.copy()
    expected[own] = 0
    expected /= expected.sum()
    freq = np.bincount(out, minlength=weights.size) / n
    np.testing.assert_allclose(freq, expected, atol=0.02)
    assert (freq[expected == 0] == 0).all()


def test_sample_group_follows_prior():
    g = GroupIndex(np.arange(3), prior=[0.2, 0.0, 0.8])
    u = stateless_uniform(0, 0, np.arange(20_000))
    freq = np.bincount(g.sample_group(u), minlength=3) / u.size
    np.testing.assert_allclose(freq, [0.2, 0.0, 0.8], atol=0.015)


def test_group_index_from_source():
    src = ArraySource({"image": np.zeros((4, 1, 1, 1)), "c": np.array([1, 0, 1, 1])})
    g = group_index(src, "c")
    np.testing.assert_array_equal(g.counts, [1, 3])
    fsrc = FunctionSource(lambda rng, i: {"image": np.zeros((1, 1, 1)), "c": np.int64(i // 2)}, 4)
    np.testing.assert_array_equal(group_index(fsrc, "c").group_of, [0, 0, 1, 1])
    with pytest.raises(ValueError, match="one scalar per example"):
        group_index(src, "c", group_ids=np.zeros(3))


def test_stateless_uniform():
    u = stateless_uniform(3, 2, np.arange(100_000))
    assert ((u >= 0) & (u < 1)).all()
    np.testing.assert_array_equal(u[500:600], stateless_uniform(3, 2, np.arange(500, 600)))
    # roughly uniform: decile counts and low serial correlation
    counts = np.bincount((u * 10).astype(int), minlength=10)
    assert np.all(np.abs(counts / u.size - 0.1) < 0.005)
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 0.01
    assert abs(np.corrcoef(u, stateless_uniform(3, 1, np.arange(100_000)))[0, 1]) < 0.01
    assert not np.array_equal(u, stateless_uniform(4, 2, np.arange(100_000)))
    assert derive_key(0, 1) != derive_key(1, 1)
    with pytest.raises(ValueError, match="integers"):
        stateless_uniform(0, 0, np.array([0.5]))


def test_stream_index_epochs_are_permutations_and_hosts_partition():
    n, b, hosts = 11, 3, 2
    single = StreamIndex(n, b * hosts, seed=9)
    shards = [StreamIndex(n, b, seed=9, process_index=h, process_count=hosts) for h in range(hosts)]
    seen = []
    for step in range(8):
        global_idx = single.indices(single.positions(step))
        host_idx = np.concatenate([s.indices(s.positions(step)) for s in shards])
        np.testing.assert_array_equal(global_idx, host_idx)
        seen.append(global_idx)
    seen = np.concatenate(seen)
    for e in range(seen.size // n):
        np.testing.assert_array_equal(np.sort(seen[e * n : (e + 1) * n]), np.arange(n))
    assert not np.array_equal(seen[:n], seen[n : 2 * n])  # reshuffled per epoch
    # the permutation of epoch e is the documented seeded numpy permutation
    np.testing.assert_array_equal(single.permutation(3), np.random.default_rng([9, 3]).permutation(n))
    np.testing.assert_array_equal(StreamIndex(n, b, seed=9, shuffle=False).indices(np.arange(14)), np.arange(14) % n)
    with pytest.raises(ValueError, match="process_index"):
        StreamIndex(n, b, seed=0, process_index=2, process_count=2)
