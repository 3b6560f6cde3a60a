"""The deprecation policy of the public surface a fork codes against (:mod:`gensim_jax.fork`).

A name, keyword or config field of the surface that is renamed keeps its old spelling working for
one minor version: the old spelling does what the new one does and warns, once per place it is
used, with a :class:`GensimJaxDeprecationWarning` (a :class:`DeprecationWarning`) that names the
replacement and the release that removes it.  CHANGELOG.md lists it under **Deprecated** in the
release that renames it and under **Removed** in the release that drops it.  The helpers here are
how a module keeps an old spelling:

* a renamed module-level name: :func:`module_getattr` builds the module's ``__getattr__`` (PEP 562),
  which returns the new object under the old name and warns;
* a renamed keyword argument, attribute or config field: :func:`warn_renamed` at the place that
  still reads the old spelling.

``gensim-jax`` shows these warnings (``warning: ...`` on stderr) although Python hides
``DeprecationWarning`` outside ``__main__`` by default; pytest shows them too.

Example:
    >>> import warnings
    >>> from gensim_jax.deprecation import Renamed, module_getattr
    >>> __getattr__ = module_getattr("mymod", {"old_fn": Renamed("old_fn", "new_fn", "0.2.0")}, {"new_fn": len})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     __getattr__("old_fn")([1, 2])
    2
    >>> str(caught[0].message)
    'mymod.old_fn is deprecated since gensim-jax 0.2.0 and will be removed in 0.3.0: use new_fn'
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Callable, Mapping

__all__ = ["GensimJaxDeprecationWarning", "Renamed", "module_getattr", "removal_version", "warn_renamed"]


class GensimJaxDeprecationWarning(DeprecationWarning):
    """An old spelling of gensim-jax's public surface was used; the message names the replacement."""


def removal_version(since: str) -> str:
    """The release that removes what ``since`` deprecates: the next minor version (``0.2.0`` -> ``0.3.0``)."""
    major, minor = (int(x) for x in since.split(".")[:2])
    return f"{major}.{minor + 1}.0"


@dataclasses.dataclass(frozen=True)
class Renamed:
    """One renamed spelling: ``old`` became ``new`` in release ``since`` (removed one minor version later).

    Attributes:
      old: the old spelling (a name, a keyword, a dotted config field).
      new: what to write instead (shown in the warning as written here).
      since: the release that renamed it (``0.2.0``).
      note: an optional clause after the replacement (how the two differ, what is done meanwhile).
    """

    old: str
    new: str
    since: str
    note: str = ""

    @property
    def removal(self) -> str:
        """The release that removes :attr:`old` (:func:`removal_version` of :attr:`since`)."""
        return removal_version(self.since)

    def message(self, where: str = "") -> str:
        """The warning's one line: ``WHERE.old is deprecated since gensim-jax S and will be removed in R: use NEW``."""
        name = f"{where}.{self.old}" if where else self.old
        text = (
            f"{name} is deprecated since gensim-jax {self.since} and will be removed in {self.removal}: use {self.new}"
        )
        return f"{text} ({self.note})" if self.note else text


def warn_renamed(renamed: Renamed, where: str = "", stacklevel: int = 2) -> None:
    """Warn that ``renamed.old`` was used (:class:`GensimJaxDeprecationWarning`, naming ``renamed.new``).

    ``stacklevel`` as in :func:`warnings.warn`, counted from the caller of this function.
    """
    warnings.warn(renamed.message(where), GensimJaxDeprecationWarning, stacklevel=stacklevel + 1)


def module_getattr(module: str, renamed: Mapping[str, Renamed], namespace: Mapping[str, Any]) -> Callable:
    """A module's ``__getattr__`` (PEP 562) that serves each old name of ``renamed`` with a warning.

    Args:
      module: the module's dotted name (shown in the warning and in the ``AttributeError``).
      renamed: ``{old name: Renamed}``; ``Renamed.new`` is looked up in ``namespace`` (a dotted
        ``module.name`` by its last part).
      namespace: where the new objects live: the module's ``globals()``.

    Returns:
      ``__getattr__(name)``: the new object for an old name (warning at the line that used it), an
      ``AttributeError`` for any other missing name, as Python's own.
    """

    def __getattr__(name: str) -> Any:
        if name in renamed:
            entry = renamed[name]
            warn_renamed(entry, module, stacklevel=2)
            return namespace[entry.new.rsplit(".", 1)[-1]]
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
