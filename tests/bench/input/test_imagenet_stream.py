"""Smoke test of bench.input.imagenet_stream at tiny sizes, and the content of its device-augmentation host part."""

import io
import math
import os

import numpy as np
import pytest

pytest.importorskip("sklearn", reason="the JPEGs are made from scikit-learn's sample photographs")
pytest.importorskip("tensorflow_datasets")
Image = pytest.importorskip("PIL.Image")

from bench import report  # noqa: E402
from bench.input import imagenet_jpegs  # noqa: E402
from bench.input import imagenet_stream as S  # noqa: E402

KEYS = {"bench", "params", "ours_s", "reference", "reference_s", "ratio", "target", "met", "images_per_s_per_core"}


@pytest.mark.slow
def test_quick_run_prints_the_issue_rows():
    lines = list(S.run(quick=True, n=32, seconds=0.0, threads=(1,)))
    assert len(lines) == len(S.CASES) + len(S.PREPARED_CASES)
    mean_kb = imagenet_jpegs.summary(imagenet_jpegs.imagenet_like_jpegs(32))["mean_kb"]
    for line, (views, augment, work) in zip(lines, S.CASES):
        assert KEYS <= set(line), line
        p = line["params"]
        assert line["bench"] == "input_imagenet_stream" and report._module(line["bench"]) == "input.imagenet_stream"
        assert (p["views"], p["augment"], p["size"], p["threads"]) == (views, augment, 224, 1)
        assert line["images_per_s_per_core"] > 0 and line["cores_used"] > 0
        assert math.isclose(
            line["ours_s"], 1 / line["images_per_s_per_core"], rel_tol=5e-3
        )  # both printed to 3-4 significant digits
        assert math.isclose(line["ratio"], line["ours_s"] / line["reference_s"], rel_tol=5e-3)
        assert line["jpeg_mean_kb"] == mean_kb
        if augment == "host":
            assert line["target"] == "none" and line["met"] is True
            expected = [224, 224, 3] if views == 1 else [views, 224, 224, 3]
        else:
            target = S.TARGETS[views]
            assert line["met"] == (line["images_per_s_per_core"] >= target)
            assert p["host_work"] == S.HOST_WORK[work]
            if work == "crop":
                expected = [224, 224, 3] if views == 1 else [views, 224, 224, 3]
            else:  # one load-size image, whatever the number of views
                expected = [S.LOAD_SIZE, S.LOAD_SIZE, 3]
        assert line["output_shape"] == expected, (views, augment, work)
        assert p["source"] == "tfds jpeg"
    for line, (views, load_size, fmt) in zip(lines[len(S.CASES) :], S.PREPARED_CASES):
        p = line["params"]
        assert (p["views"], p["augment"], p["source"].split()[:3]) == (
            views,
            "device",
            ["prepared", fmt, str(load_size)],
        )
        assert line["output_shape"] == [load_size, load_size, 3]
        assert line["met"] == (line["images_per_s_per_core"] >= S.TARGETS[views])
        # disk cost: raw pixels plus a record's few bytes; a JPEG of L x L far less than raw
        raw = 3 * load_size**2 / 1e3
        if fmt == "raw":
            assert raw < line["prepared_kb_per_image"] < raw + 0.2
        else:
            assert 0 < line["prepared_kb_per_image"] < raw / 2
        assert line["prepared_imagenet_train_gb"] == pytest.approx(line["prepared_kb_per_image"] * 1.281167, rel=1e-2)


@pytest.mark.slow
def test_device_host_part_is_the_resized_decode_of_each_record(tmp_path):
    from gensim_jax.data._tf import tf

    jpegs = imagenet_jpegs.imagenet_like_jpegs(5, seed=1)
    path = os.path.join(tmp_path, "x.tfrecord")
    S._write_records(jpegs, path)
    with S._mocked_imagenet(path):
        batch = next(S.device_host_part(1, len(jpegs), "resize").as_numpy_iterator())
        crops = next(S.device_host_part(2, len(jpegs), "crop").as_numpy_iterator())
    assert batch["image"].shape == (S.BATCH, S.LOAD_SIZE, S.LOAD_SIZE, 3) and batch["image"].dtype == np.uint8
    assert crops["image"].shape == (S.BATCH, 2, 224, 224, 3) and crops["image"].dtype == np.uint8
    assert sorted(set(batch["label"].tolist())) == list(range(5))  # every record, repeated
    for image, label, h, w in zip(batch["image"], batch["label"], batch["height"], batch["width"]):
        decoded = np.asarray(Image.open(io.BytesIO(jpegs[label])).convert("RGB"))  # PIL's libjpeg
        assert (h, w) == decoded.shape[:2]
        ref = tf.image.resize(decoded.astype(np.float32), [S.LOAD_SIZE, S.LOAD_SIZE], method="bilinear").numpy()
        diff = np.abs(image.astype(np.float32) - np.clip(np.round(ref), 0, 255))
        # PIL's and TensorFlow's libjpeg builds differ by about 1.4 levels on average (chroma upsampling,
        # IDCT); another record or orientation would differ by tens of levels
        assert diff.mean() < 2.0 and np.percentile(diff, 99) <= 10, (diff.mean(), np.percentile(diff, 99))
    # two views are two different crops of the same record
    assert not np.array_equal(crops["image"][:, 0], crops["image"][:, 1])
