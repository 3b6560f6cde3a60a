"""``python -m tests.experiments._sigkill K ARGS...``: ``python -m train ARGS...``, SIGKILLed when it asks for batch ``K``.

The training loop is wrapped so that its data stream sends SIGKILL to this very process when the
loop requests the batch at stream position ``K`` (that is, right after step ``K`` and any
checkpoint save it started, which may still be in flight).  The kill is a real SIGKILL at a
deterministic step, without timing races on a loaded machine; everything else is the experiment
CLI unchanged (``train.__main__.main``).
"""

from __future__ import annotations

import os
import signal
import sys

import gensim_jax.training
import gensim_jax.training.loop


def main() -> None:
    kill_at, argv = int(sys.argv[1]), sys.argv[2:]
    original = gensim_jax.training.loop.train

    def train(state, objective, batches, **kwargs):
        def killing(position):
            for pos, batch in enumerate(batches(position), start=position):
                if pos >= kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)
                yield batch

        kwargs["prefetch"] = 0  # no look-ahead: position K is requested right after step K
        return original(state, objective, killing, **kwargs)

    # experiments import `train` from gensim_jax.training when the CLI imports them, i.e. after this
    gensim_jax.training.train = train
    gensim_jax.training.loop.train = train
    from gensim_jax.commands.train import main as cli

    sys.exit(cli(argv))


if __name__ == "__main__":
    main()
