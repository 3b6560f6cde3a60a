"""Every console entry point of gensim-jax: the only package that knows argparse.

===============================  ==========================================================
:mod:`~.main`                    ``gensim-jax`` itself: ``--version``, ``list-models``, ``info``, and the
                                 dispatcher of the commands below
:mod:`~.train`                   ``gensim-jax train EXPERIMENT`` (``python -m train`` in a checkout)
:mod:`~.plan`                    ``gensim-jax plan EXPERIMENT --topology T``
:mod:`~.eval`                    ``gensim-jax eval PROTOCOL`` (``python -m eval``), one module per protocol
:mod:`~.score`                   ``gensim-jax score``: the report card of an encoder
:mod:`~.runs`                    ``gensim-jax runs compare DIR...``
:mod:`~.prepare_imagenet`        ``gensim-jax prepare-imagenet``
:mod:`~.overrides`               the ``--set KEY=VALUE`` parser (values typed by :mod:`gensim_jax.config`)
:mod:`~.errors`                  one-line errors and ``--debug`` for all of them
:mod:`~.heartbeat`               a long native call (``plan``'s compile) with the elapsed time on stderr
                                 and a one-line exit on Ctrl-C / SIGTERM
===============================  ==========================================================

The commands sit on top of the library: they look experiments up by name
(:mod:`gensim_jax.experiments`) and pass what they found down; nothing below this package imports
it or argparse.  ``python -m gensim_jax.commands ARGS`` is ``gensim-jax ARGS``.
"""
