"""Class-centre similarity loss of thesis 003 and its combination with cross entropy.

For a class ``q`` with members ``T_q``::

    mu_q = (1/|T_q|) sum_{i in T_q} z_i                                   (003 Eq. 1)
    S_i = ||z_i - mu_q||^2                                                 (003 Eq. 2)
    L_avg,q = sum_{i in T_q} S_i                                           (003 Eq. 3)
    L_pair,q = sum_{i, j in T_q x T_q} ||z_i - z_j||^2 = 2 |T_q| L_avg,q    (003 Eqs. 7, 10)
    L_sim = sum_q L_avg,q                                                  (003 Eq. 11)
    L_total = L_crossentropy + lambda * L_sim                              (003 Eq. 12)

:func:`class_center_loss` is linear in the class sizes (one segment sum per class); a class with one
member contributes exactly 0 (value and gradient).

The thesis writes Eqs. 2-3 and 11 as sums of squared norms, but its text calls ``S_i`` a "Mean
Squared Error" and reports that L_sim "starts from 1e-5" (Sec. 4, discussion of Fig. 5). Both
readings are here (:func:`center_similarity_loss`, ``form``):

* ``"sum"``: Eq. 11 literally, ``sum_i ||z_i - mu_{y_i}||^2`` over the batch;
* ``"mean"``: the element mean ``(1 / (B D)) sum_i sum_d (z_id - mu_{y_i} d)^2`` over the ``B``
  valid examples and the ``D`` embedding dimensions, i.e. PyTorch's
  ``nn.MSELoss()(z, mu[y])`` (default ``reduction="mean"``); it is Eq. 11 divided by ``B D``.
"""

from __future__ import annotations

from typing import Optional

import jax
import jax.numpy as jnp

from gensim_jax import similarity as sim
from gensim_jax.losses._common import as_float, as_labels, as_mask, check_reduction, reduce

Array = jax.Array


def _class_index(labels: Array, num_classes: Optional[int]) -> tuple[Array, int]:
    """Labels as segment ids in ``[0, C)``; without ``num_classes``, rank them among the batch."""
    if num_classes is not None:
        if not isinstance(num_classes, int) or num_classes < 1:
            raise ValueError(f"num_classes must be a positive int, got {num_classes!r}")
        return labels.astype(jnp.int32), num_classes
    b = labels.shape[0]
    # position of the first example with the same label: a valid segment id in [0, B)
    first = jnp.argmax(labels[:, None] == labels[None, :], axis=1)
    return first.astype(jnp.int32), b


def class_center_loss(
    embeddings,
    labels,
    *,
    num_classes: Optional[int] = None,
    mask=None,
    reduction: str = "sum",
) -> Array:
    """L_sim = sum_q sum_{i in T_q} ||z_i - mu_q||^2 (thesis 003 Eqs. 1-3, 11).

    Args:
      embeddings: ``(B, D)``.  labels: ``(B,)`` integer labels; with ``num_classes`` they must lie in
        ``[0, num_classes)`` (labels outside are dropped by the segment sum, as in ``jax.ops``).
      num_classes: the number of classes ``C`` (static); if None the batch's own labels define the
        classes (cost ``O(B^2)`` for the label comparison, ``O(B D)`` for the centres either way).
      mask: optional ``(B,)`` validity: padded examples neither count in a centre nor add a term.
      reduction: "sum" (Eq. 11, the default), "mean" (over valid examples), or "none" (``(B,)`` the
        per-example ``S_i`` of Eq. 2).
    """
    check_reduction(reduction)
    z = as_float(embeddings, "embeddings", ndim=2)
    b = z.shape[0]
    labels = as_labels(labels, b)
    valid = as_mask(mask, b)
    seg, c = _class_index(labels, num_classes)
    w = valid.astype(z.dtype)
    sums = jax.ops.segment_sum(z * w[:, None], seg, num_segments=c)
    counts = jax.ops.segment_sum(w, seg, num_segments=c)
    centres = sums / jnp.maximum(counts, 1.0)[:, None]
    diff = z - centres[seg]
    values = jnp.sum(diff * diff, axis=1)
    return reduce(values, valid, reduction)


def class_pair_loss(embeddings, labels, *, mask=None, reduction: str = "sum") -> Array:
    """L_pair = sum_q sum_{(i, j) in T_q x T_q} ||z_i - z_j||^2 (thesis 003 Eq. 7), ``O(B^2 D)``.

    Equals ``2 |T_q| L_avg,q`` per class (Eq. 10).  "none" returns ``(B,)`` per-example sums
    ``sum_{j in T_{y_i}} ||z_i - z_j||^2``; "mean" divides the sum by the number of valid examples.
    """
    z = as_float(embeddings, "embeddings", ndim=2)
    b = z.shape[0]
    labels = as_labels(labels, b)
    valid = as_mask(mask, b)
    same = (labels[:, None] == labels[None, :]) & valid[:, None] & valid[None, :]
    d2 = sim.pairwise_squared_euclidean_distance(z)
    values = jnp.sum(jnp.where(same, d2, 0.0), axis=1)
    return reduce(values, valid, reduction)


#: The two readings of L_sim (module docstring): Eq. 11 literally, or the element mean ("MSE").
SIM_FORMS = ("sum", "mean")


