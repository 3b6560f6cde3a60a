"""Compare a closed-form kernel with the Monte Carlo estimate of paper Eq. 1, pair by pair.

:func:`compare_log_similarity` returns a :class:`KernelCheckReport` (worst pair, its z-score, how
many pairs fail); :func:`assert_log_similarity_close` raises :class:`KernelMismatchError` (an
``AssertionError``) with that report when a pair is off by more than ``num_se`` standard errors
(plus a small float tolerance). Pass ``estimate=`` to check several kernels (e.g. a correct one and
deliberately wrong ones) against one estimate.

Tolerance: pair ``p`` passes when ``|k_p - est_p| <= num_se * se_p + atol + rtol * |k_p|``. Both
``-inf`` (an impossible pair under both) passes; one infinite and the other not, or a NaN, fails.
With ``P`` pairs and a correct kernel the chance that the worst of ``P`` normal errors exceeds
``num_se = 5`` is about ``P * 5.7e-7``; the delta-method standard error needs a healthy effective
sample size (the report gives the smallest one; use an importance proposal when it is tiny).

Effective sample size. A pair whose estimate is finite but whose Kish effective sample size of the
joint term is below ``min_ess`` (default :data:`DEFAULT_MIN_ESS` = 50) fails as well, whatever its
z-score: with a handful of effective draws the delta-method standard error is itself a noisy
estimate (typically far too small or far too large), so a pass would mean nothing. Pairs that are
impossible under the estimate (``-inf``, ESS 0) are exempt; they are checked against the closed form
as infinities. Pass ``min_ess=0`` to switch the check off.

Example:
    >>> import jax, jax.numpy as jnp
    >>> from gensim_jax.kernels import categorical
    >>> from gensim_jax.testing import assert_log_similarity_close, categorical_model
    >>> pi = jnp.array([0.2, 0.3, 0.5])
    >>> kernel = lambda y1, y2: categorical.log_similarity(y1, y2, pi)
    >>> y1, y2 = jnp.array([0, 1, 2, 0]), jnp.array([0, 1, 2, 2])
    >>> report = assert_log_similarity_close(kernel, categorical_model(pi), (y1, y2), jax.random.key(0), num_samples=20000)
    >>> report.passed, report.num_pairs
    (True, 4)
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

import jax
import numpy as np

from gensim_jax.testing.estimate import LogSimilarityEstimate, estimate_log_similarity
from gensim_jax.testing.models import GenerativeModel, Proposal

__all__ = [
    "KernelCheckReport",
    "KernelMismatchError",
    "compare_log_similarity",
    "assert_log_similarity_close",
    "DEFAULT_MIN_ESS",
]

#: Smallest Kish effective sample size (joint term) a finite estimate needs for the check to count.
DEFAULT_MIN_ESS = 50.0


@dataclasses.dataclass(frozen=True)
class KernelCheckReport:
    """Result of comparing a closed form with a Monte Carlo estimate over ``num_pairs`` pairs.

    Attributes:
      passed: every pair within tolerance.
      num_pairs, num_failed: counts.
      worst_index: the pair with the largest ``|diff| / tolerance`` (the worst pair).
      worst_ratio: that ratio (``> 1`` fails; ``inf`` for an infinity mismatch or NaN).
      worst_z: ``|diff| / se`` of the worst pair.
      max_z: the largest ``|diff| / se`` over all pairs (finite pairs).
      worst_closed_form, worst_estimate, worst_stderr, worst_ess: numbers of the worst pair.
      worst_x1, worst_x2: the worst pair's inputs (numpy).
      min_ess: smallest effective sample size of the joint term over the pairs.
      min_ess_required: the threshold ``min_ess`` of the check.
      num_low_ess: pairs with a finite estimate and an effective sample size below it (they fail).
      low_ess_index: the one of them with the smallest effective sample size (``-1`` if none).
      num_samples, num_se: the estimate's sample count and the threshold.
      closed_form, estimate: the full ``(P,)`` arrays.
    """

    passed: bool
    num_pairs: int
    num_failed: int
    worst_index: int
    worst_ratio: float
    worst_z: float
    max_z: float
    worst_closed_form: float
    worst_estimate: float
    worst_stderr: float
    worst_ess: float
    worst_x1: Any
    worst_x2: Any
    min_ess: float
    num_samples: int
    num_se: float
    min_ess_required: float
    num_low_ess: int
    low_ess_index: int
    closed_form: np.ndarray = dataclasses.field(repr=False)
    estimate: LogSimilarityEstimate = dataclasses.field(repr=False)

    def __str__(self) -> str:
        head = "PASSED" if self.passed else f"FAILED on {self.num_failed} of {self.num_pairs} pairs"
        ess = ""
        if self.num_low_ess:
            i = self.low_ess_index
            ess = (
                f"effective sample size too small on {self.num_low_ess} of {self.num_pairs} pairs: pair #{i} has "
                f"ESS {float(self.estimate.ess[i]):.3g} of {self.num_samples} samples, below the minimum "
                f"{self.min_ess_required:.4g}, so its standard error is unreliable (use more samples or an importance "
                "Proposal; min_ess=0 switches this check off); "
            )
        return ess + (
            f"kernel check {head} (threshold {self.num_se} standard errors, {self.num_samples} samples); "
            f"worst pair #{self.worst_index}: closed form {self.worst_closed_form:.6g}, Monte Carlo "
            f"{self.worst_estimate:.6g} +- {self.worst_stderr:.3g} (z = {self.worst_z:.3g}, ESS "
            f"{self.worst_ess:.4g}); x1 = {_short(self.worst_x1)}, x2 = {_short(self.worst_x2)}; "
            f"max z over pairs {self.max_z:.3g}, min ESS {self.min_ess:.4g}"
        )


class KernelMismatchError(AssertionError):
    """A closed-form kernel disagrees with the Monte Carlo estimate; ``.report`` holds the details."""

    def __init__(self, report: KernelCheckReport):
        super().__init__(str(report))
        self.report = report


def _short(x) -> str:
    text = np.array2string(np.asarray(x), precision=4, threshold=12) if not isinstance(x, dict) else repr(x)
    return text if len(text) < 200 else text[:197] + "..."


def _pair(tree, i: int):
    leaves = jax.tree_util.tree_map(lambda a: np.asarray(a)[i], tree)
    return leaves


def compare_log_similarity(
    kernel_fn: Callable[[Any, Any], Any],
    estimate: LogSimilarityEstimate,
    inputs: tuple[Any, Any],
    *,
    num_se: float = 5.0,
    atol: float = 1e-6,
    rtol: float = 1e-5,
    min_ess: float = DEFAULT_MIN_ESS,
) -> KernelCheckReport:
    """Compare ``kernel_fn(x1, x2)`` with a ready :class:`LogSimilarityEstimate`, pair by pair (no raise).

    Args:
      kernel_fn: ``(x1, x2) -> (P,)`` closed-form log similarity of the pairs (elementwise).
      estimate: from :func:`~gensim_jax.testing.estimate_log_similarity` on the same ``inputs``.
      inputs: ``(x1, x2)``, pytrees with leading axis ``P``.
      num_se: number of standard errors allowed.
      atol, rtol: float tolerance added to ``num_se * se`` (``atol + rtol * |closed form|``).
      min_ess: smallest effective sample size for a finite estimate (see the module docstring).

    Returns:
      :class:`KernelCheckReport`.
    """
    if not isinstance(estimate, LogSimilarityEstimate):
        raise TypeError(f"estimate must be a LogSimilarityEstimate; got {type(estimate).__name__}")
    if not (isinstance(inputs, (tuple, list)) and len(inputs) == 2):
        raise ValueError("inputs must be a pair (x1, x2) of pytrees with a leading pair axis")
    if not num_se > 0:
        raise ValueError(f"num_se must be > 0; got {num_se!r}")
    if not min_ess >= 0:
        raise ValueError(f"min_ess must be >= 0; got {min_ess!r}")
    x1, x2 = inputs
    closed = np.asarray(kernel_fn(x1, x2), np.float64)
    est = estimate.log_similarity
    if closed.shape != est.shape:
        raise ValueError(f"kernel_fn(x1, x2) must return one value per pair, shape {est.shape}; got {closed.shape}")
    se = estimate.stderr
    with np.errstate(invalid="ignore"):
        both_neg_inf = np.isneginf(closed) & np.isneginf(est)
        diff = np.where(both_neg_inf, 0.0, np.abs(closed - est))
        tol = (
            num_se * np.where(np.isfinite(se), se, np.inf)
            + atol
            + rtol * np.where(np.isfinite(closed), np.abs(closed), 0)
        )
        finite = np.isfinite(diff)
        ratio = np.where(finite, diff / tol, np.inf)
        ratio = np.where(both_neg_inf, 0.0, ratio)
        z = np.where(finite & (se > 0), diff / np.where(se > 0, se, 1.0), np.where(diff > 0, np.inf, 0.0))
        z = np.where(both_neg_inf, 0.0, z)
    ess = np.asarray(estimate.ess, np.float64)
    low_ess = np.isfinite(est) & ~(ess >= min_ess)
    failed = ~(ratio <= 1.0) | low_ess
    worst = int(np.argmax(np.where(np.isnan(ratio), np.inf, ratio)))
    finite_z = z[np.isfinite(z)]
    return KernelCheckReport(
        passed=not bool(failed.any()),
        num_pairs=int(closed.size),
        num_failed=int(failed.sum()),
        worst_index=worst,
        worst_ratio=float(ratio[worst]),
        worst_z=float(z[worst]),
        max_z=float(finite_z.max()) if finite_z.size else float("inf"),
        worst_closed_form=float(closed[worst]),
        worst_estimate=float(est[worst]),
        worst_stderr=float(se[worst]),
        worst_ess=float(estimate.ess[worst]),
        worst_x1=_pair(x1, worst),
        worst_x2=_pair(x2, worst),
        min_ess=float(np.min(estimate.ess)),
        num_samples=int(estimate.num_samples),
        num_se=float(num_se),
        min_ess_required=float(min_ess),
        num_low_ess=int(low_ess.sum()),
        low_ess_index=int(np.argmin(np.where(low_ess, ess, np.inf))) if low_ess.any() else -1,
        closed_form=closed,
        estimate=estimate,
    )


def assert_log_similarity_close(
    kernel_fn: Callable[[Any, Any], Any],
    model: Optional[GenerativeModel],
    inputs: tuple[Any, Any],
    key: Optional[jax.Array] = None,
    *,
    num_samples: int = 100_000,
    num_se: float = 5.0,
    atol: float = 1e-6,
    rtol: float = 1e-5,
    proposal: Optional[Proposal] = None,
    chunk_size: Optional[int] = None,
    estimate: Optional[LogSimilarityEstimate] = None,
    min_ess: float = DEFAULT_MIN_ESS,
) -> KernelCheckReport:
    """Assert that a closed-form kernel matches the Monte Carlo estimate of paper Eq. 1 on every pair.

    Args:
      kernel_fn: ``(x1, x2) -> (P,)`` the closed form under test (log space, elementwise).
      model: the :class:`~gensim_jax.testing.GenerativeModel` the kernel claims to integrate.
      inputs: ``(x1, x2)``, pytrees with leading axis ``P`` (e.g. from
        :func:`~gensim_jax.testing.sample_pairs` or the strategies).
      key: ``jax.random`` key of the estimate.
      num_samples, proposal, chunk_size: passed to :func:`~gensim_jax.testing.estimate_log_similarity`.
      num_se, atol, rtol: tolerance, see the module docstring.
      min_ess: smallest effective sample size of a finite estimate (default 50); below it the pair
        fails with a message that says so (``0`` switches the check off).
      estimate: a ready estimate on the same ``inputs`` (``model`` and ``key`` are then not used).

    Returns:
      The :class:`KernelCheckReport` (when it passed).

    Raises:
      KernelMismatchError: some pair is out of tolerance or has too small an effective sample size;
        the message names the worst pair (and the pair with the smallest ESS).
    """
    if not (isinstance(inputs, (tuple, list)) and len(inputs) == 2):
        raise ValueError("inputs must be a pair (x1, x2) of pytrees with a leading pair axis")
    if estimate is None:
        if model is None or key is None:
            raise ValueError("pass model and key (or a ready estimate=)")
        estimate = estimate_log_similarity(
            model, inputs[0], inputs[1], key, num_samples, proposal=proposal, chunk_size=chunk_size
        )
    report = compare_log_similarity(kernel_fn, estimate, inputs, num_se=num_se, atol=atol, rtol=rtol, min_ess=min_ess)
    if not report.passed:
        raise KernelMismatchError(report)
    return report
