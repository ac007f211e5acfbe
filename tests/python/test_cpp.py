"""C++ tests of engine internals that Python does not reach, compiled with
g++ against the static library of the build the package uses (the folder of
the ember.core extension, where the build writes libember.a)."""

import os
import shutil
import subprocess
import sys

import pytest

from conftest import ember_only

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = ember_only  # tests Ember's C++ engine


def _library():
    import ember.core as core
    lib = os.path.join(os.path.dirname(os.path.realpath(core.__file__)), "libember.a")
    return lib if os.path.exists(lib) else None


def _openblas():
    try:
        import scipy_openblas32 as ob
    except ImportError:
        return None
    return ob.get_lib_dir()


@pytest.mark.parametrize("name", ["test_primitive_traits", "test_export"])
def test_cpp(name, tmp_path):
    lib, blas, cxx = _library(), _openblas(), shutil.which("g++")
    if lib is None or blas is None or cxx is None:
        pytest.skip("needs g++, scipy-openblas32 and a build folder with libember.a next to ember.core")
    exe = tmp_path / name
    cmd = [cxx, "-std=c++17", "-O1", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Werror",
           "-I", os.path.join(ROOT, "csrc"), os.path.join(ROOT, "tests", "cpp", name + ".cpp"), lib,
           "-L" + blas, "-lscipy_openblas", "-Wl,-rpath," + blas, "-lpthread", "-o", str(exe)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    sys.stdout.write(r.stdout)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