def check_sim_form(form: str) -> None:
    """``ValueError`` unless ``form`` is one of :data:`SIM_FORMS`."""
    if form not in SIM_FORMS:
        raise ValueError(f"sim_reduction must be one of {SIM_FORMS}, got {form!r}")


def center_similarity_loss(
    embeddings,
    labels,
    *,
    num_classes: Optional[int] = None,
    mask=None,
    form: str = "sum",
) -> Array:
    """L_sim of thesis 003 in one of its two readings (Eqs. 1-3, 11; module docstring).

    ``form="sum"``: ``L_sim = sum_q sum_{i in T_q} ||z_i - mu_q||^2`` (Eq. 11 as written).
    ``form="mean"``: ``L_sim = (1 / (B D)) sum_i ||z_i - mu_{y_i}||^2`` with ``B`` the number of valid
    examples and ``D`` the embedding width -- the "Mean Squared Error" of the thesis's text, equal to
    PyTorch's ``nn.MSELoss()(z, mu[y])`` with the centres ``mu`` computed from the batch (Eq. 1).
    The mean form is the sum form divided by ``B D`` (0 for a batch without valid examples).

    Args:
      embeddings: ``(B, D)``.  labels: ``(B,)`` integers (see :func:`class_center_loss`).
      num_classes: static class count, or None (the batch's labels define the classes).
      mask: optional ``(B,)`` validity.  form: "sum" or "mean" (:data:`SIM_FORMS`).

    Returns:
      A scalar.

    Example:
      >>> import numpy as np
      >>> z = np.array([[0.0, 0.0], [2.0, 0.0], [5.0, 5.0]], np.float32)
      >>> float(center_similarity_loss(z, np.array([0, 0, 1])))   # mu_0 = (1, 0): 1 + 1 + 0
      2.0
      >>> round(float(center_similarity_loss(z, np.array([0, 0, 1]), form="mean")), 4)   # 2 / (3 x 2)
      0.3333
    """
    check_sim_form(form)
    z = as_float(embeddings, "embeddings", ndim=2)
    if form == "sum":
        return class_center_loss(z, labels, num_classes=num_classes, mask=mask, reduction="sum")
    per_example = class_center_loss(z, labels, num_classes=num_classes, mask=mask, reduction="mean")
    return per_example / z.shape[1]


def center_objective_terms(
    logits,
    labels,
    embeddings,
    *,
    num_classes: Optional[int] = None,
    mask=None,
    sim_reduction: str = "sum",
) -> tuple[Array, Array]:
    """``(L_crossentropy, L_sim)``: the two terms of thesis 003 Eq. 12, unweighted.

    ``L_crossentropy`` is the mean over valid examples of ``-log softmax(logits)_y`` (the thesis's
    ``L_CE``, Sec. 3.2); ``L_sim`` is :func:`center_similarity_loss` with ``form=sim_reduction``.
    Shapes as in :func:`center_objective`.
    """
    lg = as_float(logits, "logits", ndim=2)
    b = lg.shape[0]
    labels = as_labels(labels, b)
    check_sim_form(sim_reduction)
    z = as_float(embeddings, "embeddings", ndim=2)
    if z.shape[0] != b:
        raise ValueError(f"embeddings has {z.shape[0]} rows but logits has {b}")
    valid = as_mask(mask, b)
    ce = jax.nn.logsumexp(lg, axis=1) - jnp.take_along_axis(lg, labels[:, None].astype(jnp.int32), 1)[:, 0]
    ce = reduce(ce, valid, "mean")
    c = num_classes if num_classes is not None else lg.shape[1]
    l_sim = center_similarity_loss(z, labels, num_classes=c, mask=mask, form=sim_reduction)
    return ce, l_sim


def center_objective(
    logits,
    labels,
    embeddings,
    *,
    lam=0.5,
    num_classes: Optional[int] = None,
    mask=None,
    sim_reduction: str = "sum",
    ce_weight=1.0,
) -> Array:
    """L_total = ce_weight * CE + lambda * L_sim (thesis 003 Eq. 12; ``ce_weight`` = 1 there).

    The cross entropy is the mean over valid examples of ``-log softmax(logits)_y``; ``L_sim`` is
    :func:`center_similarity_loss`: with ``sim_reduction="sum"`` (default) the sum over classes of
    Eq. 11, exactly as the thesis writes it; with ``"mean"`` the element mean over batch and
    embedding width (the thesis's "MSE"). ``ce_weight=0`` is the thesis's Fig. 5 run ("the
    cross-entropy loss was set to 0 and the lambda was 1").

    Args:
      logits: ``(B, C)`` classifier outputs.  labels: ``(B,)`` in ``[0, C)``.
      embeddings: ``(B, D)`` the features the centre loss acts on.
      lam: lambda >= 0 (the thesis sweeps 0, 0.25, 0.5, 0.75, 10, 100).
      num_classes: static class count for the centres (defaults to ``C``).  mask: optional ``(B,)``.
      sim_reduction: "sum" or "mean" (:data:`SIM_FORMS`).
      ce_weight: weight >= 0 of the cross entropy (may be traced).
    """
    for name, value in (("lam", lam), ("ce_weight", ce_weight)):
        if isinstance(value, (int, float)) and value < 0:
            raise ValueError(f"{name} must be >= 0, got {value}")
    ce, l_sim = center_objective_terms(
        logits, labels, embeddings, num_classes=num_classes, mask=mask, sim_reduction=sim_reduction
    )
    return ce_weight * ce + lam * l_sim
