"""Training objectives: one pure loss per objective over a shared forward pass.

An :class:`Objective` names the batch entries that go through the encoder (``input_keys``) and
turns the encoder's outputs into a loss (``loss(outputs, batch, rng)``).  The shared
:func:`forward` concatenates all inputs of a step into ONE model call, so BatchNorm sees one
(global) batch even for two-view and triplet objectives, and splits the outputs back per key.
``objective(state, batch, rng, params=..., train=...)`` composes both into the pure function
``(state, batch, rng) -> (loss, aux)`` that :func:`gensim_jax.training.step.train_step`
differentiates.

Objectives are ``flax.struct`` pytrees: configuration is static (hashable); arrays such as the
``C x C`` target tables, and the scalar hyperparameters a sweep varies (temperatures, the triplet
margin, the centre-loss weight ``lam``), are leaves.  They are passed to the jitted step as arguments, so a table is
transferred (and replicated over the mesh) once instead of being baked into the compiled program,
and every value of a traced hyperparameter runs the same compiled step.  A concrete hyperparameter
is checked when the objective is built (``ValueError`` for a temperature <= 0 or ``lam < 0``).

Batches are dicts of arrays with a leading batch axis; an optional boolean ``"mask"`` ``(B,)``
marks padded examples (False), which every loss ignores.

=================================  ============================================  =============================================  =======================
objective                          batch keys                                    loss                                           source
=================================  ============================================  =============================================  =======================
:class:`GenSimRegression`          input, metadata of the :class:`Target`        ``gensim_loss`` (similarity onto target)       paper Eq. 2, App. M, N
:class:`DistanceRegression`        input, ``"features"``                         ``distance_regression_loss``                   paper App. L
:class:`TripletObjective`          ``"anchor"``, ``"positive"``, ``"negative"``  ``triplet_loss``                               paper Eqs. A2, A3, H1
:class:`NTXent`                    ``"view1"``, ``"view2"``                      ``ntxent_loss`` / ``cross_view_infonce_loss``  SimCLR; paper App. L, M
:class:`SupCon`, :class:`Sincere`  input(s), ``"label"``                         ``supcon_loss`` / ``sincere_loss``             Khosla 2020; note 004
:class:`CrossEntropy`              input, ``"label"``                            softmax cross entropy on ``"logits"``          paper App. L
:class:`CenterLoss`                input, ``"label"``                            ``center_objective`` (CE + lambda L_sim)       thesis 003 Eq. 12
=================================  ============================================  =============================================  =======================
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

from gensim_jax import losses, similarity
from gensim_jax.kernels import beta_bernoulli, gaussian_mixture, hierarchy, targets
from gensim_jax.losses.center import check_sim_form

Array = jax.Array
Batch = Mapping[str, Array]

__all__ = [
    "forward",
    "Target",
    "BetaBernoulliTarget",
    "TableTarget",
    "GaussianMixtureTarget",
    "FunctionTarget",
    "Objective",
    "GenSimRegression",
    "DistanceRegression",
    "TripletObjective",
    "NTXent",
    "SupCon",
    "Sincere",
    "CrossEntropy",
    "CenterLoss",
]

_static = lambda default=None: flax.struct.field(pytree_node=False, default=default)  # noqa: E731


def _require(batch: Batch, key: str, who: str) -> Array:
    if key not in batch:
        raise ValueError(f"{who} needs batch[{key!r}]; the batch has keys {sorted(batch)}")
    return batch[key]


def forward(
    apply_fn: Callable, params, batch_stats, inputs: Mapping[str, Array], *, train: bool, rng: Optional[Array] = None
) -> tuple[dict[str, dict[str, Array]], Any]:
    """Run the encoder once on all ``inputs`` (concatenated) and split the outputs per input.

    Concatenating the views/triplet members into one call makes BatchNorm statistics those of the
    whole (global) step batch, as in a single-device run over all examples.

    Args:
      apply_fn: a Flax ``model.apply`` returning a dict of ``(n, ...)`` outputs.
      params, batch_stats: the model's collections (``batch_stats`` may be ``{}``).
      inputs: ordered ``{name: (B_k, ...)}``; all share the per-example shape.
      train: BatchNorm in train mode (batch statistics, updated running statistics).
      rng: optional key passed as the ``"dropout"`` RNG stream.

    Returns:
      ``({name: {output: (B_k, ...)}}, new_batch_stats)``; ``new_batch_stats`` is ``batch_stats``
      unchanged in eval mode or for models without BatchNorm.
    """
    names = list(inputs)
    if not names:
        raise ValueError("inputs must name at least one batch entry")
    xs = [jnp.asarray(inputs[k]) for k in names]
    for k, x in zip(names[1:], xs[1:]):
        if x.shape[1:] != xs[0].shape[1:]:
            raise ValueError(f"input {k!r} has per-example shape {x.shape[1:]} but {names[0]!r} has {xs[0].shape[1:]}")
    x = xs[0] if len(xs) == 1 else jnp.concatenate(xs, axis=0)
    variables = {"params": params}
    if batch_stats:
        variables["batch_stats"] = batch_stats
    rngs = None if rng is None else {"dropout": rng}
    if train and batch_stats:
        out, mutated = apply_fn(variables, x, train=True, mutable=["batch_stats"], rngs=rngs)
        new_stats = mutated["batch_stats"]
    else:
        out = apply_fn(variables, x, train=train, rngs=rngs)
        new_stats = batch_stats
    split, start = {}, 0
    for k, xi in zip(names, xs):
        n = xi.shape[0]
        split[k] = {name: v[start : start + n] for name, v in out.items()}
        start += n
    return split, new_stats


# --------------------------------------------------------------------------------------------
# Targets: B x B log generative similarity from the batch's metadata, inside the jitted step
# --------------------------------------------------------------------------------------------


class Target(flax.struct.PyTreeNode):
    """Base class: ``target(batch) -> (B, B)`` regression target from the batch's metadata.

    Subclasses implement :meth:`log_similarity`; the result is then transformed by ``method``
    (``"raw"``, ``"affine"`` or ``"standardized"``, see :mod:`gensim_jax.kernels.targets`) with the
    two constants ``stat_a, stat_b`` (``lo, hi`` or ``mean, std``) computed once at set-up by
    :meth:`with_transform` from a reference table (never from the batch).

    The base class declares the fields every target has (static, so a subclass only adds its own):
    ``key`` (the batch entry the target reads), ``method``, ``stat_a``, ``stat_b``.
    """

    key: str = _static("features")
    method: str = _static("raw")
    stat_a: float = _static(0.0)
    stat_b: float = _static(1.0)

    def log_similarity(self, batch: Batch) -> Array:  # pragma: no cover - abstract
        raise TypeError(f"{type(self).__name__} must implement log_similarity(batch)")

    def __call__(self, batch: Batch) -> Array:
        """The ``(B, B)`` target: ``transform(log s)`` (paper Eq. 2)."""
        log_s = self.log_similarity(batch)
        method = getattr(self, "method", "raw")
        if method == "raw":
            return targets.raw(log_s)
        if method == "affine":
            return targets.affine(log_s, self.stat_a, self.stat_b)
        return targets.standardized(log_s, self.stat_a, self.stat_b)

    def with_transform(self, method: str, reference_table) -> "Target":
        """Return a copy whose targets are ``method``-transformed with statistics of ``reference_table``.

        Args:
          method: one of ``kernels.targets.METHODS``.
          reference_table: finite array of ``log s`` values (e.g. the class table, or the kernel
            on a sample of training metadata); statistics are computed here, on the host.
        """
        if method not in targets.METHODS:
            raise ValueError(f"method must be one of {targets.METHODS}, got {method!r}")
        if method == "raw":
            return self.replace(method="raw", stat_a=0.0, stat_b=1.0)
        if method == "affine":
            a, b = targets.table_range(reference_table)
        else:
            a, b = targets.table_moments(reference_table)
        return self.replace(method=method, stat_a=float(a), stat_b=float(b))


class BetaBernoulliTarget(Target):
    """Beta-Bernoulli log similarity of binary feature vectors ``batch[key]`` ``(B, F)`` (paper Eq. I3).

    ``limit=True`` uses the ``alpha = beta -> 0`` form ``-||f_i - f_j||^2`` (paper Eq. I10 without
    scale and offset), the quadrilateral kernel.
    """

    alpha: float = _static(1.0)
    beta: float = _static(1.0)
    limit: bool = _static(False)

    def log_similarity(self, batch: Batch) -> Array:
        """``(B, B)`` matrix of Eq. I3 (or I10) over the batch's feature rows."""
        f = jnp.asarray(_require(batch, self.key, "BetaBernoulliTarget"), jnp.float32)
        if self.limit:
            return beta_bernoulli.pairwise_limit_log_similarity(f, f)
        return beta_bernoulli.pairwise_log_similarity(f, f, self.alpha, self.beta)


