"""The package as installed: one version everywhere, ``python -m ember``, and
the type stubs of ``ember.core``.

The tests import whichever ember the session imports (the source tree with
PYTHONPATH=python, the installed wheel in CI) and check that very one: its
distribution metadata, its stubs (shipped in the wheel; for the source tree
generated here with tools/gen_stubs.py when pybind11-stubgen is installed).
"""
import ast
import glob
import importlib.metadata
import json
import os
import re
import subprocess
import sys

import pytest

import ember
import ember.core as mx

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PKG = os.path.dirname(os.path.abspath(ember.__file__))
SUBMODULES = ("random", "linalg", "fft", "fast", "distributed", "metal", "cuda")


def _pyproject_version():
    path = os.path.join(ROOT, "pyproject.toml")
    if not os.path.exists(path):
        pytest.skip("no pyproject.toml beside the tests")
    with open(path) as f:
        text = f.read()
    m = re.search(r'^\[project\]$(.*?)^\[', text, re.S | re.M)
    v = re.search(r'^version\s*=\s*"([^"]+)"', m.group(1), re.M)
    return v.group(1)


def _run_main(*args, env=None):
    """``python -m ember ARGS`` in a fresh interpreter that imports this same ember."""
    e = dict(os.environ)
    e["PYTHONPATH"] = os.path.dirname(PKG)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "ember", *args], capture_output=True, text=True,
                          env=e, cwd=os.path.dirname(PKG), timeout=120)


# ---- one version -------------------------------------------------------------

def test_version_is_pyprojects_everywhere():
    v = _pyproject_version()
    assert re.fullmatch(r"\d+(\.\d+)*([a-z]+\d*)?(\.(dev|post)\d+)?", v), v
    assert ember.__version__ == v
    # core.__version__ is ember::version() (C++), compiled in from CMake's EMBER_VERSION
    assert mx.__version__ == v
    assert mx.__config__()["version"] == v


def test_wheel_metadata_version():
    try:
        dist = importlib.metadata.distribution("ember")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("ember is not installed (source tree)")
    # only the distribution that holds the imported package counts (a stale
    # install elsewhere says nothing about this one)
    init = os.path.realpath(str(dist.locate_file("ember/__init__.py")))
    if init != os.path.realpath(ember.__file__):
        pytest.skip(f"the installed ember ({init}) is not the imported one ({ember.__file__})")
    assert dist.version == ember.__version__ == mx.__version__
    files = {str(f) for f in dist.files or ()}
    assert "ember/py.typed" in files and "ember/core/__init__.pyi" in files


def test_cmake_package_version():
    found = glob.glob(os.path.join(PKG, "**", "EmberConfigVersion.cmake"), recursive=True)
    if not found:
        pytest.skip("no CMake package in this ember (source tree, or before the C++ embedding)")
    with open(found[0]) as f:
        m = re.search(r'set\(PACKAGE_VERSION "([^"]+)"\)', f.read())
    assert m and m.group(1) == re.match(r"\d+(\.\d+)*", ember.__version__).group(0)


# ---- python -m ember ------------------------------------------------------------

