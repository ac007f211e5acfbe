"""The engine's includes point only down its layers (tests/check_layers.py).

The layer order is the one docs/CODEMAP.md states; the check reads the
sources, so it runs whatever the backend under test.
"""

import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "tests", "check_layers.py")

pytestmark = pytest.mark.skipif(not os.path.isdir(os.path.join(ROOT, "csrc", "ember")),
                                reason="needs the source tree")


def run_check(root):
    return subprocess.run([sys.executable, CHECK, str(root)], capture_output=True, text=True)


def test_includes_point_down():
    r = run_check(ROOT)
    assert r.returncode == 0, "includes against the layer order:\n" + r.stdout + r.stderr


def write(root, rel, text):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def test_the_check_reports_each_include_that_points_up(tmp_path):
    write(tmp_path, "csrc/ember/array.h", '#include "ember/dtype.h"\n')
    write(tmp_path, "csrc/ember/dtype.h", "#pragma once\n")
    # the graph layer calling a transform, a primitive header pulling in the op
    # API, a kernel reaching the ops, a rule using the op builders' internals
    write(tmp_path, "csrc/ember/array.cpp", '#include "ember/array.h"\n#include "ember/transforms/eval.h"\n')
    write(tmp_path, "csrc/ember/transforms/eval.h", '#include "ember/array.h"\n')
    write(tmp_path, "csrc/ember/primitives/indexing.h", '#include "ember/primitive.h"\n#include "ember/ops.h"\n')
    write(tmp_path, "csrc/ember/primitive.h", '#include "ember/array.h"\n')
    write(tmp_path, "csrc/ember/ops.h", '#include "ember/array.h"\n')
    write(tmp_path, "csrc/ember/backend/cpu/sort.cpp", '#include "ember/primitives/indexing.h"\n#include "ember/ops.h"\n')
    write(tmp_path, "csrc/ember/ops/common.h", '#include "ember/ops.h"\n')
    write(tmp_path, "csrc/ember/primitives/lapack.cpp", '#include "ember/ops.h"\n#include "ember/ops/common.h"\n')
    write(tmp_path, "csrc/ember/ops/fft.h", '#include "ember/ops.h"\nnamespace detail {\n}\n')
    write(tmp_path, "csrc/ember/stray.cpp", "")
    write(tmp_path, "python/src/ops.cpp", '#include "bindings.h"\n#include "ember/ops.h"\n#include "ember/ops/common.h"\n')
    r = run_check(tmp_path)
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert lines[:-1] == [
        "csrc/ember/array.cpp:2: graph includes ember/transforms/eval.h (transforms)",
        "csrc/ember/backend/cpu/sort.cpp:2: kernels includes ember/ops.h (op-api)",
        "csrc/ember/ops/fft.h:2: the public op API declares op-layer internals (namespace detail)",
        "csrc/ember/primitives/indexing.h:2: primitives includes ember/ops.h (op-api)",
        "csrc/ember/primitives/lapack.cpp:2: rules includes ember/ops/common.h (ops)",
        "csrc/ember/stray.cpp: in no layer (add it to LAYERS in tests/check_layers.py)",
        "python/src/ops.cpp:3: bindings includes ember/ops/common.h (ops)",
    ]
    assert lines[-1].startswith("7 problem(s)")


def test_down_and_sideways_includes_pass(tmp_path):
    write(tmp_path, "csrc/ember/dtype.h", "")
    write(tmp_path, "csrc/ember/array.h", '#include "ember/dtype.h"\n')
    write(tmp_path, "csrc/ember/array.cpp", '#include "ember/eval.h"\n#include "ember/primitive.h"\n')
    write(tmp_path, "csrc/ember/primitives/sort.h", '#include "ember/primitive.h"\n')
    write(tmp_path, "csrc/ember/backend/cpu/sort.cpp",
          '#include "ember/backend/cpu/loops.h"\n#include "ember/primitives/sort.h"\n')
    write(tmp_path, "csrc/ember/ops/sort.cpp", '#include "ember/ops/common.h"\n#include "ember/primitives/sort.h"\n')
    write(tmp_path, "csrc/ember/primitives/sort.cpp",
          '#include "ember/ops.h"\n#include "ember/transforms/transforms.h"\n')
    write(tmp_path, "python/src/ops.cpp", '#include "ember/ops.h"\n#include "ember/backend/cpu/isa.h"\n')
    r = run_check(tmp_path)
    assert r.returncode == 0, r.stdout