class TableTarget(Target):
    """Targets gathered from a precomputed ``(C, C)`` table by integer ids ``batch[key]`` ``(B,)``.

    Serves every kernel that depends on a discrete latent only: the hierarchy kernel over class
    labels (paper Eq. 4; ``hierarchy.log_similarity_table``), the tree kernel over program ids
    (paper App. M; ``trees.gram_log_table``) and the class-identity kernel (``categorical``).  The
    table must be finite (floor ``-inf`` entries first).
    """

    table: Array = None
    key: str = _static("label")

    @classmethod
    def create(cls, table, key: str = "label", method: str = "raw") -> "TableTarget":
        """Validate ``table`` (2-D, square, finite) and build the target; ``method`` statistics come from the table."""
        t = np.asarray(table, np.float32)
        if t.ndim != 2 or t.shape[0] != t.shape[1]:
            raise ValueError(f"table must be square (C, C), got shape {t.shape}")
        if not np.all(np.isfinite(t)):
            raise ValueError(f"table must be finite; {int(np.sum(~np.isfinite(t)))} of {t.size} entries are not")
        out = cls(table=jnp.asarray(t), key=key)
        return out.with_transform(method, t)

    def log_similarity(self, batch: Batch) -> Array:
        """``table[ids_i, ids_j]`` via ``hierarchy.gather_log_similarity``."""
        ids = jnp.asarray(_require(batch, self.key, "TableTarget"))
        return hierarchy.gather_log_similarity(self.table, ids.astype(jnp.int32))


