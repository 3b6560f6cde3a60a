"""Make docs/figures/quadrilaterals_vs_reference.png: our renders next to the authors' PNGs.

Run from the repository root, with the reference data beside it (``../shared``):
    python docs/figures/quadrilaterals_vs_reference.py
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from gensim_jax.stimuli import quadrilaterals as q  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
REF = REPO / ".." / "shared" / "reference" / "sable_meyer" / "stimuli_reference"
I_SCALE, J_ROT = 6, 2  # scale 1.125, rotation -15 degrees

fig, axes = plt.subplots(4, 11, figsize=(11, 4.6))
for k, name in enumerate(q.SHAPE_NAMES):
    ref = np.asarray(Image.open(REF / name / f"geom_{name}_reference_{I_SCALE}_{J_ROT}.png"))[..., 0] / 255.0
    ours = q.render_shape(name, 0, q.TRIAL_ROTATIONS_DEG[J_ROT - 1], q.TRIAL_SCALES[I_SCALE - 1])
    diff = np.abs(ours - ref)
    deviants = np.concatenate(
        [
            np.concatenate([q.render_shape(name, 1, size=112), q.render_shape(name, 2, size=112)], 1),
            np.concatenate([q.render_shape(name, 3, size=112), q.render_shape(name, 4, size=112)], 1),
        ],
        0,
    )
    for row, (img, vmax) in enumerate([(ref, 1), (ours, 1), (diff, 0.1), (deviants, 1)]):
        ax = axes[row, k]
        ax.imshow(img, cmap="gray", vmin=0, vmax=vmax, interpolation="nearest")
        ax.set_xticks([])
        ax.set_yticks([])
    axes[0, k].set_title(name, fontsize=8)
    axes[2, k].set_xlabel(f"mean {diff.mean():.1e}", fontsize=7)
for row, label in enumerate(["authors' PNG", "gensim-jax", "|diff| x10", "deviants 1-4"]):
    axes[row, 0].set_ylabel(label, fontsize=8)
fig.suptitle("Reference quadrilaterals at scale 1.125, rotation -15 deg (224 x 224)", fontsize=9)
fig.tight_layout()
fig.savefig(REPO / "docs" / "figures" / "quadrilaterals_vs_reference.png", dpi=72)
