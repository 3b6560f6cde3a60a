"""Tests for the Geoclidean TFRecord cache: a written and read-back stream equals the generated
stream example by example, and an interrupted write resumes."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from gensim_jax.data.geoclidean_records import read_tfrecords, write_tfrecords
from gensim_jax.stimuli.geoclidean.dataset import generate

# find_spec, not importorskip: importing TensorFlow while collecting costs every worker about 5 s
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("tensorflow") is None, reason="TensorFlow is the optional TFRecord backend"
)


def test_tfrecords_round_trip_and_resume(tmp_path):
    d = tmp_path / "rec"
    paths = write_tfrecords(d, 9, seed=4, shard_size=4, size=40, progress=False)
    assert [p.name for p in paths] == [f"geoclidean-{k:05d}-of-00003.tfrecord.gz" for k in range(3)]
    ref = list(generate(9, seed=4, size=40))
    got = list(read_tfrecords(d).as_numpy_iterator())
    assert len(got) == 9
    for a, b in zip(got, ref):
        assert a["image"].shape == (40, 40) and a["image"].dtype == np.uint8
        for k in b:
            np.testing.assert_array_equal(a[k], b[k])
    # resume: delete one shard, re-run, same content; other settings are refused
    paths[2].unlink()
    with pytest.raises(ValueError, match="incomplete"):
        read_tfrecords(d)
    write_tfrecords(d, 9, seed=4, shard_size=4, size=40, progress=False)
    again = list(read_tfrecords(d).as_numpy_iterator())
    for a, b in zip(again, ref):
        np.testing.assert_array_equal(a["image"], b["image"])
    with pytest.raises(ValueError, match="other settings"):
        write_tfrecords(d, 9, seed=5, shard_size=4, size=40, progress=False)
