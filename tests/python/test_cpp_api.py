"""The C++ API's pieces that the Python suite can check quickly: the public
headers compile on their own, warning-free under strict ISO C++17, and pull
in nothing but the standard library; ``python -m ember --cmake-dir`` and
friends point at the installed C++ package (or say that there is none).

The C++ programs themselves (tests/cpp/api, examples/cpp) are built and run
against the installed package by tests/cpp/run_installed.sh."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ember_only

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "tests" / "cpp" / "api" / "header_check.cpp"
CXX = shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++")

pytestmark = ember_only


@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_headers_compile_strict_and_standalone(tmp_path):
    flags = ["-std=c++17", "-Wall", "-Wextra", "-pedantic", "-Werror", "-I", str(ROOT / "csrc")]
    r = subprocess.run([CXX, *flags, "-fsyntax-only", str(CHECK)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # every header it reaches is Ember's own or the compiler's and C library's
    deps = subprocess.run([CXX, *flags, "-M", str(CHECK)], capture_output=True, text=True, check=True).stdout
    files = [f for f in deps.replace("\\\n", " ").split()[1:]]
    ours = [f for f in files if Path(f).resolve().is_relative_to(ROOT)]
    assert str(CHECK) in ours and any(f.endswith("ember/ember.h") for f in ours)
    foreign = [f for f in files if f not in ours and re.search(r"pybind11|python|openblas|cblas|lapack|/mpi", f, re.I)]
    assert not foreign, foreign
    for f in ours:
        assert Path(f).resolve().is_relative_to(ROOT / "csrc") or Path(f).resolve() == CHECK.resolve(), f


def _run_main(*args):
    return subprocess.run([sys.executable, "-m", "ember", *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


def test_main_cpp_options():
    import ember
    pkg = Path(ember.__file__).parent
    r = _run_main("--cmake-dir")
    if (pkg / "lib" / "cmake" / "Ember").is_dir():
        assert r.returncode == 0, r.stderr
        cmake_dir = Path(r.stdout.strip())
        assert (cmake_dir / "EmberConfig.cmake").is_file()
        version = (cmake_dir / "EmberConfigVersion.cmake").read_text()
        numeric = re.match(r"[0-9]+(\.[0-9]+)*", ember.__version__).group(0)
        assert f'set(PACKAGE_VERSION "{numeric}")' in version
        inc = Path(_run_main("--include-dir").stdout.strip())
        assert (inc / "ember" / "ember.h").is_file()
        libs = _run_main("--libs").stdout.split()
        assert "-lember" in libs and "-lscipy_openblas" in libs
        assert Path(libs[0][2:], "libember.a").is_file()
    else:
        # a source tree: no C++ package to point at, and it says so
        assert r.returncode != 0
        assert "was not installed with its C++ package" in r.stderr


def test_umbrella_includes_every_public_header():
    # a new op family header (csrc/ember/ops/X.h) or API area must reach C++
    # programs through ember.h; the op builders' own header stays out
    text = (ROOT / "csrc" / "ember" / "ember.h").read_text()
    included = set(re.findall(r'#include "(ember/[^"]+)"', text))
    included |= set(re.findall(r'#include "(ember/[^"]+)"', (ROOT / "csrc" / "ember" / "ops.h").read_text()))
    public = {f"ember/ops/{p.name}" for p in (ROOT / "csrc" / "ember" / "ops").glob("*.h")} - {"ember/ops/common.h"}
    public |= {"ember/ops.h", "ember/eval.h", "ember/random/random.h", "ember/transforms/transforms.h",
               "ember/io/io.h", "ember/compile/compile.h", "ember/distributed/distributed.h"}
    assert public - included == set()
    assert "ember/ops/common.h" not in included
