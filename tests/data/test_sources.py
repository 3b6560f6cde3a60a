"""Tests for gensim_jax.data.sources and gensim_jax.data.indexing (numpy only, no TensorFlow)."""

import sys

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gensim_jax.data import sources
from gensim_jax.data.indexing import StreamIndex, derive_key, stateless_uniform, stateless_uniforms
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


def _other_group_by_rows(prior, u, groups):
    """Reference of ``sample_other_group``: per row, the prior without the row's group, renormalised, and
    its cumulative sums searched one row at a time (the loop the table replaced)."""
    out = []
    for ui, g in zip(u, groups):
        q = np.array(prior, np.float64)
        q[g] = 0.0
        cdf = np.cumsum(q / q.sum())
        out.append(min(int(np.searchsorted(cdf, ui, side="right")), int(np.flatnonzero(q > 0)[-1])))
    return np.array(out)


@pytest.mark.parametrize("num_groups", [2, 7, 40])
def test_sample_other_group_table_equals_a_search_per_row(num_groups):
    """The (G, G) table of restricted CDFs draws exactly the groups of one searchsorted per row, zero-mass
    groups and draws at the edges of [0, 1) included; the loop used above CDF_TABLE_MAX_GROUPS is the same."""
    rng = np.random.default_rng(num_groups)
    prior = rng.random(num_groups) ** 3
    prior[rng.random(num_groups) < 0.3] = 0.0  # zero-mass groups are never drawn
    prior[:2] = [0.5, 0.25]  # at least two groups with mass
    g = GroupIndex(np.arange(num_groups), prior=prior)
    n = 3000
    groups = rng.integers(0, num_groups, n)
    u = np.concatenate([[0.0, np.nextafter(1.0, 0.0)], stateless_uniform(2, 0, np.arange(n - 2))])
    # draws equal to an entry of their row's CDF go past it (side="right"), as the search per row does
    for i in range(2, 40):
        q = g.prior.copy()
        q[groups[i]] = 0.0
        cdf = np.cumsum(q / q.sum())
        u[i] = cdf[i % num_groups] if cdf[i % num_groups] < 1.0 else u[i]
    want = _other_group_by_rows(g.prior, u, groups)
    np.testing.assert_array_equal(g.sample_other_group(u, groups), want)
    np.testing.assert_array_equal(g._sample_other_group_loop(u, groups), want)
    assert g.prior[want].min() > 0 and not (want == groups).any()


def test_sample_other_group_with_many_groups_and_when_one_group_holds_the_mass(monkeypatch):
    g = GroupIndex(np.arange(5), prior=[0.0, 0.0, 1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match=r"cannot draw a group other than .*2\b"):
        g.sample_other_group(np.array([0.5, 0.5]), np.array([0, 2]))
    assert g.sample_other_group(np.array([0.1, 0.9]), np.array([0, 4])).tolist() == [2, 2]
    monkeypatch.setattr(sources, "CDF_TABLE_MAX_GROUPS", 3)  # above the cap: one search per distinct group
    many = GroupIndex(np.arange(5), prior=[1.0, 2.0, 3.0, 4.0, 5.0])
    u, groups = stateless_uniform(1, 1, np.arange(500)), np.arange(500) % 5
    np.testing.assert_array_equal(many.sample_other_group(u, groups), _other_group_by_rows(many.prior, u, groups))
    assert "_other_cdf" not in vars(many)  # the table was never built
    with pytest.raises(ValueError, match=r"cannot draw a group other than .*2\b"):
        g.sample_other_group(np.array([0.5]), np.array([2]))


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


def _splitmix64_int(x: int) -> int:
    """SplitMix64's finaliser on Python integers (Steele, Lea & Flood 2014), modulo 2**64."""
    m = 2**64 - 1
    x = (x + 0x9E3779B97F4A7C15) & m
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & m
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & m
    return x ^ (x >> 31)


def test_stateless_uniform_is_splitmix64_of_key_stream_and_position():
    """An independent computation on Python integers, and several streams at once equal one at a time."""
    key, positions = 123_456_789, np.array([0, 1, 7, 2**31 - 1, 2**40 + 3], np.int64)
    for stream in (0, 3, 5):
        k = _splitmix64_int(key * 1_000_003 + stream)
        want = [(_splitmix64_int((_splitmix64_int(int(p) ^ k) + k) & (2**64 - 1)) >> 11) * 2.0**-53 for p in positions]
        np.testing.assert_array_equal(stateless_uniform(key, stream, positions), want)
    grid = np.arange(24, dtype=np.int64).reshape(4, 6)
    many = stateless_uniforms(key, (3, 4, 5), grid)
    assert many.shape == (3, 4, 6)
    for row, stream in zip(many, (3, 4, 5)):
        np.testing.assert_array_equal(row, stateless_uniform(key, stream, grid))
    with pytest.raises(ValueError, match="non-negative"):
        stateless_uniforms(key, (1, -1), grid)


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
    # indices follow perm_{p // N}[p % N], position by position, within one epoch and across two (any shape)
    for positions in (np.arange(2, 9), np.arange(8, 15), np.array([[40, 3], [11, 12]])):
        want = [np.random.default_rng([9, int(p) // n]).permutation(n)[int(p) % n] for p in positions.ravel()]
        np.testing.assert_array_equal(single.indices(positions), np.reshape(want, positions.shape))
    np.testing.assert_array_equal(StreamIndex(n, b, seed=9, shuffle=False).indices(np.arange(14)), np.arange(14) % n)
    with pytest.raises(ValueError, match="process_index"):
        StreamIndex(n, b, seed=0, process_index=2, process_count=2)