class GaussianMixtureTarget(Target):
    """Gaussian-mixture log similarity of the points ``batch[key]`` ``(B, D)`` (paper Eq. H2)."""

    mixture: gaussian_mixture.GaussianMixture = None
    key: str = _static("x")

    def log_similarity(self, batch: Batch) -> Array:
        """``(B, B)`` matrix of Eq. H2."""
        x = jnp.asarray(_require(batch, self.key, "GaussianMixtureTarget"), jnp.float32)
        return gaussian_mixture.pairwise_log_similarity(x, x, self.mixture)


class FunctionTarget(Target):
    """Any pairwise log kernel as a target: ``fn(x, x)`` on the batch's metadata ``x = batch[key]`` (paper Eq. 2).

    ``fn(a (Ba, ...), b (Bb, ...)) -> (Ba, Bb)`` log generative similarities, pure and jittable (e.g.
    a kernel of :mod:`gensim_jax.kernels`, or a fork's own closed form checked with
    :mod:`gensim_jax.testing`). ``fn`` is a static field: one compiled step per function.

    Example:
      >>> import jax.numpy as jnp
      >>> t = FunctionTarget(fn=lambda a, b: -jnp.sum((a[:, None] - b[None]) ** 2, -1), key="counts")
      >>> t({"counts": jnp.array([[0.0], [2.0]])}).tolist()
      [[-0.0, -4.0], [-4.0, -0.0]]
    """

    fn: Callable = _static(None)

    def log_similarity(self, batch: Batch) -> Array:
        """``(B, B)``: ``fn`` over the batch's ``key`` rows."""
        if self.fn is None:
            raise ValueError("FunctionTarget needs fn(a, b) -> (Ba, Bb) log similarities")
        x = jnp.asarray(_require(batch, self.key, "FunctionTarget"))
        out = self.fn(x, x)
        if jnp.shape(out) != (x.shape[0], x.shape[0]):
            raise ValueError(f"FunctionTarget.fn must return ({x.shape[0]}, {x.shape[0]}), got {jnp.shape(out)}")
        return out


