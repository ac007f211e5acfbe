"""Writes what the C++ example ``infer`` loads: a small classifier's
weights (``weights.safetensors``, with the inputs ``x`` and metadata), and
the probabilities Python computes for those inputs (``expected.npy``), which
``tests/cpp/run_installed.sh`` compares with the C++ program's output.

    python make_weights.py [out_dir]
"""
import os
import sys

import ember.core as mx


def model(w, x):
    """softmax(relu(x W1^T + b1) W2^T + b2): two nn.Linear-style layers."""
    h = mx.maximum(x @ w["l1.weight"].T + w["l1.bias"], 0.0)
    return mx.softmax(h @ w["l2.weight"].T + w["l2.bias"], axis=-1)


def main(out_dir="."):
    k = mx.random.split(mx.random.key(0), 5)
    w = {
        "l1.weight": mx.random.normal((16, 4), key=k[0]) * 0.5,
        "l1.bias": mx.random.normal((16,), key=k[1]) * 0.1,
        "l2.weight": mx.random.normal((3, 16), key=k[2]) * 0.5,
        "l2.bias": mx.random.normal((3,), key=k[3]) * 0.1,
    }
    x = mx.random.normal((5, 4), key=k[4])
    mx.save_safetensors(os.path.join(out_dir, "weights.safetensors"), {**w, "x": x},
                        metadata={"model": "mlp 4-16-3", "classes": "3"})
    mx.save(os.path.join(out_dir, "expected.npy"), model(w, x))


if __name__ == "__main__":
    main(*sys.argv[1:])
