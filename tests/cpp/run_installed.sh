#!/usr/bin/env bash
# Builds and runs Ember's C++ API tests (tests/cpp/api, ctest) and the C++
# examples (examples/cpp) against an installed Ember, the way a C++ project
# would: find_package(Ember) with Ember_DIR from `python3 -m ember
# --cmake-dir`, in a clean build folder under $TMPDIR (one configure for
# both). Then runs the examples and checks them: `fit`'s loss must fall
# tenfold, `infer`'s probabilities must match what Python computes from the
# same safetensors file (make_weights.py), and `imported` (built where the
# installed Ember has import_function) must match the Python function it
# imports (export.py).
#
#   bash tests/cpp/run_installed.sh
#
# Environment: PYTHON (default python3) is the Python that owns the
# installed ember; Ember_DIR overrides the package directory (a staging
# install: `cmake --install build/dev --prefix DIR` gives DIR/ember/lib/cmake/Ember);
# EMBER_CPP_KEEP=1 keeps the build folder. Exits non-zero on any failure.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PY=${PYTHON:-python3}
PY=$(command -v "$PY")
EMBER_DIR=${Ember_DIR:-$("$PY" -m ember --cmake-dir)}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ember-cpp.XXXXXX")
if [ "${EMBER_CPP_KEEP:-0}" = 1 ]; then
  echo "build folder: $WORK"
else
  trap 'rm -rf "$WORK"' EXIT
fi
START=$SECONDS
phase() { echo "== $1 ($((SECONDS - START)) s)"; }

phase "configure against $EMBER_DIR"
mkdir -p "$WORK/src" "$WORK/data"
cat > "$WORK/src/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.20)
project(ember_cpp_installed LANGUAGES CXX)
enable_testing()
add_subdirectory("$ROOT/tests/cpp/api" api)
add_subdirectory("$ROOT/examples/cpp" examples)
EOF
cmake -S "$WORK/src" -B "$WORK/build" -G Ninja -DEmber_DIR="$EMBER_DIR" -DPython3_EXECUTABLE="$PY" \
  > "$WORK/configure.log" 2>&1 || { cat "$WORK/configure.log"; exit 1; }
grep -E "Ember|imported" "$WORK/configure.log" || true

phase "build"
ninja -C "$WORK/build" -j2

phase "ctest"
ctest --test-dir "$WORK/build" --output-on-failure

# Compares the "row <i>: <v> ..." lines of a program's output with a .npy file.
compare_rows() {
  "$PY" - "$1" "$2" <<'EOF'
import sys
import numpy as np
out, expected = sys.argv[1], np.load(sys.argv[2])
rows = [line.split(":", 1)[1].split() for line in open(out) if line.startswith("row ")]
got = np.array([[float(v) for v in r if v != "class"][:expected.shape[1]] for r in rows])
if got.shape != expected.shape or not np.allclose(got, expected, rtol=1e-5, atol=1e-6):
    sys.exit(f"{out}: C++ output {got.tolist()} differs from Python's {expected.tolist()}")
print(f"{out}: {got.shape[0]} rows match Python's")
EOF
}

# pkg-config: the header check compiled and linked with ember.pc's flags alone
# (it runs only if the rpath finds OpenBLAS)
if command -v pkg-config > /dev/null; then
  phase "pkg-config"
  PC_DIR=$(cd "$EMBER_DIR/../../pkgconfig" && pwd)
  FLAGS=$(PKG_CONFIG_PATH="$PC_DIR" pkg-config --cflags --libs ember)
  echo "pkg-config --cflags --libs ember: $FLAGS"
  # shellcheck disable=SC2086
  c++ -std=c++17 -Wall -Wextra -pedantic -Werror "$ROOT/tests/cpp/api/header_check.cpp" $FLAGS -o "$WORK/pc_check"
  "$WORK/pc_check"
fi

phase "example fit"
"$WORK/build/examples/fit" 300 | tee "$WORK/fit.txt"
"$PY" - "$WORK/fit.txt" <<'EOF'
import sys
last = open(sys.argv[1]).read().splitlines()[-1].split()
final, initial = float(last[2]), float(last[5])
if not final < initial / 10:
    sys.exit(f"fit: the loss fell from {initial} to {final} only")
print(f"fit: loss {initial:.4f} -> {final:.4f}")
EOF

phase "example infer"
"$PY" "$ROOT/examples/cpp/make_weights.py" "$WORK/data"
"$WORK/build/examples/infer" "$WORK/data/weights.safetensors" | tee "$WORK/infer.txt"
compare_rows "$WORK/infer.txt" "$WORK/data/expected.npy"

if [ -x "$WORK/build/examples/imported" ]; then
  phase "example imported"
  "$PY" "$ROOT/examples/cpp/export.py" "$WORK/data"
  "$WORK/build/examples/imported" "$WORK/data/fn.mlxfn" "$WORK/data/inputs.npz" | tee "$WORK/imported.txt"
  compare_rows "$WORK/imported.txt" "$WORK/data/expected_fn.npy"
else
  echo "== example imported: not built (the installed Ember has no compile/export.h)"
fi

phase "all C++ checks passed"