# --------------------------------------------------------------------------------------------
# Objectives
# --------------------------------------------------------------------------------------------


def _check_hyperparameters(obj) -> None:
    """``ValueError`` for a concrete temperature <= 0, margin < 0 or ``lam`` < 0 (traced values pass)."""
    for name, bad, rule in (("temperature", lambda v: not v > 0, "> 0"), ("lam", lambda v: v < 0, ">= 0")):
        value = getattr(obj, name, None)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and bad(value):
            raise ValueError(f"{type(obj).__name__}.{name} must be {rule}, got {value}")


class Objective(flax.struct.PyTreeNode):
    """Base class of all objectives.

    Subclasses define ``input_keys`` (the batch entries run through the encoder, in order) and
    ``loss(outputs, batch, rng) -> (loss, metrics)`` where ``outputs[key]`` is the model's output
    dict for ``batch[key]``.  Calling the objective runs :func:`forward` and the loss.
    """

    def __post_init__(self):
        _check_hyperparameters(self)

    @property
    def input_keys(self) -> tuple[str, ...]:  # pragma: no cover - abstract
        raise TypeError(f"{type(self).__name__} must define input_keys")

    def loss(self, outputs: Mapping[str, Mapping[str, Array]], batch: Batch, rng: Array):  # pragma: no cover
        raise TypeError(f"{type(self).__name__} must implement loss(outputs, batch, rng)")

    def __call__(self, state, batch: Batch, rng: Array, *, params=None, train: bool = False):
        """The pure objective ``(state, batch, rng) -> (loss, aux)``.

        Args:
          state: a :class:`~gensim_jax.training.state.TrainState` (its ``apply_fn``, ``params``,
            ``batch_stats``).
          batch: dict of ``(B, ...)`` arrays.
          rng: typed key for stochastic layers / losses.
          params: parameters to use instead of ``state.params`` (the argument being differentiated).
          train: BatchNorm in train mode.

        Returns:
          ``(loss, {"metrics": dict of scalars, "batch_stats": new statistics})``.
        """
        params = state.params if params is None else params
        inputs = {k: _require(batch, k, type(self).__name__) for k in self.input_keys}
        outputs, new_stats = forward(state.apply_fn, params, state.batch_stats, inputs, train=train, rng=rng)
        loss, metrics = self.loss(outputs, batch, rng)
        return loss, {"metrics": metrics, "batch_stats": new_stats}


def _output(outputs: Mapping[str, Array], name: str, who: str) -> Array:
    if name not in outputs:
        raise ValueError(
            f"{who} reads model output {name!r}, but the model returns {sorted(outputs)}; "
            "configure the model (num_classes / projection_dims) or the objective's output"
        )
    return outputs[name]


def _mask(batch: Batch, copies: int = 1):
    m = batch.get("mask")
    if m is None:
        return None
    m = jnp.asarray(m, bool)
    return m if copies == 1 else jnp.concatenate([m] * copies)


