"""Tests for gensim_jax.data.prepared: records pre-resized to a load size, against PIL, under tfds mock data."""

import io
import json
import os

import numpy as np
import pytest
import tensorflow_datasets as tfds

from tests._lazy import LazyModule

Image = pytest.importorskip("PIL.Image")
P = LazyModule("gensim_jax.data.prepared")
tf = LazyModule("gensim_jax.data._tf", "tf")

SIZES = ((40, 60), (64, 64), (90, 45), (33, 70), (48, 36))


def _jpegs():
    out = []
    for k, (h, w) in enumerate(SIZES):
        y, x = np.mgrid[:h, :w]
        img = np.stack([128 + 100 * np.sin(x / (4.0 + k)), 128 + 100 * np.cos(y / 7.0), 40 + 2 * x + y], -1)
        buf = io.BytesIO()
        Image.fromarray(img.astype(np.uint8)).save(buf, format="JPEG", quality=95)
        out.append(buf.getvalue())
    return out


def _mock(jpegs):
    def as_dataset(self, split, decoders=None, read_config=None, shuffle_files=False):
        labels = np.arange(len(jpegs), dtype=np.int64) * 7
        return tf.data.Dataset.from_tensor_slices({"image": tf.constant(jpegs), "label": labels})

    return tfds.testing.mock_data(as_dataset_fn=as_dataset)


def _reference(data, load_size):
    """PIL's decode, then PIL's bilinear resize (antialiased when shrinking) of the whole image."""
    image = Image.open(io.BytesIO(data)).convert("RGB")
    return np.asarray(image.resize((load_size, load_size), Image.Resampling.BILINEAR), np.float32), image.size[::-1]


def _pil_round_trip(image):
    buf = io.BytesIO()
    Image.fromarray(np.clip(np.round(image), 0, 255).astype(np.uint8)).save(buf, format="JPEG", quality=90)
    return np.asarray(Image.open(io.BytesIO(buf.getvalue())), np.float32)


@pytest.mark.slow
@pytest.mark.parametrize("fmt, mean_tol, p99_tol", [("raw", 2.0, 6), ("jpeg", 2.0, 6)])
def test_round_trip_equals_a_pil_resize_of_the_originals(tmp_path, fmt, mean_tol, p99_tol):
    jpegs = _jpegs()
    with _mock(jpegs):
        entry = P.prepare_records(None, str(tmp_path), split="train", load_size=32, fmt=fmt, examples_per_file=2)
    got = list(P.prepared_dataset(str(tmp_path), "train").as_numpy_iterator())
    assert [int(ex["label"]) for ex in got] == [7 * i for i in range(len(jpegs))]  # stored order
    for ex, data in zip(got, jpegs):
        ref, (h, w) = _reference(data, 32)
        assert ex["image"].shape == (32, 32, 3) and ex["image"].dtype == np.uint8
        assert (int(ex["height"]), int(ex["width"])) == (h, w)
        # raw: only PIL's and TensorFlow's libjpeg builds (1.3-1.6 levels on average here) and the two
        # antialiased bilinear filters (<= 1 level) differ; jpeg adds the re-encoding at quality 90, whose
        # error is bounded by twice that of PIL's own quality-90 round trip of the reference
        diff = np.abs(ex["image"].astype(np.float32) - ref)
        mean_bound, p99_bound = mean_tol, p99_tol
        if fmt == "jpeg":
            loss = np.abs(_pil_round_trip(ref) - ref)
            mean_bound, p99_bound = mean_tol + 2 * loss.mean(), p99_tol + 2 * np.percentile(loss, 99)
        assert diff.mean() < mean_bound and np.percentile(diff, 99) <= p99_bound, (diff.mean(), mean_bound)
    files = [os.path.join(tmp_path, f) for f in entry["files"]]
    assert len(files) == 3 and entry["examples"] == 5
    assert entry["bytes"] == sum(os.path.getsize(f) for f in files)
    assert entry["bytes_per_image"] == round(entry["bytes"] / 5, 1)
    assert entry["imagenet_train_bytes"] == round(entry["bytes"] / 5 * 1_281_167)
    if fmt == "raw":
        assert entry["bytes_per_image"] > 3 * 32 * 32
    with open(tmp_path / "prepared.json") as f:
        assert json.load(f)["splits"]["train"] == entry
    # processes take interleaved records, together all of them once
    p1 = [int(ex["label"]) for ex in P.prepared_dataset(str(tmp_path), process_index=1, process_count=2)]
    assert p1 == [7, 21]
    shuffled = [int(ex["label"]) for ex in P.prepared_dataset(str(tmp_path), shuffle_buffer=5, seed=1)]
    assert sorted(shuffled) == [7 * i for i in range(5)] and shuffled != sorted(shuffled)
    assert shuffled == [int(ex["label"]) for ex in P.prepared_dataset(str(tmp_path), shuffle_buffer=5, seed=1)]


def test_clear_errors_on_missing_or_bad_input(tmp_path, capsys):
    with pytest.raises(FileNotFoundError, match="prepared.json is missing"):
        P.prepared_dataset(str(tmp_path))
    (tmp_path / "prepared.json").write_text(
        json.dumps({"splits": {"train": {"files": ["train-8-raw.tfrecord-00000"], "load_size": 8, "format": "raw"}}})
    )
    with pytest.raises(FileNotFoundError, match="no prepared split 'validation'"):
        P.prepared_dataset(str(tmp_path), "validation")
    with pytest.raises(FileNotFoundError, match="lacks 1 record file"):
        P.prepared_dataset(str(tmp_path), "train")
    with pytest.raises(ValueError, match="format must be one of"):
        P.prepare_records(None, str(tmp_path), fmt="png")
    with pytest.raises(ValueError, match="load_size must be positive"):
        P.prepare_records(None, str(tmp_path), load_size=0)
    with pytest.raises(FileNotFoundError, match="no prepared tfds imagenet2012 split 'train'"):
        P.prepare_records(str(tmp_path / "nothing"), str(tmp_path / "out"))
    # the command: one line on stderr, exit status 2
    from gensim_jax.commands.main import main

    assert main(["prepare-imagenet", "--data-dir", str(tmp_path / "nothing"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gensim-jax prepare-imagenet: error: no prepared tfds imagenet2012")
