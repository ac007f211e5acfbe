"""Writes the type stubs of ``ember.core`` (``.pyi`` files) with pybind11-stubgen.

CMake runs this after the extension is built (so the stubs are never stale):
it stages the Python package next to the freshly built ``core`` module in a
temporary folder, imports ``ember`` from there (which installs the
Python-side additions onto ``ember.core``: the transforms, compile,
distributed), and asks pybind11-stubgen for ``ember.core`` and its
submodules. The result is ``OUT/ember/core/__init__.pyi`` plus one ``.pyi``
per submodule (``random.pyi``, ``linalg.pyi``, ...), and ``py.typed``.

Usage: python tools/gen_stubs.py CORE_SO PACKAGE_DIR OUT_DIR
(CORE_SO: the built extension; PACKAGE_DIR: python/ember; OUT_DIR: where
``ember/`` is written). Needs pybind11-stubgen (a build requirement).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Names the bindings' signatures use that are no Python names: the argument
# casters' "scalar" and the docstrings' "StreamOrDevice" become private
# aliases, C++ names left by a binding order become the Python classes.
CODE_FIXES = [(re.compile(r"\bember::array\b"), "array"), (re.compile(r"\bember::Dtype\b"), "Dtype"),
              (re.compile(r"\bNoneType\b"), "None"), (re.compile(r"(?<![.\w])scalar\b"), "_Scalar"),
              (re.compile(r"(?<![.\w])StreamOrDevice\b"), "_StreamOrDevice")]
ALIASES = """
_Scalar = typing.Union[bool, int, float, complex]
_StreamOrDevice = typing.Union[Stream, Device, None]
"""
# a submodule's signatures name the core classes unqualified
SUBMODULE_IMPORTS = "import typing\nfrom ember.core import Device, Dtype, Stream, array\n"


def stage(core_so, package_dir, tmp):
    """A copy of the package in tmp/ember with the built extension inside it."""
    dst = os.path.join(tmp, "ember")
    shutil.copytree(package_dir, dst, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyi", "core"))
    shutil.copy2(core_so, os.path.join(dst, os.path.basename(core_so)))
    return tmp


def run_stubgen(tmp, out_dir):
    env = dict(os.environ)
    env["PYTHONPATH"] = tmp
    # never the kernels' compiler or an MPI: importing is all stubgen does
    env["EMBER_DISABLE_COMPILE"] = "1"
    cmd = [sys.executable, "-m", "pybind11_stubgen", "ember.core", "-o", out_dir,
           "--print-invalid-expressions-as-is", "--ignore-all-errors"]
    res = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
    if res.returncode != 0:
        sys.stderr.write(res.stdout + res.stderr)
        raise SystemExit(f"gen_stubs: pybind11-stubgen failed (exit {res.returncode})")


def tidy(path, submodule):
    """Makes a generated stub valid and self-contained: CODE_FIXES on every
    line outside a docstring, the aliases after the imports, and for a
    submodule the core classes it names. Fails on a stub that does not parse."""
    with open(path) as f:
        lines = f.read().split("\n")
    out, in_doc, last_import = [], False, 0
    for line in lines:
        s = line.strip()
        if in_doc:
            in_doc = not s.endswith('"""')
        elif s.startswith('"""'):
            in_doc = not (len(s) >= 6 and s.endswith('"""'))
        else:
            for pat, rep in CODE_FIXES:
                line = pat.sub(rep, line)
            line = re.sub(r"=\s*<[^<>\n]*>", "= ...", line)  # an object's repr as a default
            if line.startswith(("import ", "from ")):
                last_import = len(out) + 1
        out.append(line)
    extra = SUBMODULE_IMPORTS if submodule else "import typing\n"
    # stubgen imports only the modules it can import itself (typing_extensions
    # may be absent from the build's environment; type checkers have it)
    body = "\n".join(out)
    for mod in ("typing_extensions", "collections.abc"):
        if mod + "." in body and not re.search(rf"^import {re.escape(mod)}$", body, re.M):
            extra += f"import {mod}\n"
    extra += ALIASES
    out.insert(last_import, extra)
    text = "\n".join(out)
    compile(text, path, "exec")  # a SyntaxError here fails the build
    with open(path, "w") as f:
        f.write(text)


def main(argv):
    if len(argv) != 4:
        print(__doc__)
        return 2
    core_so, package_dir, out_dir = (os.path.abspath(a) for a in argv[1:])
    tmp = tempfile.mkdtemp(prefix="ember-stubs-")
    try:
        stage(core_so, package_dir, tmp)
        gen = os.path.join(tmp, "out")
        run_stubgen(tmp, gen)
        src = os.path.join(gen, "ember", "core")
        if not os.path.isfile(os.path.join(src, "__init__.pyi")):
            raise SystemExit(f"gen_stubs: pybind11-stubgen wrote no {src}/__init__.pyi")
        dst = os.path.join(out_dir, "ember", "core")
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(src, dst)
        n = 0
        for root, _, files in os.walk(dst):
            for name in files:
                if name.endswith(".pyi"):
                    tidy(os.path.join(root, name), name != "__init__.pyi")
                    n += 1
        open(os.path.join(out_dir, "ember", "py.typed"), "w").close()
        print(f"gen_stubs: {n} stub files in {dst}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