class GenSimRegression(Objective):
    """GenSim over all ``B (B - 1)`` pairs of the batch (paper Eq. 2; Appendices M, N).

    ``loss = mean_{i != j} (sim(z_i, z_j) / temperature - T_ij)^2`` with ``T = target(batch)``
    computed inside the step from the batch's metadata.

    Attributes:
      target: a :class:`Target` (Beta-Bernoulli features, hierarchy / tree-kernel table, mixture).
      input_key: batch entry fed to the encoder ("image", or "x" for vectors).
      output: model output compared ("embedding" or "projection").
      similarity: name of :mod:`gensim_jax.similarity` ("cosine" in the paper).
      temperature, exclude_diagonal: as in :func:`gensim_jax.losses.gensim_loss`.
    """

    target: Target = None
    input_key: str = _static("image")
    output: str = _static("embedding")
    similarity: str = _static("cosine")
    temperature: float = 1.0  # traced: a sweep over it compiles once
    exclude_diagonal: bool = _static(True)

    @property
    def input_keys(self) -> tuple[str, ...]:
        return (self.input_key,)

    def regression_pairs(self, outputs, batch) -> tuple[Array, Array]:
        """``(sim(z_i, z_j) / temperature, T_ij)``: the two ``(B, B)`` matrices the loss compares (Eq. 2)."""
        z = _output(outputs[self.input_key], self.output, "GenSimRegression")
        s = similarity.similarity_fn(self.similarity, pairwise=True)(z) / self.temperature
        return s, self.target(batch)

    def loss(self, outputs, batch, rng):
        if not isinstance(self.target, Target):
            raise ValueError(f"GenSimRegression needs a Target (e.g. TableTarget.create(table)), got {self.target!r}")
        z = _output(outputs[self.input_key], self.output, "GenSimRegression")
        t = jax.lax.stop_gradient(self.target(batch))
        loss = losses.gensim_loss(
            z,
            t,
            similarity=self.similarity,
            temperature=self.temperature,
            mask=_mask(batch),
            exclude_diagonal=self.exclude_diagonal,
        )
        return loss, {}


class DistanceRegression(Objective):
    """Embedding distances regressed onto feature distances over all pairs (paper Appendix L).

    ``loss = mean_{i != j} (d(z_i, z_j) - d_f(f_i, f_j))^2``, ``f = batch[feature_key]``.
    ``exclude_diagonal=False`` reproduces the authors' ``cdist`` + MSE normalisation.
    """

    input_key: str = _static("image")
    feature_key: str = _static("features")
    output: str = _static("embedding")
    embedding_distance: str = _static("euclidean")
    feature_distance: str = _static("euclidean")
    exclude_diagonal: bool = _static(True)

    @property
    def input_keys(self) -> tuple[str, ...]:
        return (self.input_key,)

    def regression_pairs(self, outputs, batch) -> tuple[Array, Array]:
        """``(d(z_i, z_j), d_f(f_i, f_j))``: the two ``(B, B)`` matrices the loss compares (App. L)."""
        z = _output(outputs[self.input_key], self.output, "DistanceRegression")
        f = jnp.asarray(_require(batch, self.feature_key, "DistanceRegression"), jnp.float32)
        return (
            similarity.distance_fn(self.embedding_distance, pairwise=True)(z),
            similarity.distance_fn(self.feature_distance, pairwise=True)(f),
        )

    def loss(self, outputs, batch, rng):
        z = _output(outputs[self.input_key], self.output, "DistanceRegression")
        f = jnp.asarray(_require(batch, self.feature_key, "DistanceRegression"), jnp.float32)
        loss = losses.distance_regression_loss(
            z,
            f,
            embedding_distance=self.embedding_distance,
            feature_distance=self.feature_distance,
            mask=_mask(batch),
            exclude_diagonal=self.exclude_diagonal,
        )
        return loss, {}


