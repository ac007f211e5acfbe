#!/usr/bin/env python3
"""Checks that the engine's includes only point down its layers.

Every file under csrc/ember/ and python/src/ belongs to one layer (LAYERS
below, the order docs/CODEMAP.md states); a file may include the engine
headers ("ember/...") of its own layer and of the layers it lists as below
it. The public op headers also hold no op-layer internals (namespace
detail). Each include that points elsewhere is printed as

    path:line: <layer> includes ember/... (<layer>)

and the script exits with status 1 (also for a file no layer claims, so the
map stays complete). Usage: python tests/check_layers.py [repo root].
"""
import fnmatch
import os
import re
import sys

# (layer, file patterns relative to the repo root, layers it may include),
# lowest first. A file named exactly by a pattern belongs to that layer;
# otherwise the first layer whose wildcard patterns match it owns it.
LAYERS = [
    ("core", ["csrc/ember/dtype.*", "csrc/ember/half_bits.h", "csrc/ember/allocator.*", "csrc/ember/device.*", "csrc/ember/version.*"], []),
    ("graph", ["csrc/ember/array.*", "csrc/ember/primitive.*", "csrc/ember/eval.*"], ["core"]),
    ("primitives", ["csrc/ember/primitives/*.h"], ["core", "graph"]),
    ("kernels", ["csrc/ember/backend/*"], ["core", "graph", "primitives"]),
    ("op-api", ["csrc/ember/ops.h", "csrc/ember/ops/*.h", "csrc/ember/random/*.h"], ["core", "graph", "primitives"]),
    # ops/common.h is the op builders' own header: nothing outside the ops includes it
    ("ops", ["csrc/ember/ops/*.cpp", "csrc/ember/ops/common.h", "csrc/ember/random/*.cpp"],
     ["core", "graph", "primitives", "op-api"]),
    ("transforms", ["csrc/ember/transforms/*"], ["core", "graph", "primitives", "op-api"]),
    ("rules", ["csrc/ember/primitives/*.cpp"], ["core", "graph", "primitives", "op-api", "transforms"]),
    # saving and loading: builds arrays on mapped files, evaluates through the op API
    ("io", ["csrc/ember/io/*"], ["core", "graph", "primitives", "op-api"]),
    # collectives over MPI: primitives with their kernels and rules in one place
    ("distributed", ["csrc/ember/distributed/*"], ["core", "graph", "primitives", "kernels", "op-api", "transforms"]),
    # compile: tracing, the tape and its passes (compile.h), the fusion pass, its primitive's kernel and rules
    ("compile", ["csrc/ember/compile/*"], ["core", "graph", "primitives", "kernels", "op-api", "transforms"]),
    # the C++ API: the umbrella header ember.h over every layer above, and its definitions
    ("api", ["csrc/ember/ember.h", "csrc/ember/api.cpp"], ["core", "graph", "primitives", "op-api",
                                                          "transforms", "io", "distributed", "compile"]),
    ("bindings", ["python/src/*"], ["core", "graph", "primitives", "kernels", "op-api", "transforms", "io",
                                    "distributed", "compile"]),
]
# The op API's headers are public: the op layer's internals (namespace detail)
# live in ops/common.h, builders that rules share live beside their primitive.
PUBLIC = "op-api"
DETAIL = re.compile(r"^\s*namespace\s+(\w+::)*detail\b")

INCLUDE = re.compile(r'^\s*#\s*include\s+"(ember/[^"]+)"')
SOURCES = (".h", ".cpp", ".inc")


def layer_of(rel):
    for name, patterns, _ in LAYERS:
        if rel in patterns:
            return name
    for name, patterns, _ in LAYERS:
        if any(fnmatch.fnmatch(rel, p) for p in patterns):
            return name
    return None


def allowed(name):
    for n, _, below in LAYERS:
        if n == name:
            return set(below) | {name}
    return set()


def files(root):
    for top in ("csrc/ember", "python/src"):
        for d, _, names in os.walk(os.path.join(root, top)):
            for n in sorted(names):
                if n.endswith(SOURCES):
                    yield os.path.relpath(os.path.join(d, n), root).replace(os.sep, "/")


def check(root):
    problems = []
    for rel in sorted(files(root)):
        own = layer_of(rel)
        if own is None:
            problems.append(f"{rel}: in no layer (add it to LAYERS in tests/check_layers.py)")
            continue
        ok = allowed(own)
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if own == PUBLIC and DETAIL.match(line):
                    problems.append(f"{rel}:{lineno}: the public op API declares op-layer internals (namespace detail)")
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = layer_of("csrc/" + m.group(1))
                if target is None:
                    problems.append(f"{rel}:{lineno}: includes {m.group(1)}, which is in no layer")
                elif target not in ok:
                    problems.append(f"{rel}:{lineno}: {own} includes {m.group(1)} ({target})")
    return problems


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s) with the layer order (docs/CODEMAP.md)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
