"""Tests for gensim_jax.data.imagenet under tfds.testing.mock_data (no download)."""

import numpy as np
import pytest
import tensorflow_datasets as tfds

from gensim_jax.data.pipelines import as_numpy
from gensim_jax.kernels.hierarchy import imagenet1k_hierarchy
from gensim_jax.preprocessing import IMAGENET_MEAN, IMAGENET_STD
from tests._lazy import LazyModule

I = LazyModule("gensim_jax.data.imagenet")
tf = LazyModule("gensim_jax.data._tf", "tf")

LOW = (0.0 - np.array(IMAGENET_MEAN)) / np.array(IMAGENET_STD)
HIGH = (1.0 - np.array(IMAGENET_MEAN)) / np.array(IMAGENET_STD)


def test_tfds_label_order_is_the_hierarchy_class_order():
    names = tfds.builder("imagenet2012").info.features["label"].names
    assert len(names) == 1000 and names[0] == "n01440764" and names == sorted(names)
    I.check_label_order(names)
    h = imagenet1k_hierarchy()
    assert h.tree.names[0] == "tench.n.01"
    leaves = I.label_to_leaf(np.arange(1000))
    np.testing.assert_array_equal(leaves, np.arange(1000))
    assert set(leaves.tolist()) <= set(h.tree.leaves.tolist())
    with pytest.raises(ValueError, match="first difference at label 1"):
        I.check_label_order([names[0], names[2], names[1], *names[3:]])
    with pytest.raises(ValueError, match=r"\[0, 1000\)"):
        I.label_to_leaf(np.array([1000]))


def test_host_split_strings():
    assert I._host_split("train", 0, 1) == "train"
    assert str(I._host_split("train", 2, 4)) == str(tfds.even_splits("train", n=4)[2])


def test_decoders_on_a_constant_jpeg():
    img = np.zeros((40, 60, 3), np.uint8)
    img[...] = (200, 100, 50)
    jpeg = tf.io.encode_jpeg(img, quality=100)
    out = I.decode_train(jpeg, np.array([0, 1]), size=16).numpy()
    assert out.shape == (16, 16, 3)
    np.testing.assert_allclose(out, np.broadcast_to(img[0, 0] / 255.0, out.shape), atol=3 / 255)
    out = I.decode_eval(jpeg, size=16).numpy()
    np.testing.assert_allclose(out, np.broadcast_to(img[0, 0] / 255.0, out.shape), atol=3 / 255)


@pytest.mark.slow
def test_train_pipeline_224_deterministic_and_resumable():
    with tfds.testing.mock_data(num_examples=6):
        make = lambda start, steps: list(
            as_numpy(
                I.imagenet_dataset("train", 2, seed=3, train=True, start_step=start, num_steps=steps, shuffle_buffer=4)
            )
        )
        full = make(0, 6)  # two epochs of 6 records, 2 per step
        again = make(0, 6)
        tail = make(4, 1)
        stored = list(as_numpy(I.imagenet_dataset("train", 6, seed=0, train=False, image_size=8)))
    for b in full:
        assert b["image"].shape == (2, 224, 224, 3) and b["image"].dtype == np.float32
        assert (b["image"] >= LOW - 1e-4).all() and (b["image"] <= HIGH + 1e-4).all()
        np.testing.assert_array_equal(b["leaf"], I.label_to_leaf(b["label"]))
        assert b["mask"].all()
    for a, b in zip(full, again):
        np.testing.assert_array_equal(a["image"], b["image"])
    for k in tail[0]:
        np.testing.assert_array_equal(tail[0][k], full[4][k])
    np.testing.assert_array_equal(np.concatenate([b["position"] for b in full]), np.arange(12))
    # each epoch sees every stored record once, in a new order
    labels = np.concatenate([b["label"] for b in full])
    np.testing.assert_array_equal(np.sort(labels[:6]), np.sort(stored[0]["label"]))
    np.testing.assert_array_equal(np.sort(labels[6:]), np.sort(stored[0]["label"]))
    assert not np.array_equal(labels[:6], labels[6:])


@pytest.mark.slow
def test_eval_pass_and_simclr_views():
    with tfds.testing.mock_data(num_examples=5):
        ev = list(as_numpy(I.imagenet_dataset("validation", 2, seed=0, train=False, image_size=32)))
        views = next(
            as_numpy(I.imagenet_dataset("train", 3, seed=0, train=True, image_size=32, num_views=2, num_steps=1))
        )
        h1 = next(
            as_numpy(
                I.imagenet_dataset(
                    "train", 3, seed=0, train=True, image_size=32, num_steps=1, process_index=1, process_count=2
                )
            )
        )
        h0 = next(
            as_numpy(
                I.imagenet_dataset(
                    "train", 3, seed=0, train=True, image_size=32, num_steps=1, process_index=0, process_count=2
                )
            )
        )
    assert len(ev) == 3
    mask = np.concatenate([b["mask"] for b in ev])
    np.testing.assert_array_equal(mask, np.arange(6) < 5)
    np.testing.assert_array_equal(np.concatenate([b["position"] for b in ev]), np.arange(6))
    assert ev[0]["image"].shape == (2, 32, 32, 3)
    assert views["image"].shape == (3, 2, 32, 32, 3)
    assert not np.allclose(views["image"][:, 0], views["image"][:, 1])
    # hosts use different shuffles and augmentation seeds
    assert not np.allclose(h0["image"], h1["image"])
    with pytest.raises(ValueError, match="process_index"):
        I.imagenet_dataset("train", 2, seed=0, train=True, process_index=2, process_count=2)
