"""Nested configs: frozen dataclasses whose fields may be sections (frozen dataclasses themselves).

An experiment's ``Config`` (a :class:`~gensim_jax.training.experiment.TrainConfig`) keeps the run-level
fields at its top (``seed``, ``num_runs``, ``num_steps``, ``batch_size``, mesh, logging) and groups
the rest in sections: ``optim`` (:class:`~gensim_jax.training.optim.OptimConfig`), ``data``,
``model``, ``objectives.<arm>`` (one :class:`ArmConfig` per objective) and ``eval``.  A field is
named by its dotted path (``optim.learning_rate``, ``objectives.simclr.temperature``), on the
command line (``--set objectives.simclr.temperature=0.2``) as in code::

    >>> import dataclasses
    >>> @dataclasses.dataclass(frozen=True)
    ... class Head:
    ...     dims: tuple = (128, 64)
    >>> @dataclasses.dataclass(frozen=True)
    ... class C:
    ...     seed: int = 0
    ...     head: Head = Head()
    >>> c = with_overrides(C(), {"seed": 3, "head.dims": [32, 8]})
    >>> c.head.dims, flatten(c)
    ((32, 8), {'seed': 3, 'head.dims': (32, 8)})
    >>> from_dict(C, {"head": {"dims": [16]}}) == C(head=Head(dims=(16,)))
    True

:func:`with_overrides` is the one way to derive a config from another (``CONFIGS`` variants, ``--set``,
:meth:`~gensim_jax.training.experiment.Experiment.get_config`); :func:`from_dict` reads a recorded
(nested, JSON) config back.  JSON lists become tuples (configs are frozen and hashable).
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from typing import Any, Mapping, Optional

__all__ = [
    "ArmConfig",
    "close_keys",
    "unknown_key_hint",
    "field_paths",
    "flatten",
    "from_dict",
    "is_section",
    "section_of",
    "with_overrides",
]


@dataclasses.dataclass(frozen=True)
class ArmConfig:
    """Settings of one trained objective (``objectives.<arm>``); experiments derive their arms' sections.

    Attributes:
      learning_rate: the arm's peak learning rate; ``None`` uses ``optim.learning_rate``.
    """

    learning_rate: Optional[float] = None


def is_section(value) -> bool:
    """Whether ``value`` is a section: a dataclass instance (not a dataclass type)."""
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _default(field: dataclasses.Field):
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return dataclasses.MISSING


def _hints(cls) -> dict:
    try:
        return typing.get_type_hints(cls)
    except Exception:  # an annotation naming something the module does not define
        return {}


def field_paths(config_cls, prefix: str = "") -> dict:
    """``{dotted name: annotation}`` of every leaf field of ``config_cls``, sections flattened in order.

    A field is a section when its default is a dataclass instance (the section's class is the
    default's, so a ``Config`` may narrow a section by its default) or its annotation is a dataclass.
    When an annotation cannot be resolved, the type of the field's default stands in for it.
    """
    if not dataclasses.is_dataclass(config_cls):
        raise TypeError(f"Config must be a dataclass, got {config_cls!r}")
    cls = config_cls if isinstance(config_cls, type) else type(config_cls)
    hints = _hints(cls)
    out: dict = {}
    for f in dataclasses.fields(cls):
        name = prefix + f.name
        default = _default(f)
        tp = hints.get(f.name)
        if is_section(default):
            out.update(field_paths(type(default), name + "."))
        elif isinstance(tp, type) and dataclasses.is_dataclass(tp):
            out.update(field_paths(tp, name + "."))
        elif tp is not None:
            out[name] = tp
        elif default is not dataclasses.MISSING and default is not None:
            out[name] = type(default)
        else:
            out[name] = Any
    return out


def flatten(config, prefix: str = "") -> dict:
    """``{dotted name: value}`` of a config's leaves (a dataclass instance or a nested dict)."""
    items = (
        ((f.name, getattr(config, f.name)) for f in dataclasses.fields(config))
        if is_section(config)
        else config.items()
    )
    out: dict = {}
    for k, v in items:
        if is_section(v) or (isinstance(v, Mapping) and not is_section(config)):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[prefix + k] = v
    return out


def _freeze(value):
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def section_of(config, path: str):
    """The section (or value) at dotted ``path`` of ``config`` (``section_of(c, "objectives.simclr")``)."""
    value = config
    for part in path.split("."):
        value = getattr(value, part)
    return value


def _sections(config, prefix: str = "") -> list:
    out = []
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if is_section(value):
            out.append(prefix + f.name)
            out.extend(_sections(value, f"{prefix}{f.name}."))
    return out


def _initials(name: str) -> str:
    return "".join(w[:1] for w in name.split("_") if w)


def close_keys(key: str, known, n: int = 3) -> list:
    """Up to ``n`` dotted names of ``known`` close to ``key``: the same last name in another section
    (``image_size`` -> ``data.image_size``), in the same section a close last name, one it begins or
    whose initials it is (``optim.lr`` -> ``optim.learning_rate``), or close as a whole.

    Example:
      >>> close_keys("optim.lr", ["seed", "optim.learning_rate", "optim.momentum", "data.image_size"])
      ['optim.learning_rate']
      >>> close_keys("image_size", ["seed", "batch_size", "data.image_size"])
      ['data.image_size', 'batch_size']
    """
    known = list(known)
    section, _, leaf = key.rpartition(".")
    same = [k for k in known if k.rpartition(".")[0] == section]
    by_leaf = {k.rpartition(".")[2]: k for k in same}
    out = [k for k in known if k.rpartition(".")[2] == leaf]  # the name in another section
    out += [by_leaf[m] for m in difflib.get_close_matches(leaf, list(by_leaf), n=n)]
    out += [k for name, k in by_leaf.items() if leaf and (name.startswith(leaf) or _initials(name) == leaf)]
    out += difflib.get_close_matches(key, known, n=n)
    return list(dict.fromkeys(out))[:n]


def unknown_key_hint(key: str, known) -> str:
    """What an error about the unknown field ``key`` adds: the first fields of a section given as a field,
    else `` (did you mean A, B?)`` with at most three :func:`close_keys`, else the top-level names (a section
    as ``name.*``); never every field.

    Example:
      >>> unknown_key_hint("optim.lr", ["seed", "optim.learning_rate", "data.image_size"])
      ' (did you mean optim.learning_rate?)'
      >>> unknown_key_hint("zzz", ["seed", "optim.learning_rate", "optim.momentum", "data.image_size"])
      ' (no field is close; the top-level names: seed, optim.*, data.*)'
      >>> unknown_key_hint("optim", ["seed", "optim.learning_rate", "optim.momentum"])
      ' (optim is a section; set its fields: optim.learning_rate, optim.momentum)'
    """
    known = list(known)
    inside = [k for k in known if k.startswith(key + ".")]
    if inside:
        more = ", ..." if len(inside) > 3 else ""
        return f" ({key} is a section; set its fields: {', '.join(inside[:3])}{more})"
    close = close_keys(key, known)
    if close:
        return f" (did you mean {', '.join(close)}?)"
    top = dict.fromkeys(k.split(".")[0] + (".*" if "." in k else "") for k in known)
    return f" (no field is close; the top-level names: {', '.join(top)})"


def _check_keys(config, keys) -> None:
    leaves = list(flatten(config))
    known = set(leaves) | set(_sections(config))
    for key in keys:
        if key not in known:
            raise ValueError(f"unknown config field {key!r}{unknown_key_hint(key, leaves)}")


def _expand(config, overrides: Mapping[str, Any], prefix: str = "") -> dict:
    """Mapping values given for sections become dotted keys (``{"optim": {"lr": 1}}`` -> ``{"optim.lr": 1}``)."""
    sections = set(_sections(config))
    out: dict = {}
    for key, value in overrides.items():
        key = prefix + key
        if key in sections and isinstance(value, Mapping):
            out.update(_expand(config, value, key + "."))
        else:
            out[key] = value
    return out


def with_overrides(config, overrides: Mapping[str, Any]):
    """A copy of ``config`` with ``overrides`` (``{dotted name: value}``) replaced, sections rebuilt.

    A key may name a leaf (``"optim.learning_rate"``) or a section, with a section instance or a
    mapping of its fields (applied like the keys of this function).  JSON lists become tuples.

    Raises:
      ValueError: a key that names no field (with close matches and the known dotted names).
    """
    if not is_section(config):
        raise TypeError(f"with_overrides needs a config dataclass instance, got {config!r}")
    overrides = _expand(config, overrides)
    _check_keys(config, overrides)
    direct: dict = {}
    nested: dict = {}
    for key, value in overrides.items():
        head, dot, rest = key.partition(".")
        if dot:
            nested.setdefault(head, {})[rest] = value
        else:
            direct[head] = _freeze(value)
    for head, sub in nested.items():
        direct[head] = with_overrides(direct.get(head, getattr(config, head)), sub)
    return dataclasses.replace(config, **direct) if direct else config


def from_dict(config_cls, fields: Mapping[str, Any]):
    """The config of a recorded one: ``fields`` nested like ``dataclasses.asdict`` (or dotted), missing fields at
    ``config_cls()``'s defaults, JSON lists as tuples.  ``ValueError`` naming a field ``config_cls`` lacks."""
    return with_overrides(config_cls(), fields)