def test_main_json_fields():
    r = _run_main("--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    cfg = mx.__config__()
    assert d["version"] == ember.__version__
    assert os.path.realpath(d["location"]) == os.path.realpath(PKG)
    assert d["isa"] == cfg["isa"] and d["isa_supported"] == cfg["isa_supported"]
    assert d["isa_levels"] == list(cfg["isa_levels"]) and d["isa_dispatch"] == cfg["isa_dispatch"]
    assert d["num_threads"] == cfg["num_threads"] >= 1 and d["amx"] == cfg["amx"]
    blas = d["blas"]
    assert blas["name"] == "OpenBLAS" and "OpenBLAS" in blas["config"] and blas["core"]
    assert isinstance(blas["num_threads"], int) and blas["num_threads"] >= 1
    # the compiler compile uses, and the MPI distributed loads: as the modules see them
    assert (d["compiler"] is not None) == bool(mx._fuse_stats()["compiler"])
    if d["compiler"]:
        assert os.access(d["compiler"], os.X_OK)
    assert (d["mpi"] is not None) == mx.distributed.is_available()
    assert (d["mpi_error"] is None) == (d["mpi"] is not None)


def test_main_text_report():
    r = _run_main()
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.splitlines()[0].startswith(f"ember {ember.__version__} (")
    for field in ("ISA in use:", "ISA supported:", "threads:", "BLAS:", "BLAS core:", "compiler:", "MPI:"):
        assert re.search(rf"^{re.escape(field)}\s+\S", out, re.M), (field, out)
    assert re.search(rf"^ISA in use:\s+{re.escape(mx.__config__()['isa'])}$", out, re.M)


def test_main_respects_isa_cap_and_no_compiler():
    if not mx.__config__()["isa_dispatch"]:
        pytest.skip("a single-level (native) build has no level to cap")
    r = _run_main("--json", env={"EMBER_ISA": "baseline", "CXX": "/nonexistent/c++", "PATH": "/nonexistent"})
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["isa"] == "baseline" and d["compiler"] is None
    r = _run_main(env={"CXX": "/nonexistent/c++", "PATH": "/nonexistent"})
    assert re.search(r"^compiler:\s+not found", r.stdout, re.M), r.stdout


def test_main_version_and_bad_option():
    r = _run_main("--version")
    assert r.returncode == 0 and r.stdout.strip() == ember.__version__
    r = _run_main("--no-such-option")
    assert r.returncode == 2 and "unrecognized arguments: --no-such-option" in r.stderr


# ---- the stubs ----------------------------------------------------------------

@pytest.fixture(scope="module")
def stub_dir(tmp_path_factory):
    """The folder holding ember/core/*.pyi for the imported ember."""
    if os.path.isfile(os.path.join(PKG, "core", "__init__.pyi")):
        return os.path.dirname(PKG)
    pytest.importorskip("pybind11_stubgen")
    out = tmp_path_factory.mktemp("stubs")
    so = os.path.realpath(mx.__file__)
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_stubs.py"), so, PKG, str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return str(out)


def _stub_names(path):
    """The names a stub file defines at module level (imports not re-exported excluded)."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    names, imported, exported = set(), set(), set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
            if node.target.id == "__all__" and node.value is not None:
                exported.update(ast.literal_eval(node.value))
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            # a stub re-exports `import a.b` (the module a), `from m import x as x`
            # and any imported name that __all__ lists
            for a in node.names:
                if isinstance(node, ast.Import) and a.asname is None:
                    names.add(a.name.split(".")[0])
                elif a.asname is not None and a.asname == a.name:
                    names.add(a.asname)
                else:
                    imported.add(a.asname or a.name)
    return names | (imported & exported), tree


def _public(mod):
    return {n for n in dir(mod) if not n.startswith("_")}


def test_stubs_cover_every_public_name(stub_dir):
    core_dir = os.path.join(stub_dir, "ember", "core")
    assert os.path.isfile(os.path.join(stub_dir, "ember", "py.typed"))
    names, _ = _stub_names(os.path.join(core_dir, "__init__.pyi"))
    missing = sorted(_public(mx) - names)
    assert not missing, f"public names of ember.core missing from the stubs: {missing}"
    # nothing the stubs promise is absent at run time (imports of typing & co. aside)
    extra = sorted(n for n in names - set(dir(mx)) if not n.startswith("_")
                   and n not in ("annotations", "typing", "typing_extensions", "collections", "numpy"))
    assert not extra, f"names in the stubs that ember.core lacks: {extra}"
    for sub in SUBMODULES:
        path = os.path.join(core_dir, sub + ".pyi")
        assert os.path.isfile(path), path
        names, _ = _stub_names(path)
        missing = sorted(_public(getattr(mx, sub)) - names)
        assert not missing, f"public names of ember.core.{sub} missing from its stub: {missing}"


def test_stubs_signatures(stub_dir):
    """The stubs carry the bound signatures and docstrings, with valid types."""
    _, tree = _stub_names(os.path.join(stub_dir, "ember", "core", "__init__.pyi"))
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    add = funcs["add"]
    assert [a.arg for a in add.args.args] == ["a", "b", "stream"]
    assert ast.unparse(add.returns) == "array"
    assert ast.get_docstring(add).splitlines()[0] in mx.add.__doc__
    # the Python-side additions installed onto core at import are there too
    for name in ("grad", "value_and_grad", "vmap", "compile", "disable_compile", "checkpoint"):
        assert name in funcs, name
        assert ast.get_docstring(funcs[name])
    assert [a.arg for a in funcs["grad"].args.args][:1] == ["fun"]
    # every name an annotation uses resolves in its stub (no C++ type, no
    # caster label such as "scalar" left over)
    import builtins

    for path in glob.glob(os.path.join(stub_dir, "ember", "core", "*.pyi")):
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        known = set(dir(builtins))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                known.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                known.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.Assign):
                known.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                known.add(node.target.id)
        unknown = set()
        for node in ast.walk(tree):
            anns = []
            if isinstance(node, ast.arg) and node.annotation is not None:
                anns.append(node.annotation)
            elif isinstance(node, ast.FunctionDef) and node.returns is not None:
                anns.append(node.returns)
            for ann in anns:
                unknown.update(n.id for n in ast.walk(ann) if isinstance(n, ast.Name) and n.id not in known)
        assert not unknown, f"{path}: annotations name {sorted(unknown)}"


def test_main_include_dir():
    r = _run_main("--include-dir")
    inc = os.path.join(PKG, "include")
    if os.path.isdir(inc):  # an installed wheel
        assert r.returncode == 0 and os.path.realpath(r.stdout.strip()) == os.path.realpath(inc)
        assert os.path.isfile(os.path.join(inc, "ember", "version.h"))
    else:  # the source tree: no installed headers, and a message saying so
        assert r.returncode == 1 and "does not exist" in r.stderr and inc in r.stderr
