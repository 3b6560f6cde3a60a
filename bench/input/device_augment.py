"""Device augmentation throughput: the SimCLR presets inside a jit against the host's TensorFlow ops per core.

For each preset of :func:`gensim_jax.data.device_augment.simclr_preset` (ImageNet, quadrilaterals,
Geoclidean settings of the ``paper`` configs), a batch of ``uint8`` images at the load size goes
through :class:`~gensim_jax.data.device_augment.DeviceAugment` (two views) in one jitted call on
the default backend; the median seconds per batch give views per second (``ours_s``: seconds per
view). The reference, where TensorFlow is installed, is the host path:
:func:`gensim_jax.data.augment.simclr_augment` under ``tf.function``, one image at a time on one
core (what each tf.data worker does; ``reference_s``: seconds per view). On an accelerator the
target is 20,000 views/s (four times what one H100 consumes in bf16 ResNet-50 training, so the
augmentation costs at most a quarter of the step's time); on a CPU the line is a measurement
(``target`` null).

Usage::

    python -m bench.input.device_augment            # 224 px, batch 256 (accelerator) or 64 (CPU)
    python -m bench.input.device_augment --quick    # 64 px, batch 16
"""

from __future__ import annotations

import argparse
import time
from types import SimpleNamespace

import jax
import numpy as np

from bench._harness import emit

#: ``objectives.simclr`` of each experiment's ``paper`` config (crop scale, blur, grayscale, rotation).
PRESETS = {
    "imagenet": SimpleNamespace(crop_scale=(0.08, 1.0), blur_p=0.5, grayscale_p=0.2, rotation_deg=0.0),
    "quadrilaterals": SimpleNamespace(crop_scale=(0.08, 1.0), blur_p=0.5, grayscale_p=0.0, rotation_deg=45.0),
    "geoclidean": SimpleNamespace(crop_scale=(0.08, 1.0), blur_p=0.5, grayscale_p=0.0, rotation_deg=0.0),
}
TARGET_VIEWS_PER_S = 20_000


def _images(batch: int, size: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    base = rng.integers(0, 256, (batch, size // 8, size // 8, 3), dtype=np.uint8)
    return np.repeat(np.repeat(base, 8, axis=1), 8, axis=2)


def _host_views_per_s(preset: str, aug, images: np.ndarray, count: int) -> float | None:
    try:
        from gensim_jax.data import augment as host
        from gensim_jax.data import tf
    except ImportError:
        return None
    fn = tf.function(
        host.simclr_augment(
            aug.size,
            crop_scale=aug.crop_scale,
            blur_p=aug.blur_p,
            grayscale_p=aug.grayscale_p,
            rotation_deg=aug.rotation_deg,
            fill_value=aug.fill_value,
        )
    )
    fn(images[0], tf.constant([0, 0], tf.int64))  # trace
    t0 = time.perf_counter()
    for i in range(count):
        fn(images[i % len(images)], tf.constant([0, i + 1], tf.int64))
    return count / (time.perf_counter() - t0)


def measure(preset: str, size: int, batch: int, repeats: int, host_count: int) -> dict:
    from gensim_jax.data.device_augment import simclr_preset

    aug = simclr_preset(preset, size, PRESETS[preset])
    images = _images(batch, size)
    seeds = np.stack([np.full(batch, 7), np.arange(batch)], axis=1).astype(np.int32)
    fn = jax.jit(lambda x, s, off: aug({"image": x, "augment_seed": s.at[:, 1].add(off)}))
    x, s = jax.device_put(images), jax.device_put(seeds)
    t0 = time.perf_counter()
    jax.block_until_ready(fn(x, s, 0))
    compile_s = time.perf_counter() - t0
    times = []
    for r in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(x, s, (r + 1) * batch))
        times.append(time.perf_counter() - t0)
    per_batch = float(np.median(times))
    views = 2 * batch / per_batch
    host = _host_views_per_s(preset, aug, images, host_count)
    accel = jax.default_backend() != "cpu"
    return {
        "bench": "device_augment",
        "params": {"preset": preset, "size": size, "batch": batch, "views": 2, "backend": jax.default_backend()},
        "ours_s": round(per_batch / (2 * batch), 9),
        "reference": "host simclr_augment (TensorFlow, tf.function), one view at a time on one core",
        "reference_s": None if host is None else round(1.0 / host, 9),
        "ratio": None if host is None else round(host / views, 4),
        "target": TARGET_VIEWS_PER_S if accel else None,
        "met": bool(views >= TARGET_VIEWS_PER_S) if accel else True,
        "views_per_s": round(views, 1),
        "host_views_per_s_per_core": None if host is None else round(host, 1),
        "batch_s": round(per_batch, 6),
        "compile_s": round(compile_s, 2),
        "device": str(jax.devices()[0].device_kind),
    }


def run(quick: bool = False, size: int | None = None, batch: int | None = None):
    accel = jax.default_backend() != "cpu"
    size = size or (64 if quick else 224)
    batch = batch or (16 if quick else (256 if accel else 64))
    for preset in PRESETS:
        yield measure(preset, size, batch, repeats=3 if quick else 10, host_count=16 if quick else 64)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--size", type=int, default=None)
    parser.add_argument("--batch", type=int, default=None)
    args = parser.parse_args(argv)
    for line in run(quick=args.quick, size=args.size, batch=args.batch):
        emit(line)


if __name__ == "__main__":
    main()
