"""Scaling with batch size: GenSim loss plus gradient and the Beta-Bernoulli table, B = 128..2048.

Same measurements as :mod:`bench.functions.losses` (``gensim_loss_grad``) and :mod:`bench.functions.kernels`
(``beta_bernoulli_table`` against the table-form PyTorch reference), at several batch sizes and
with fewer repeats, so that the growth of each side with ``B`` can be read off (both are
``O(B^2)`` in memory traffic and ``O(B^2 D)`` in arithmetic).
"""

from __future__ import annotations

from bench.functions.kernels import beta_bernoulli_case
from bench.functions.losses import gensim_case

SIZES = (128, 256, 512, 1024, 2048)


def run(quick: bool = False) -> list[dict]:
    sizes = (8,) if quick else SIZES

    def repeats(b):  # small sizes are cheap and noisier: more repeats
        return 1 if quick else (15 if b <= 512 else 5)

    out = []
    for b in sizes:
        line = gensim_case(b, repeats=repeats(b))
        line["bench"] = "scaling_gensim_loss_grad"
        out.append(line)
    for b in sizes:
        (line,) = beta_bernoulli_case(b, repeats=repeats(b), references=("table",))
        line["bench"] = "scaling_beta_bernoulli_table"
        out.append(line)
    return out


if __name__ == "__main__":
    from bench._harness import emit

    for line in run():
        emit(line)
