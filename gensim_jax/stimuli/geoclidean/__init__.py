"""Geoclidean stimuli (Hsu et al. 2022; paper Sec. 3.2, Appendices M, O, P).

Submodules (import them directly):

* ``grammar``: the program grammar of Appendix P (parser, typed AST, parse trees);
* ``concepts``: the 37 concept programs of Appendix O and the paper's 30/7 split;
* ``sampler``: the constraint sampler (program -> random scene of segments and circles);
* ``render``: the fast anti-aliased numpy renderer, framed like the benchmark images;
* ``dataset``: benchmark programs with their close/far negatives (package data), the seeded
  training-set stream of Appendix M, and ``.npz`` shard caching.

None of them imports TensorFlow; the TFRecord cache is :mod:`gensim_jax.data.geoclidean_records`.
"""
