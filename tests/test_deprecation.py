"""gensim_jax.deprecation: the message names the old and new spelling and the release that removes it; a module's
``__getattr__`` serves old names with a warning at the caller's line and is an ``AttributeError`` for any other."""

from __future__ import annotations

import inspect
import types
import warnings

import pytest

from gensim_jax.deprecation import GensimJaxDeprecationWarning, Renamed, module_getattr, removal_version, warn_renamed


def test_one_minor_version_then_removal():
    assert removal_version("0.2.0") == "0.3.0" and removal_version("1.9.3") == "1.10.0"
    r = Renamed("old", "new", "0.2.0", note="why")
    assert r.removal == "0.3.0"
    assert r.message("pkg.mod") == (
        "pkg.mod.old is deprecated since gensim-jax 0.2.0 and will be removed in 0.3.0: use new (why)"
    )
    assert issubclass(GensimJaxDeprecationWarning, DeprecationWarning)


def _module_with_a_renamed_function() -> types.ModuleType:
    mod = types.ModuleType("pkg_under_test")
    mod.new_fn = lambda: 42
    mod.DEPRECATED = {"old_fn": Renamed("old_fn", "new_fn", "0.2.0")}
    mod.__getattr__ = module_getattr("pkg_under_test", mod.DEPRECATED, vars(mod))
    return mod


def test_module_getattr_serves_the_new_object_and_warns_at_the_callers_line():
    mod = _module_with_a_renamed_function()
    with pytest.warns(GensimJaxDeprecationWarning, match=r"pkg_under_test\.old_fn is deprecated .*: use new_fn") as w:
        assert mod.old_fn() == 42
    assert w[0].filename == __file__
    with pytest.raises(AttributeError, match="module 'pkg_under_test' has no attribute 'other'"):
        mod.other  # noqa: B018
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mod.new_fn() == 42  # the new name does not warn


def test_warn_renamed_points_at_the_line_that_used_the_old_spelling():
    """As ``warnings.warn``'s default ``stacklevel=2``: the caller of the function that reads the old spelling."""

    def reads_an_old_keyword():
        warn_renamed(Renamed("lr", "learning_rate", "0.2.0"), "f")

    with pytest.warns(GensimJaxDeprecationWarning, match="f.lr is deprecated .*use learning_rate") as w:
        line = inspect.currentframe().f_lineno + 1
        reads_an_old_keyword()
    assert (w[0].filename, w[0].lineno) == (__file__, line)
