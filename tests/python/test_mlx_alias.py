"""``ember.alias_mlx`` / ``unalias_mlx`` and ``python -m ember.run_as_mlx``:
code that imports ``mlx`` runs on Ember when, and only when, asked for."""
import os
import subprocess
import sys
import textwrap
import types

import pytest

from conftest import ember_only

pytestmark = ember_only  # the alias is Ember's own

PYTHON_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")


def _env():
    env = dict(os.environ)
    import ember

    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(ember.__file__)))
    env["PYTHONPATH"] = pkg_parent + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _run(args, cwd, **kw):
    return subprocess.run([sys.executable] + args, cwd=cwd, env=_env(), capture_output=True, text=True,
                          timeout=120, **kw)


@pytest.fixture
def alias():
    import ember

    mlx = ember.alias_mlx()
    yield mlx
    ember.unalias_mlx()


def test_not_active_unless_asked_for(tmp_path):
    code = textwrap.dedent("""
        import sys
        import ember, ember.nn, ember.optimizers, ember.mlx_alias as a
        assert not a.is_mlx_aliased()
        assert not any(isinstance(f, a.MlxAliasFinder) for f in sys.meta_path)
        assert not any(n == "mlx" or n.startswith("mlx.") for n in sys.modules)
        print("ok")
    """)
    r = _run(["-c", code], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_imports_resolve_to_ember_modules(alias):
    import ember
    import ember.core
    import ember.nn
    import ember.optimizers
    import ember.utils

    import mlx
    import mlx.core as mx
    import mlx.nn as nn
    import mlx.optimizers as optim
    import mlx.utils
    from mlx.nn.layers.base import Module
    from mlx.utils import tree_flatten

    assert mlx is alias and mlx.__ember_alias__ is True
    assert mx is ember.core and nn is ember.nn and optim is ember.optimizers and mlx.utils is ember.utils
    assert Module is ember.nn.Module and tree_flatten is ember.utils.tree_flatten
    assert mlx.core is mx and mlx.nn is nn  # submodules are attributes of the package
    import mlx.core.fast
    import mlx.core.distributed

    assert mlx.core.fast is ember.core.fast and mx.distributed is sys.modules["ember.core.distributed"]
    # the Ember modules keep their own names and specs
    assert ember.nn.__name__ == "ember.nn" and ember.nn.__spec__.name == "ember.nn"
    assert mx.__spec__.name == "ember.core"
    a = mx.array([1.0, 2.0])
    assert isinstance(a, ember.core.array)


def test_missing_submodule_is_module_not_found(alias):
    with pytest.raises(ModuleNotFoundError, match="mlx.no_such_module.*ember.no_such_module"):
        import mlx.no_such_module  # noqa: F401


def test_alias_twice_and_unalias():
    import ember

    first = ember.alias_mlx()
    assert ember.alias_mlx() is first
    finders = [f for f in sys.meta_path if isinstance(f, ember.mlx_alias.MlxAliasFinder)]
    assert len(finders) == 1 and sys.meta_path[0] is finders[0]
    import mlx.nn  # noqa: F401

    ember.unalias_mlx()
    assert not ember.mlx_alias.is_mlx_aliased()
    assert not any(n == "mlx" or n.startswith("mlx.") for n in sys.modules)
    assert "ember.nn" in sys.modules
    ember.unalias_mlx()  # again: nothing to do


def test_refuses_when_real_mlx_is_imported():
    import ember

    sys.modules["mlx"] = types.ModuleType("mlx")
    try:
        with pytest.raises(RuntimeError, match="alias_mlx: the mlx package is already imported"):
            ember.alias_mlx()
        assert not ember.mlx_alias.is_mlx_aliased()
    finally:
        del sys.modules["mlx"]


SCRIPT = """
import sys
import mlx.core as mx
import mlx.nn as nn
x = mx.array([[1.0, 2.0, 3.0]])
layer = nn.Linear(3, 2)
print(type(mx.sum(x)).__module__, mx.__name__, sys.argv[1:], __name__)
"""


def test_run_as_mlx_script(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(SCRIPT)
    r = _run(["-m", "ember.run_as_mlx", str(script), "a", "--b"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ember.core", "ember.core", "['a',", "'--b']", "__main__"]


def test_run_as_mlx_module(tmp_path):
    (tmp_path / "progmod.py").write_text(SCRIPT)
    r = _run(["-m", "ember.run_as_mlx", "-m", "progmod", "x"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ember.core", "ember.core", "['x']", "__main__"]


def test_run_as_mlx_bad_command_lines(tmp_path):
    r = _run(["-m", "ember.run_as_mlx"], cwd=tmp_path)
    assert r.returncode == 2 and "usage: python -m ember.run_as_mlx" in r.stderr
    r = _run(["-m", "ember.run_as_mlx", str(tmp_path / "missing.py")], cwd=tmp_path)
    assert r.returncode == 2 and "no such file" in r.stderr
    r = _run(["-m", "ember.run_as_mlx", "-m"], cwd=tmp_path)
    assert r.returncode == 2


def test_run_as_mlx_passes_exit_status(tmp_path):
    script = tmp_path / "fails.py"
    script.write_text("import mlx.core as mx\nimport sys\nsys.exit(3)\n")
    assert _run(["-m", "ember.run_as_mlx", str(script)], cwd=tmp_path).returncode == 3
