"""Heads shared by every encoder: the classifier, the projection MLP, and the common output interface.

Every model in :mod:`gensim_jax.models` is an :class:`Encoder`. Its ``__call__(x, train=False)``
returns a dict:

* ``"embedding"``: penultimate features ``(B, D)`` (after global average pooling for CNNs); this is
  the representation that contrastive and GenSim objectives compare;
* ``"logits"``: the classifier ``(B, num_classes)``, present when ``num_classes`` is not ``None``;
* ``"projection"``: the projection MLP applied to the embedding ``(B, P)``, present when
  ``projection_dims`` is not ``None`` (SimCLR-style objectives put their loss on it).

Outputs are float32 whatever the compute dtype. ``model.apply(variables, x, method="embed")``
returns only the embedding. The classifier's parameters always live under ``params["classifier"]``
and the projection head's under ``params["projector"]``, so they can be swapped generically with
:func:`extend_classifier` / :func:`replace_classifier`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from gensim_jax.models.layers import batch_norm, dense_kernel_init, torch_default_bias_init

Array = jax.Array
Dtype = Any


class ProjectionHead(nn.Module):
    """MLP projection head for contrastive objectives (SimCLR: Chen et al. 2020, Sec. 2.1).

    ``z = W_L relu(... relu(W_1 h + b_1) ...) + b_L``; with ``use_batchnorm`` each hidden layer is
    Dense -> BatchNorm -> ReLU (SimCLR v2 style), otherwise Dense -> ReLU.

    Attributes:
      features: output width of each layer, e.g. ``(2048, 128)`` for one hidden layer of 2048 and a
        128-d projection. Must be non-empty.
      use_batchnorm: BatchNorm after each hidden Dense layer.
      dtype: compute dtype; parameters are ``param_dtype``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> head = ProjectionHead((16, 4))
      >>> v = head.init(jax.random.key(0), jnp.ones((2, 8)))
      >>> head.apply(v, jnp.ones((2, 8))).shape
      (2, 4)
    """

    features: Sequence[int]
    use_batchnorm: bool = False
    dtype: Dtype | None = None
    param_dtype: Dtype = jnp.float32

    @nn.compact
    def __call__(self, h: Array, train: bool = False) -> Array:
        """Project ``h`` of shape ``(B, D)`` to ``(B, features[-1])``."""
        feats = tuple(self.features)
        if len(feats) == 0 or any(int(f) <= 0 for f in feats):
            raise ValueError(f"projection features must be a non-empty tuple of positive ints, got {feats}")
        for i, f in enumerate(feats[:-1]):
            h = nn.Dense(
                f,
                use_bias=not self.use_batchnorm,
                dtype=self.dtype,
                param_dtype=self.param_dtype,
                kernel_init=dense_kernel_init,
                name=f"dense_{i}",
            )(h)
            if self.use_batchnorm:
                h = batch_norm(train, name=f"bn_{i}", dtype=self.dtype, param_dtype=self.param_dtype)(h)
            h = nn.relu(h)
        return nn.Dense(
            feats[-1],
            dtype=self.dtype,
            param_dtype=self.param_dtype,
            kernel_init=dense_kernel_init,
            name=f"dense_{len(feats) - 1}",
        )(h)


class Encoder(nn.Module):
    """Base class of all encoders: the embedding / classifier / projection interface.

    Subclasses implement ``__call__(x, train=False)`` by computing the embedding and returning
    ``self.heads(embedding, train)``. They declare the fields ``num_classes``, ``projection_dims``,
    ``projection_batchnorm``, ``dtype`` and ``param_dtype``.
    """

    def heads(self, embedding: Array, train: bool) -> dict[str, Array]:
        """Apply the optional classifier and projection head to ``embedding`` ``(B, D)``.

        Returns the output dict described in the module docstring (all float32).
        """
        num_classes = getattr(self, "num_classes", None)
        proj = getattr(self, "projection_dims", None)
        out = {"embedding": embedding.astype(jnp.float32)}
        if num_classes is not None:
            if int(num_classes) <= 0:
                raise ValueError(f"num_classes must be positive or None, got {num_classes}")
            # a model with ``torch_init`` (LeNet-5) gives its classifier PyTorch's default bias as well
            bias_init = (
                torch_default_bias_init(embedding.shape[-1])
                if getattr(self, "torch_init", False)
                else nn.initializers.zeros
            )
            logits = nn.Dense(
                int(num_classes),
                dtype=self.dtype,
                param_dtype=self.param_dtype,
                kernel_init=dense_kernel_init,
                bias_init=bias_init,
                name="classifier",
            )(embedding)
            out["logits"] = logits.astype(jnp.float32)
        if proj is not None:
            z = ProjectionHead(
                tuple(proj),
                use_batchnorm=getattr(self, "projection_batchnorm", False),
                dtype=self.dtype,
                param_dtype=self.param_dtype,
                name="projector",
            )(embedding, train)
            out["projection"] = z.astype(jnp.float32)
        return out

    def embed(self, x: Array, train: bool = False) -> Array:
        """Penultimate features only: ``model.apply(variables, x, method="embed")`` -> ``(B, D)``."""
        return self(x, train=train)["embedding"]

    def example_input(self, batch_size: int = 1, minimal: bool = False) -> Array:
        """A zero input for ``model.init``: ``(batch_size, *input_shape)``.

        With ``minimal=True`` the smallest input the model accepts (``min_input_shape``): parameter
        shapes do not depend on the image size of the global-pooling CNNs, so this initialises
        the same parameters at a fraction of the cost.
        """
        shape = self.min_input_shape if minimal else self.input_shape
        return jnp.zeros((batch_size, *shape), jnp.float32)

    @property
    def input_shape(self) -> tuple[int, ...]:
        """Per-example input shape the model is usually run at (``(224, 224, 3)`` for CNNs)."""
        return (224, 224, 3)

    @property
    def min_input_shape(self) -> tuple[int, ...]:
        """Smallest per-example input shape the model accepts (``(32, 32, 3)`` for the CNNs)."""
        return (32, 32, 3)


def param_count(variables: Mapping[str, Any]) -> int:
    """Number of trainable parameters (the ``params`` collection; BatchNorm statistics excluded).

    Counts like ``sum(p.numel() for p in torch_model.parameters())``. Works on the abstract output
    of ``jax.eval_shape(model.init, ...)`` too.
    """
    params = variables["params"] if "params" in variables else variables
    return int(sum(int(x.size) for x in jax.tree.leaves(params)))


def _classifier_params(variables: Mapping[str, Any]) -> Mapping[str, Any]:
    try:
        return variables["params"]["classifier"]
    except (KeyError, TypeError) as err:
        raise ValueError("variables have no params['classifier']: the model was built with num_classes=None") from err


def _with_classifier(variables: Mapping[str, Any], kernel: Array, bias: Array) -> dict[str, Any]:
    params = dict(variables["params"])
    params["classifier"] = {"kernel": kernel, "bias": bias}
    out = dict(variables)
    out["params"] = params
    return out


def extend_classifier(variables: Mapping[str, Any], num_new: int, key: jax.Array) -> dict[str, Any]:
    """Append ``num_new`` freshly initialised classes to the classifier, keeping the old ones.

    This is the supervised fine-tuning protocol of paper Appendix L (after Sable-Meyer et al. 2021):
    11 new categories are added to CORnet-S's 1000-way ImageNet read-out. New weights are drawn
    like PyTorch's ``nn.Linear`` default (uniform on ``+-1/sqrt(D)``), new biases are zero. Build the
    model with ``num_classes=old + num_new`` to use the result (``model.clone(num_classes=...)``).

    Args:
      variables: model variables with ``params["classifier"]["kernel"]`` of shape ``(D, C)``.
      num_new: number of classes to add (> 0).
      key: ``jax.random`` key for the new weights.
    Returns:
      New variables (inputs untouched) whose classifier kernel is ``(D, C + num_new)``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> v = {"params": {"classifier": {"kernel": jnp.ones((4, 3)), "bias": jnp.zeros(3)}}}
      >>> extend_classifier(v, 2, jax.random.key(0))["params"]["classifier"]["kernel"].shape
      (4, 5)
    """
    if int(num_new) <= 0:
        raise ValueError(f"num_new must be positive, got {num_new}")
    head = _classifier_params(variables)
    kernel, bias = head["kernel"], head["bias"]
    d = kernel.shape[0]
    new_k = dense_kernel_init(key, (d, int(num_new)), kernel.dtype)
    return _with_classifier(
        variables,
        jnp.concatenate([kernel, new_k], axis=1),
        jnp.concatenate([bias, jnp.zeros((int(num_new),), bias.dtype)]),
    )


def replace_classifier(variables: Mapping[str, Any], num_classes: int, key: jax.Array) -> dict[str, Any]:
    """Replace the classifier by a freshly initialised ``num_classes``-way one (new task, new head).

    Args:
      variables: model variables with ``params["classifier"]["kernel"]`` of shape ``(D, C)``.
      num_classes: new number of classes (> 0).
      key: ``jax.random`` key.
    Returns:
      New variables with classifier kernel ``(D, num_classes)`` and zero bias; build the model with
      ``num_classes=num_classes`` to use them.
    """
    if int(num_classes) <= 0:
        raise ValueError(f"num_classes must be positive, got {num_classes}")
    head = _classifier_params(variables)
    d = head["kernel"].shape[0]
    dt = head["kernel"].dtype
    return _with_classifier(
        variables, dense_kernel_init(key, (d, int(num_classes)), dt), jnp.zeros((int(num_classes),), head["bias"].dtype)
    )
