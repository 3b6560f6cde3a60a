"""Tests for gensim_jax.data.pipelines: determinism, resumption, sharding, Eq. A3 triplets."""

import numpy as np
import pytest

from gensim_jax.data import pipelines
from gensim_jax.data.pipelines import as_numpy, labelled_batches, pair_batches, triplet_batches, view_batches
from gensim_jax.data.sources import ArraySource, FunctionSource, SyntheticImageSource
from tests._lazy import LazyModule

A = LazyModule("gensim_jax.data.augment")  # TensorFlow, imported by the first test that needs it


def collect(ds):
    return list(as_numpy(ds))


def assert_streams_equal(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.keys() == y.keys()
        for k in x:
            np.testing.assert_array_equal(x[k], y[k], err_msg=k)


def id_source(n=13, num_groups=4, size=6):
    """Images whose pixels encode the example index, so the image can be checked against index."""
    idx = np.arange(n)
    images = np.broadcast_to(idx[:, None, None, None], (n, size, size, 1)).astype(np.uint8)
    return ArraySource(
        {"image": images, "label": idx % num_groups, "features": np.stack([idx, -idx], 1).astype(np.float32)}
    )


def test_labelled_batches_shapes_and_content():
    src = id_source()
    batches = collect(labelled_batches(src, 4, seed=1, num_steps=5))
    assert len(batches) == 5
    for b in batches:
        assert b["image"].shape == (4, 6, 6, 1) and b["image"].dtype == np.uint8
        assert b["features"].shape == (4, 2)
        np.testing.assert_array_equal(b["image"][:, 0, 0, 0], b["index"])
        np.testing.assert_array_equal(b["label"], b["index"] % 4)
        np.testing.assert_array_equal(b["features"][:, 0], b["index"])
        assert b["mask"].all()
    pos = np.concatenate([b["position"] for b in batches])
    np.testing.assert_array_equal(pos, np.arange(20))
    idx = np.concatenate([b["index"] for b in batches])
    np.testing.assert_array_equal(np.sort(idx[:13]), np.arange(13))  # epoch 0 is a permutation
    # the order is the documented seeded permutation
    np.testing.assert_array_equal(idx[:13], np.random.default_rng([1, 0]).permutation(13))


@pytest.mark.slow
def test_same_seed_same_stream_other_seed_other_stream():
    src = SyntheticImageSource(20, (8, 8, 3), seed=3)
    aug = A.simclr_augment((6, 6), grayscale_p=0.2)
    a = collect(labelled_batches(src, 4, seed=7, augment=aug, num_steps=4))
    b = collect(labelled_batches(src, 4, seed=7, augment=aug, num_steps=4))
    c = collect(labelled_batches(src, 4, seed=8, augment=aug, num_steps=4))
    assert_streams_equal(a, b)
    assert not np.array_equal(a[0]["index"], c[0]["index"])
    assert a[0]["image"].shape == (4, 6, 6, 3) and a[0]["image"].dtype == np.float32


@pytest.mark.slow
@pytest.mark.parametrize("builder", ["labelled", "pairs", "triplets", "views"])
def test_resume_at_step_reproduces_the_tail(builder):
    src = SyntheticImageSource(11, (8, 8, 3), num_classes=3, seed=0)
    aug = A.simclr_augment((5, 5))

    def make(start, steps):
        kw = dict(seed=5, start_step=start, num_steps=steps)
        if builder == "labelled":
            return labelled_batches(src, 3, augment=aug, **kw)
        if builder == "pairs":
            return pair_batches(src, 3, group_key="label", same_fraction=0.5, augment=aug, **kw)
        if builder == "triplets":
            return triplet_batches(src, 3, group_key="label", augment=aug, **kw)
        return view_batches(src, 3, aug, **kw)

    full = collect(make(0, 9))
    tail = collect(make(6, 3))
    assert_streams_equal(full[6:], tail)


def test_hosts_split_the_global_batch():
    src = id_source(n=17)
    hosts = 3
    whole = collect(labelled_batches(src, 6, seed=2, num_steps=4))
    shards = [
        collect(labelled_batches(src, 2, seed=2, num_steps=4, process_index=h, process_count=hosts))
        for h in range(hosts)
    ]
    for step in range(4):
        joined = np.concatenate([shards[h][step]["index"] for h in range(hosts)])
        np.testing.assert_array_equal(joined, whole[step]["index"])


def test_evaluation_pass_covers_every_example_once():
    src = id_source(n=10)
    batches = collect(labelled_batches(src, 4, seed=0, shuffle=False, num_epochs=1))
    assert len(batches) == 3
    idx = np.concatenate([b["index"] for b in batches])
    mask = np.concatenate([b["mask"] for b in batches])
    np.testing.assert_array_equal(idx[mask], np.arange(10))
    np.testing.assert_array_equal(mask, np.arange(12) < 10)


def test_triplets_follow_eq_a3():
    n, g = 60, 5
    labels = np.arange(n) % g
    src = ArraySource({"image": np.zeros((n, 2, 2, 1), np.uint8), "program_id": labels * 10})
    prior = np.array([0.1, 0.4, 0.2, 0.2, 0.1])
    batches = collect(triplet_batches(src, 50, seed=3, group_key="program_id", prior=prior, num_steps=60))
    idx = np.concatenate([b["index"] for b in batches])
    pid = np.concatenate([b["program_id"] for b in batches])
    assert idx.shape == (3000, 3) and pid.shape == (3000, 3)
    # metadata rides along with the chosen examples
    np.testing.assert_array_equal(pid, labels[idx] * 10)
    assert (pid[:, 0] == pid[:, 1]).all()  # same distribution
    assert (idx[:, 0] != idx[:, 1]).all()  # a different example of it
    assert (pid[:, 0] != pid[:, 2]).all()  # negative from a different distribution
    # negatives: prior restricted to the other groups, averaged over the anchors' groups
    anchor_group = pid[:, 0] // 10
    expected = np.zeros(g)
    for a in range(g):
        p = prior.copy()
        p[a] = 0
        expected += np.mean(anchor_group == a) * p / p.sum()
    freq = np.bincount(pid[:, 2] // 10, minlength=g) / len(pid)
    np.testing.assert_allclose(freq, expected, atol=0.025)


def test_triplets_iid_negative_option_and_errors():
    n = 40
    src = ArraySource({"image": np.zeros((n, 1, 1, 1), np.uint8), "c": np.arange(n) % 2})
    batches = collect(triplet_batches(src, 40, seed=0, group_key="c", distinct_negative=False, num_steps=10))
    c = np.concatenate([b["c"] for b in batches])
    assert 0.4 < np.mean(c[:, 0] == c[:, 2]) < 0.6  # theta- drawn i.i.d. from a uniform prior
    one = ArraySource({"image": np.zeros((4, 1, 1, 1), np.uint8), "c": np.zeros(4, np.int64)})
    with pytest.raises(ValueError, match="two groups"):
        triplet_batches(one, 2, seed=0, group_key="c")
    with pytest.raises(ValueError, match="metadata keys"):
        triplet_batches(src, 2, seed=0, group_key="c", keys=["nope"])


def test_pairs_same_fraction():
    n = 50
    src = ArraySource({"image": np.zeros((n, 1, 1, 1), np.uint8), "label": np.arange(n) % 10})
    batches = collect(pair_batches(src, 50, seed=1, group_key="label", same_fraction=0.7, num_steps=20))
    lab = np.concatenate([b["label"] for b in batches])
    idx = np.concatenate([b["index"] for b in batches])
    same = lab[:, 0] == lab[:, 1]
    # P(same) = q + (1 - q) * P(random partner shares the label) = 0.7 + 0.3 * 0.1
    assert abs(same.mean() - 0.73) < 0.03
    # a same-group partner is another example: self-pairs only come from the uniform branch,
    # with probability (1 - q) / n = 0.006
    assert np.mean(idx[:, 0] == idx[:, 1]) < 0.02
    with pytest.raises(ValueError, match="group_key"):
        pair_batches(src, 2, seed=0, same_fraction=0.5)
    with pytest.raises(ValueError, match="same_fraction"):
        pair_batches(src, 2, seed=0, same_fraction=1.5, group_key="label")


def test_views_are_independent_augmentations_of_one_example():
    src = SyntheticImageSource(9, (16, 16, 3), seed=4)
    batches = collect(view_batches(src, 3, A.simclr_augment((8, 8)), seed=0, num_views=2, num_steps=2))
    for b in batches:
        assert b["image"].shape == (3, 2, 8, 8, 3) and b["label"].shape == (3,)
        for i in range(3):
            assert not np.allclose(b["image"][i, 0], b["image"][i, 1])
    with pytest.raises(ValueError, match="augment"):
        view_batches(src, 3, None, seed=0)


def test_function_source_pipeline_and_validation():
    src = FunctionSource(
        lambda rng, i: {"image": rng.random((4, 4, 1)).astype(np.float32), "component": np.int64(i % 2)},
        length=8,
        seed=1,
    )
    b = next(as_numpy(labelled_batches(src, 4, seed=0, num_steps=1)))
    for k in range(4):
        np.testing.assert_array_equal(b["image"][k], src.example(int(b["index"][k]))["image"])
    with pytest.raises(ValueError, match="batch_size"):
        labelled_batches(src, 0, seed=0)
    with pytest.raises(ValueError, match="start_step"):
        labelled_batches(src, 2, seed=0, start_step=-1)


@pytest.mark.parametrize("kind", ["labelled", "triplets"])
def test_numpy_engine_gives_the_tf_data_batches(kind):
    """engine="numpy" (no tf.data) yields the tf.data batches entry for entry, dtypes included, and refuses augment."""
    src = ArraySource(
        {"image": np.random.default_rng(0).integers(0, 255, (40, 8, 8, 3)).astype(np.uint8), "label": np.arange(40) % 4}
    )
    build = pipelines.labelled_batches if kind == "labelled" else pipelines.triplet_batches
    kw = dict(keys=["label"]) if kind == "labelled" else dict(group_key="label", keys=["label"])
    common = dict(seed=3, start_step=2, num_steps=3, process_index=1, process_count=2, **kw)
    tf_batches = list(pipelines.as_numpy(build(src, 8, **common)))
    np_batches = list(pipelines.as_numpy(build(src, 8, engine="numpy", **common)))
    assert len(tf_batches) == len(np_batches) == 3
    for a, b in zip(tf_batches, np_batches):
        assert set(a) == set(b)
        for k in a:
            assert a[k].dtype == b[k].dtype
            np.testing.assert_array_equal(a[k], b[k])
    with pytest.raises(ValueError, match="engine='numpy' builds batches without augmentation"):
        build(src, 8, engine="numpy", augment=lambda image, seed: image, **common)


#: The example indices of the first 9 global batches of 8 (two epochs of the 50 examples of
#: :func:`_golden_source`, seed 5), as built by the pipelines of commit b52c98b, before the triplets drew
#: their negative groups from a table of restricted CDFs and their uniforms several streams at once.
GOLDEN_LABELLED = [
    [29, 6, 39, 48, 17, 30, 32, 26],
    [23, 9, 33, 22, 12, 31, 2, 18],
    [36, 42, 41, 34, 27, 7, 28, 43],
    [44, 20, 11, 13, 19, 38, 35, 24],
    [25, 3, 8, 49, 21, 1, 16, 47],
    [14, 4, 5, 15, 10, 45, 0, 37],
    [46, 40, 49, 34, 32, 39, 45, 6],
    [19, 12, 40, 47, 14, 25, 30, 5],
    [28, 42, 11, 23, 46, 41, 27, 18],
]
GOLDEN_TRIPLETS = [
    [[29, 15, 37], [6, 41, 33], [39, 18, 0], [48, 41, 3], [17, 38, 2], [30, 2, 17], [32, 18, 34], [26, 33, 39]],
    [[23, 37, 46], [9, 2, 14], [33, 26, 39], [22, 8, 45], [12, 40, 1], [31, 17, 11], [2, 37, 11], [18, 32, 40]],
    [[36, 43, 3], [42, 7, 26], [41, 6, 28], [34, 20, 1], [27, 41, 18], [7, 28, 16], [28, 14, 41], [43, 15, 48]],
    [[44, 16, 36], [20, 13, 19], [11, 18, 5], [13, 41, 49], [19, 26, 35], [38, 24, 25], [35, 42, 5], [24, 31, 46]],
    [[25, 46, 9], [3, 31, 49], [8, 36, 46], [49, 49, 31], [21, 7, 19], [1, 22, 39], [16, 9, 40], [47, 19, 21]],
    [[14, 35, 22], [4, 39, 21], [5, 12, 34], [15, 36, 18], [10, 24, 44], [45, 10, 27], [0, 28, 39], [37, 9, 7]],
    [[46, 39, 37], [40, 19, 37], [49, 49, 47], [34, 6, 40], [32, 18, 12], [39, 11, 9], [45, 3, 25], [6, 34, 39]],
    [[19, 40, 3], [12, 5, 2], [40, 12, 44], [47, 12, 31], [14, 21, 34], [25, 11, 49], [30, 44, 33], [5, 12, 20]],
    [[28, 21, 43], [42, 35, 30], [11, 46, 10], [23, 30, 22], [46, 4, 21], [41, 27, 42], [27, 6, 1], [18, 4, 14]],
]


def _golden_source():
    n = 50
    labels = np.array([i % 7 for i in range(n - 1)] + [7])  # seven groups of 7 and a singleton
    return ArraySource({"image": np.arange(n, dtype=np.uint8).reshape(n, 1, 1, 1), "label": labels})


class _CountingSource(ArraySource):
    """An ArraySource that records how many rows each gather asks for."""

    def __init__(self, arrays):
        super().__init__(arrays)
        self.rows = []

    def examples(self, indices):
        self.rows.append(len(indices))
        return super().examples(indices)


@pytest.mark.parametrize("kind", ["labelled", "triplets"])
@pytest.mark.parametrize("count", [1, 2, 4])
def test_batches_equal_those_of_b52c98b_for_every_process_count(kind, count):
    """Each of P processes builds only its b = 8 / P rows (gathers of b or 3 b rows), and the rows of all P
    are, in order, the global batches the pipelines built before this change, bit for bit."""
    golden = GOLDEN_LABELLED if kind == "labelled" else GOLDEN_TRIPLETS
    b = 8 // count
    parts = []
    for index in range(count):
        src = _CountingSource(_golden_source().arrays)
        common = dict(seed=5, keys=["label"], num_steps=9, process_index=index, process_count=count, engine="numpy")
        if kind == "labelled":
            ds = labelled_batches(src, b, **common)
        else:
            ds = triplet_batches(src, b, group_key="label", **common)
        parts.append(collect(ds))
        members = 1 if kind == "labelled" else 3
        assert src.rows[1:] == [members * b] * 9  # after _probe's one row: only this process's rows
        for batch in parts[-1]:
            np.testing.assert_array_equal(batch["image"][..., 0, 0, 0], batch["index"])
    for step in range(9):
        got = np.concatenate([parts[i][step]["index"] for i in range(count)])
        np.testing.assert_array_equal(got, golden[step], err_msg=f"step {step} P={count}")
