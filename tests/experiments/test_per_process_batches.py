"""Every experiment builds only this process's rows, and the rows of P processes are the 1-process batch.

For each experiment and arm, the batches of ``HostShard(i, P, B)`` for ``i < P`` are stacked and
compared, entry by entry and bit for bit, with the batches of ``HostShard(0, 1, B)`` (two steps from
a resume position), for P = 2 and 4: the set and order of the examples of a global batch, and every
random number of their augmentation, do not depend on the process count.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from gensim_jax import experiments as registry
from gensim_jax.training.experiment import HostShard, ImageExperiment
from tests.experiments import test_folder, test_geoclidean, test_imagenet_hierarchy, test_quadrilaterals

pytestmark = pytest.mark.slow

#: A small config of each experiment: the test modules' own ``tiny_config`` where they have one.
SMALL = {
    "quadrilaterals": lambda: test_quadrilaterals.tiny_config(),
    "geoclidean": lambda: test_geoclidean.tiny_config(),
    "imagenet_hierarchy": lambda: test_imagenet_hierarchy.tiny_config(),
    "folder": lambda: test_folder.tiny_config(test_folder.example_folder("class_path"), **{"data.augment": "device"}),
    "spurious_digits": lambda: registry.load("spurious_digits").get_config(
        "cpu_small",
        lambdas=(0.0,),
        batch_size=8,
        **{"data.num_train_images": 40, "data.num_test_images": 20, "data.num_backgrounds": 30, "data.per_class": 2},
    ),
    "gaussian_mixture": lambda: registry.load("gaussian_mixture").get_config(
        "paper", batch_size=8, num_steps=16, **{"data.num_triplets": 64}
    ),
}


def _take(experiment, arm, config, data, shard, position=3, steps=2):
    return list(itertools.islice(experiment.arm(arm, config, data).batches(config.seed, shard)(position), steps))


@pytest.mark.parametrize("name", sorted(SMALL))
def test_rows_of_every_process_count_make_the_one_process_batch(name):
    experiment = registry.load(name)
    config = SMALL[name]()
    data = experiment.prepare(config)
    b = config.batch_size
    for arm in experiment.arms(config):
        whole = _take(experiment, arm, config, data, HostShard(0, 1, b))
        assert len(whole) == 2
        for count in (2, 4):
            parts = [_take(experiment, arm, config, data, HostShard(i, count, b)) for i in range(count)]
            for step in range(2):
                assert set(parts[0][step]) == set(whole[step])
                for key, want in whole[step].items():
                    assert np.shape(parts[0][step][key])[0] == b // count, (name, arm, key)
                    got = np.concatenate([parts[i][step][key] for i in range(count)])
                    np.testing.assert_array_equal(got, want, err_msg=f"{name} {arm} {key} P={count}")
        if isinstance(experiment, ImageExperiment):  # images cross to the device as uint8
            images = [v for v in whole[0].values() if np.ndim(v) == 4]
            assert images and all(v.dtype == np.uint8 for v in images), (name, arm)