class TripletObjective(Objective):
    """Triplet loss ``l(d(a, p) - d(a, n))`` (paper Eqs. A2, A3, H1).

    GenSim by Monte Carlo: the batch holds triplets drawn from the generative model by Eq. A3
    (``kernels.monte_carlo.sample_triplets``); the class-triplet baseline is the same objective on
    triplets drawn with ``theta = class`` (``sample_class_triplets``).  The three members run
    through the encoder in one call.

    Attributes:
      form: "softplus" (Sohn 2016, paper App. B), "quadratic" (Eq. H1), "linear" or "hinge".
      distance: a distance name of :mod:`gensim_jax.similarity`.  margin: for "hinge".
      output: model output compared.
    """

    form: str = _static("softplus")
    distance: str = _static("euclidean")
    margin: float = 1.0  # traced
    output: str = _static("embedding")

    @property
    def input_keys(self) -> tuple[str, ...]:
        return ("anchor", "positive", "negative")

    def loss(self, outputs, batch, rng):
        a, p, n = (_output(outputs[k], self.output, "TripletObjective") for k in self.input_keys)
        loss = losses.triplet_loss(
            a, p, n, distance=self.distance, form=self.form, margin=self.margin, mask=_mask(batch)
        )
        return loss, {}


class NTXent(Objective):
    """SimCLR on two views ``batch["view1"], batch["view2"]`` (Chen et al. 2020 Eq. 1).

    ``variant="ntxent"`` is :func:`~gensim_jax.losses.ntxent_loss` (2N anchors); ``"cross_view"``
    is the one-directional form printed in the paper's Appendices L and M
    (:func:`~gensim_jax.losses.cross_view_infonce_loss`).
    """

    temperature: float = 0.5  # traced
    similarity: str = _static("cosine")
    variant: str = _static("ntxent")
    output: str = _static("projection")

    @property
    def input_keys(self) -> tuple[str, ...]:
        return ("view1", "view2")

    def loss(self, outputs, batch, rng):
        v1 = _output(outputs["view1"], self.output, "NTXent")
        v2 = _output(outputs["view2"], self.output, "NTXent")
        if self.variant == "ntxent":
            fn = losses.ntxent_loss
        elif self.variant == "cross_view":
            fn = losses.cross_view_infonce_loss
        else:
            raise ValueError(f"variant must be 'ntxent' or 'cross_view', got {self.variant!r}")
        loss = fn(v1, v2, temperature=self.temperature, similarity=self.similarity, mask=_mask(batch))
        return loss, {}


class _LabelContrastive(Objective):
    input_names: tuple = _static(("image",))
    label_key: str = _static("label")
    temperature: float = 0.1  # traced
    similarity: str = _static("cosine")
    output: str = _static("projection")

    @property
    def input_keys(self) -> tuple[str, ...]:
        return tuple(self.input_names)

    def _embeddings_and_labels(self, outputs, batch):
        who = type(self).__name__
        z = jnp.concatenate([_output(outputs[k], self.output, who) for k in self.input_keys], axis=0)
        y = jnp.asarray(_require(batch, self.label_key, who))
        copies = len(self.input_keys)
        return z, jnp.concatenate([y] * copies), _mask(batch, copies)


class SupCon(_LabelContrastive):
    """Supervised contrastive loss (Khosla et al. 2020, L_out) on labelled examples.

    ``input_names=("image",)`` for one view per example, ``("view1", "view2")`` for two views that
    share ``batch["label"]`` (the views are stacked along the batch axis, as in SupCon).
    """

    def loss(self, outputs, batch, rng):
        z, y, m = self._embeddings_and_labels(outputs, batch)
        loss = losses.supcon_loss(z, y, temperature=self.temperature, similarity=self.similarity, mask=m)
        return loss, {}


class Sincere(_LabelContrastive):
    """SINCERE (note 004; Feeney and Hughes 2024): SupCon without same-class negatives."""

    average: str = _static("anchor")

    def loss(self, outputs, batch, rng):
        z, y, m = self._embeddings_and_labels(outputs, batch)
        loss = losses.sincere_loss(
            z, y, temperature=self.temperature, similarity=self.similarity, average=self.average, mask=m
        )
        return loss, {}


