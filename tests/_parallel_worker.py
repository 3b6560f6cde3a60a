"""Run in a subprocess with 8 simulated CPU devices: sharded steps vs the single-device step.

Prints one JSON object: for every (objective, layout) the largest absolute differences of the
per-step losses and of the final parameters / BatchNorm statistics from the single-device run,
plus facts about the layouts (how many parameter leaves FSDP split).  tests/test_parallel.py
starts it with ``XLA_FLAGS=--xla_force_host_platform_device_count=8`` set before jax is imported.
"""

import json
import os
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

jax.config.update("jax_default_matmul_precision", "highest")

from gensim_jax import parallel  # noqa: E402
from gensim_jax.training import BetaBernoulliTarget, GenSimRegression, NTXent, create_train_state, make_train_step  # noqa: E402
from tests.training._tiny import tiny_batch, tiny_model  # noqa: E402

STEPS, B = 2, 16


def max_diff(a, b) -> float:
    return max(
        float(np.max(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64))))
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b))
    )


def run_single(state, obj, batches):
    step = make_train_step(obj, donate=False)
    losses = []
    for b in batches:
        state, m = step(state, jax.device_put(b, jax.devices()[0]))
        losses.append(float(m["loss"]))
    return state, losses


def run_mesh(state, obj, batches, data, fsdp):
    mesh = parallel.make_mesh(data=data, fsdp=fsdp)
    use_fsdp = fsdp > 1
    host = jax.tree.map(np.asarray, state)  # fresh buffers: the sharded step donates its input state
    st = parallel.place_state(host, mesh, use_fsdp)
    split = sum(
        1
        for s in jax.tree.leaves(
            parallel.state_shardings(st, mesh, use_fsdp).params, is_leaf=lambda x: hasattr(x, "spec")
        )
        if "fsdp" in tuple(s.spec)
    )
    step = make_train_step(obj, mesh=mesh, state=st, fsdp=use_fsdp)
    losses = []
    for b in batches:
        gb = parallel.shard_batch(b, mesh)
        assert len(gb["x"].sharding.device_set) == 8
        st, m = step(st, gb)
        losses.append(float(m["loss"]))
    spread = len(jax.tree.leaves(st.params)[0].sharding.device_set)
    return st, losses, {"fsdp_split_leaves": split, "param_devices": spread}


def main():
    assert jax.device_count() == 8, jax.devices()
    parallel.FSDP_MIN_SIZE = 16  # let FSDP split the tiny model's matrices
    rng = np.random.default_rng(0)
    batches = [tiny_batch(rng, B) for _ in range(STEPS)]
    cases = {
        "gensim": (GenSimRegression(target=BetaBernoulliTarget(), input_key="x"), {}),
        "ntxent_bn": (NTXent(temperature=0.5), {"batchnorm": True}),
    }
    out = {}
    for name, (obj, model_kw) in cases.items():
        state = create_train_state(tiny_model(**model_kw), optax.sgd(0.05, momentum=0.9), 0)
        ref, ref_losses = run_single(state, obj, batches)
        layouts = {"1x8": (8, 1), "2x4": (2, 4)}
        for lname, (d, f) in layouts.items():
            st, losses, info = run_mesh(state, obj, batches, d, f)
            out[f"{name}/{lname}"] = {
                "loss": max_diff(losses, ref_losses),
                "params": max_diff(st.params, ref.params),
                "batch_stats": max_diff(st.batch_stats, ref.batch_stats) if ref.batch_stats else 0.0,
                "loss_value": ref_losses[-1],
                **info,
            }
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
