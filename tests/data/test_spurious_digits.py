"""Tests for gensim_jax.data.spurious_digits (seed 003 Sec. 3.1) with explicit loops and mock tfds."""

import numpy as np
import pytest

from gensim_jax.data.spurious_digits import SpuriousDigits, compose, load_spurious_digits, make_pools, pad_digits

RNG = np.random.default_rng(1)


def fake_arrays(n_digits=40, n_backgrounds=60, n_test_backgrounds=7):
    return {
        "mnist_train": {
            "image": RNG.integers(0, 256, (n_digits, 28, 28, 1), dtype=np.uint8),
            "label": np.arange(n_digits) % 10,
        },
        "mnist_test": {
            "image": RNG.integers(0, 256, (n_digits // 2, 28, 28, 1), dtype=np.uint8),
            "label": np.arange(n_digits // 2) % 10,
        },
        "cifar10_train": {
            "image": RNG.integers(0, 256, (n_backgrounds, 32, 32, 3), dtype=np.uint8),
            "label": np.arange(n_backgrounds) % 10,
        },
        "cifar10_test": {
            "image": RNG.integers(0, 256, (n_test_backgrounds, 32, 32, 3), dtype=np.uint8),
            "label": np.arange(n_test_backgrounds) % 10,
        },
    }


def test_pad_and_compose_against_loops():
    d = RNG.integers(0, 256, (3, 28, 28, 1), dtype=np.uint8)
    p = pad_digits(d)
    assert p.shape == (3, 32, 32)
    assert (p[:, :2] == 0).all() and (p[:, -2:] == 0).all() and (p[:, :, :2] == 0).all()
    np.testing.assert_array_equal(p[:, 2:30, 2:30], d[..., 0])
    bg = RNG.integers(0, 256, (3, 32, 32, 3), dtype=np.uint8)
    out = compose(p, bg)
    for n in range(3):
        for y in (0, 5, 17, 31):
            for x in (1, 16, 29):
                for c in range(3):
                    assert out[n, y, x, c] == round(int(p[n, y, x]) * int(bg[n, y, x, c]) / 255)
    with pytest.raises(ValueError, match="28, 28"):
        pad_digits(np.zeros((2, 32, 32)))
    with pytest.raises(ValueError, match="must agree"):
        compose(p, bg[:2])


@pytest.mark.parametrize("overlap", [0.0, 0.25, 1.0])
def test_pools_are_disjoint_up_to_the_shared_part(overlap):
    pools = make_pools(200, 8, overlap, seed=3)
    shared = round(overlap * 8)
    assert pools.shape == (10, 8)
    for a in range(10):
        assert len(set(pools[a])) == 8
        for b in range(a + 1, 10):
            assert len(set(pools[a]) & set(pools[b])) == shared
    assert len(np.unique(pools)) == shared + 10 * (8 - shared)
    np.testing.assert_array_equal(pools, make_pools(200, 8, overlap, seed=3))
    assert not np.array_equal(pools, make_pools(200, 8, overlap, seed=4))
    with pytest.raises(ValueError, match="need 80 distinct backgrounds"):
        make_pools(50, 8, 0.0, seed=0)


def test_splits_draw_backgrounds_from_the_right_pools():
    arrays = fake_arrays()
    train = load_spurious_digits("train", per_class=5, seed=2, arrays=arrays)
    test_id = load_spurious_digits("test_id", per_class=5, seed=2, arrays=arrays)
    swapped = load_spurious_digits("test_ood", per_class=5, seed=2, arrays=arrays)
    unseen = load_spurious_digits("test_ood", per_class=5, seed=2, ood="unseen", arrays=arrays)
    pools = make_pools(60, 5, 0.0, seed=2)
    np.testing.assert_array_equal(train.pools, pools)
    assert len(train) == 40 and len(test_id) == 20 and len(unseen) == 20
    for src, mnist in ((train, arrays["mnist_train"]), (test_id, arrays["mnist_test"])):
        ex = src.examples(np.arange(len(src)))
        for i in range(len(src)):
            d = int(mnist["label"][i])
            assert ex["label"][i] == d and ex["background"][i] in pools[d] and ex["in_pool"][i]
            expected = compose(
                pad_digits(mnist["image"][i : i + 1]), arrays["cifar10_train"]["image"][ex["background"][i]][None]
            )[0]
            np.testing.assert_array_equal(ex["image"][i], expected)
            assert ex["background_label"][i] == arrays["cifar10_train"]["label"][ex["background"][i]]
    ex = swapped.examples(np.arange(20))
    used = set(pools.ravel())
    for i in range(20):
        assert ex["background"][i] not in pools[ex["label"][i]] and ex["background"][i] in used
        assert not ex["in_pool"][i]
    ex = unseen.examples(np.arange(20))
    assert ex["background"].max() < 7 and not ex["in_pool"].any()
    np.testing.assert_array_equal(
        ex["image"][3],
        compose(
            pad_digits(arrays["mnist_test"]["image"][3:4]), arrays["cifar10_test"]["image"][ex["background"][3]][None]
        )[0],
    )
    # a pure function of (seed, index); example() agrees with examples()
    np.testing.assert_array_equal(train.example(7)["image"], train.examples(np.array([7]))["image"][0])
    again = load_spurious_digits("train", per_class=5, seed=2, arrays=arrays)
    np.testing.assert_array_equal(again.background_indices(np.arange(40)), train.background_indices(np.arange(40)))


def test_backgrounds_cover_the_pool_uniformly():
    n = 5000
    digits = np.zeros((n, 28, 28), np.uint8)
    src = SpuriousDigits(
        digits,
        np.zeros(n, np.int64),
        np.zeros((40, 32, 32, 3), np.uint8),
        np.zeros(40),
        make_pools(40, 4, seed=0),
        seed=0,
    )
    bg = src.background_indices(np.arange(n))
    counts = np.array([np.sum(bg == b) for b in src.pools[0]])
    np.testing.assert_allclose(counts / n, 0.25, atol=0.03)


def test_validation():
    arrays = fake_arrays()
    with pytest.raises(ValueError, match="split"):
        load_spurious_digits("val", arrays=arrays)
    with pytest.raises(ValueError, match="ood"):
        load_spurious_digits("test_ood", ood="other", arrays=arrays)
    with pytest.raises(ValueError, match="overlap = 1"):
        load_spurious_digits("test_ood", per_class=3, overlap=1.0, arrays=arrays)
    with pytest.raises(ValueError, match="mode"):
        SpuriousDigits(
            np.zeros((1, 28, 28)), [0], np.zeros((20, 32, 32, 3)), np.zeros(20), make_pools(20, 1, seed=0), mode="bad"
        )


def test_loads_through_tfds_under_mock_data():
    import tensorflow_datasets as tfds

    from gensim_jax.data.pipelines import as_numpy, labelled_batches

    with tfds.testing.mock_data(num_examples=30):
        train = load_spurious_digits("train", per_class=3, overlap=0.0, seed=0)
        ood = load_spurious_digits("test_ood", per_class=3, ood="unseen", seed=0)
    assert len(train) == 30 and len(ood) == 30
    batch = next(as_numpy(labelled_batches(train, 8, seed=0, num_steps=1)))
    assert batch["image"].shape == (8, 32, 32, 3) and batch["image"].dtype == np.uint8
    for k in range(8):
        assert batch["background"][k] in train.pools[batch["label"][k]]


def test_triplets_over_spurious_digits():
    from gensim_jax.data.pipelines import as_numpy, triplet_batches

    train = load_spurious_digits("train", per_class=5, seed=2, arrays=fake_arrays())
    batch = next(as_numpy(triplet_batches(train, 16, seed=0, group_key="label", num_steps=1)))
    lab, bg = batch["label"], batch["background"]
    assert batch["image"].shape == (16, 3, 32, 32, 3)
    assert (lab[:, 0] == lab[:, 1]).all() and (lab[:, 0] != lab[:, 2]).all()
    for k in range(16):  # in distribution: every background comes from its digit's pool
        for m in range(3):
            assert bg[k, m] in train.pools[lab[k, m]]
