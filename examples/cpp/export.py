"""Exports the function the C++ example ``imported`` runs: f(x, y) =
softmax(x W + b) * y with W and b captured as constants, traced on example
inputs and written with ``mx.export_function`` to ``fn.mlxfn``; also writes
the inputs (``inputs.npz``) and Python's result (``expected_fn.npy``), which
``tests/cpp/run_installed.sh`` compares with the C++ program's output.

    python export.py [out_dir]
"""
import os
import sys

import ember.core as mx


def main(out_dir="."):
    k = mx.random.split(mx.random.key(1), 4)
    w = mx.random.normal((4, 3), key=k[0])
    b = mx.random.normal((3,), key=k[1])

    def f(x, y):
        return mx.softmax(x @ w + b, axis=-1) * y

    x = mx.random.normal((6, 4), key=k[2])
    y = mx.random.uniform(shape=(6, 3), key=k[3])
    mx.export_function(os.path.join(out_dir, "fn.mlxfn"), f, x, y)
    mx.savez(os.path.join(out_dir, "inputs.npz"), x=x, y=y)
    mx.save(os.path.join(out_dir, "expected_fn.npy"), f(x, y))


if __name__ == "__main__":
    main(*sys.argv[1:])