def _accuracy(logits: Array, labels: Array, mask) -> Array:
    correct = (jnp.argmax(logits, axis=-1) == labels).astype(jnp.float32)
    if mask is None:
        return jnp.mean(correct)
    w = mask.astype(jnp.float32)
    return jnp.sum(correct * w) / jnp.maximum(jnp.sum(w), 1.0)


class CrossEntropy(Objective):
    """Supervised softmax cross entropy on the model's ``"logits"`` (paper App. L).

    For the Appendix L protocol give the model a new head first
    (``models.extend_classifier`` / ``models.replace_classifier``); this objective then trains all
    parameters (or use an optax mask to train the head only).
    """

    input_key: str = _static("image")
    label_key: str = _static("label")

    @property
    def input_keys(self) -> tuple[str, ...]:
        return (self.input_key,)

    def loss(self, outputs, batch, rng):
        logits = _output(outputs[self.input_key], "logits", "CrossEntropy")
        y = jnp.asarray(_require(batch, self.label_key, "CrossEntropy")).astype(jnp.int32)
        m = _mask(batch)
        ce = jax.nn.logsumexp(logits, axis=-1) - jnp.take_along_axis(logits, y[:, None], axis=-1)[:, 0]
        if m is None:
            loss = jnp.mean(ce)
        else:
            w = m.astype(ce.dtype)
            loss = jnp.sum(ce * w) / jnp.maximum(jnp.sum(w), 1.0)
        return loss, {"accuracy": _accuracy(logits, y, m)}


class CenterLoss(Objective):
    """``ce_weight`` times cross entropy plus ``lam`` times the class-centre loss (thesis 003 Eq. 12).

    Attributes:
      lam: lambda >= 0.  ce_weight: weight >= 0 of the cross entropy (1 in Eq. 12; 0 for the
        thesis's Fig. 5 run). Both are traced leaves: one compile serves a whole grid.
      num_classes: static class count for the centres (default: the logits' width).
      output: the output the centre loss acts on ("embedding", the 84-d LeNet features).
      sim_reduction: "sum" (Eq. 11 as written) or "mean" (element mean over batch and embedding
        width, the thesis's "MSE"); see :func:`gensim_jax.losses.center_similarity_loss`.

    Metrics: ``accuracy``, and the two unweighted terms ``ce`` and ``l_sim``.
    """

    lam: float = 0.5  # traced: one compile serves a whole lambda grid
    ce_weight: float = 1.0  # traced as well
    num_classes: Optional[int] = _static(None)
    input_key: str = _static("image")
    label_key: str = _static("label")
    output: str = _static("embedding")
    sim_reduction: str = _static("sum")

    def __post_init__(self):
        super().__post_init__()
        check_sim_form(self.sim_reduction)
        w = self.ce_weight
        if isinstance(w, (int, float)) and not isinstance(w, bool) and not w >= 0:
            raise ValueError(f"CenterLoss.ce_weight must be >= 0, got {w}")

    @property
    def input_keys(self) -> tuple[str, ...]:
        return (self.input_key,)

    def loss(self, outputs, batch, rng):
        out = outputs[self.input_key]
        logits = _output(out, "logits", "CenterLoss")
        z = _output(out, self.output, "CenterLoss")
        y = jnp.asarray(_require(batch, self.label_key, "CenterLoss")).astype(jnp.int32)
        m = _mask(batch)
        ce, l_sim = losses.center_objective_terms(
            logits, y, z, num_classes=self.num_classes, mask=m, sim_reduction=self.sim_reduction
        )
        loss = self.ce_weight * ce + self.lam * l_sim  # Eq. 12 (with ce_weight = 1)
        return loss, {"accuracy": _accuracy(logits, y, m), "ce": ce, "l_sim": l_sim}
