"""Run code written for MLX on Ember: ``import mlx.*`` resolved to ``ember.*``.

Nothing here is active unless asked for. :func:`alias_mlx` puts a finder at
the front of ``sys.meta_path`` that answers every import of ``mlx`` or of a
module below it (``mlx.core``, ``mlx.nn``, ``mlx.nn.layers.base``,
``mlx.optimizers``, ``mlx.utils``, ...) with Ember's module of the same
path, so ``import mlx.core as mx`` gives ``ember.core`` itself (the same
module object: an array made through either name is the same type).
:func:`unalias_mlx` takes the finder out again and forgets the ``mlx``
modules it made. ``python -m ember.run_as_mlx script.py ARGS`` (or
``-m module ARGS``) runs a program with the alias installed.

The top-level ``mlx`` module is a package of its own (Ember's ``ember``
package holds more than MLX's ``mlx``); its ``__ember_alias__`` attribute is
``True``, which tells code that wants to know that it runs on Ember.
"""
import importlib
import importlib.abc
import importlib.machinery
import sys
import types

__all__ = ["alias_mlx", "unalias_mlx", "is_mlx_aliased"]

_PREFIX = "mlx"


def _is_mlx_name(fullname):
    return fullname == _PREFIX or fullname.startswith(_PREFIX + ".")


class _AliasLoader(importlib.abc.Loader):
    """Loader whose module is an already imported Ember module."""

    def __init__(self, module):
        self._module = module
        self._spec = getattr(module, "__spec__", None)

    def create_module(self, spec):
        return self._module

    def exec_module(self, module):
        # the import system has just set module.__spec__ to the alias's spec:
        # give the Ember module its own back (its name stays ember.*)
        if self._spec is not None:
            try:
                module.__spec__ = self._spec
            except AttributeError:  # pragma: no cover - read-only modules
                pass
        if not hasattr(module, "__path__"):
            # an extension module's submodules (ember.core.fast, ...) are not
            # found through a path but registered in sys.modules: register
            # them under the mlx name too, as MLX does for mlx.core.fast
            prefix = module.__name__ + "."
            for name, sub in list(sys.modules.items()):
                if name.startswith(prefix):
                    sys.modules.setdefault(_PREFIX + name[len("ember"):], sub)


class _PackageLoader(importlib.abc.Loader):
    """Loader of the top-level ``mlx`` package (a module of its own)."""

    def create_module(self, spec):
        import ember

        module = types.ModuleType(_PREFIX, "MLX's package name resolved to Ember (ember.mlx_alias).")
        module.__path__ = []
        module.__version__ = ember.__version__
        module.__ember_alias__ = True
        return module

    def exec_module(self, module):
        pass


class MlxAliasFinder(importlib.abc.MetaPathFinder):
    """Meta-path finder mapping ``mlx`` and ``mlx.X.Y`` to ``ember.X.Y``."""

    def find_spec(self, fullname, path=None, target=None):
        if not _is_mlx_name(fullname):
            return None
        if fullname == _PREFIX:
            return importlib.machinery.ModuleSpec(_PREFIX, _PackageLoader(), is_package=True)
        target_name = "ember" + fullname[len(_PREFIX):]
        try:
            module = importlib.import_module(target_name)
        except ModuleNotFoundError as e:
            if e.name != target_name:
                raise
            # mlx.X with no ember.X: the import fails as it would for MLX
            raise ModuleNotFoundError(
                f"No module named {fullname!r} (the mlx alias looked for {target_name!r}, "
                f"which Ember does not have)", name=fullname) from None
        spec = importlib.machinery.ModuleSpec(
            fullname, _AliasLoader(module), is_package=hasattr(module, "__path__"))
        if hasattr(module, "__path__"):
            spec.submodule_search_locations = list(module.__path__)
        return spec


_finder = None


def is_mlx_aliased():
    """Whether :func:`alias_mlx` is in effect.

    Returns:
        bool: ``True`` while the finder is installed.
    """
    return _finder is not None and _finder in sys.meta_path


def alias_mlx():
    """Make ``import mlx...`` import Ember, for code written for MLX.

    Installs a finder at the front of ``sys.meta_path``: from then on
    ``import mlx.core as mx`` gives ``ember.core``, ``mlx.nn`` ``ember.nn``,
    ``mlx.optimizers`` ``ember.optimizers``, ``mlx.utils`` ``ember.utils``,
    and every module below them the Ember module of the same path. Calling
    it again does nothing. Only for the running interpreter; undo it with
    :func:`unalias_mlx`.

    Returns:
        module: the ``mlx`` package module (the alias).

    Raises:
        RuntimeError: a real ``mlx`` (or a module below it) is already
            imported in this interpreter; the two cannot share the name.
    """
    global _finder
    if not is_mlx_aliased():
        taken = sorted(name for name, mod in sys.modules.items()
                       if _is_mlx_name(name) and not _is_alias_module(name, mod))
        if taken:
            raise RuntimeError(
                "alias_mlx: the mlx package is already imported "
                f"({', '.join(taken[:4])}{', ...' if len(taken) > 4 else ''}); "
                "call alias_mlx() before anything imports mlx")
        _finder = MlxAliasFinder()
        sys.meta_path.insert(0, _finder)
    return importlib.import_module(_PREFIX)


def _is_alias_module(name, module):
    if name == _PREFIX:
        return getattr(module, "__ember_alias__", False) is True
    return getattr(module, "__name__", "").startswith("ember")


def unalias_mlx():
    """Undo :func:`alias_mlx`.

    Removes the finder and the ``mlx`` entries of ``sys.modules`` that it
    made (the Ember modules themselves stay imported). Modules that already
    hold a reference (``mx`` bound by ``import mlx.core as mx``) keep it.
    Does nothing when the alias is not installed.

    Returns:
        None
    """
    global _finder
    if _finder is None:
        return
    while _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    _finder = None
    for name in [n for n, m in sys.modules.items() if _is_mlx_name(n) and _is_alias_module(n, m)]:
        del sys.modules[name]
