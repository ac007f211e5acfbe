"""Train a two-layer MLP on scikit-learn's bundled 8x8 digits with Ember.

The data ships inside scikit-learn (no download). `mx.value_and_grad`
differentiates the loss with respect to a dict of parameters; an SGD step is
a `tree_map` over parameters and gradients; ember.core's lazy graph builds
each step and `mx.eval` runs it.

    pip install . scikit-learn && python examples/train_digits.py
"""
import time

import numpy as np
from sklearn.datasets import load_digits

import ember.core as mx
from ember.utils import tree_map


def one_hot(y, n):
    return mx.array(np.eye(n, dtype=np.float32)[y])


def main(epochs=30, hidden=128, lr=0.1, batch=64, seed=0):
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(x))
    split = int(0.8 * len(x))
    tr, te = order[:split], order[split:]
    x_tr, y_tr, x_te, y_te = x[tr], y[tr], mx.array(x[te]), y[te]

    d_in, d_out = x.shape[1], 10
    params = {
        "w1": mx.array(rng.normal(0, np.sqrt(2 / d_in), (d_in, hidden)).astype(np.float32)),
        "b1": mx.zeros((hidden,)),
        "w2": mx.array(rng.normal(0, np.sqrt(1 / hidden), (hidden, d_out)).astype(np.float32)),
        "b2": mx.zeros((d_out,)),
    }

    def forward(p, xb):
        h = mx.maximum(xb @ p["w1"] + p["b1"], 0.0)
        return h @ p["w2"] + p["b2"]

    def loss_fn(p, xb, yb):
        logits = forward(p, xb)
        return mx.mean(mx.logsumexp(logits, axis=-1) - mx.sum(yb * logits, axis=-1))

    loss_and_grad = mx.value_and_grad(loss_fn)

    start = time.perf_counter()
    for epoch in range(epochs):
        perm = rng.permutation(len(x_tr))
        total = 0.0
        for i in range(0, len(perm), batch):
            idx = perm[i:i + batch]
            xb, yb = mx.array(x_tr[idx]), one_hot(y_tr[idx], d_out)
            n = xb.shape[0]
            loss, grads = loss_and_grad(params, xb, yb)
            params = tree_map(lambda w, g: w - lr * g, params, grads)
            mx.eval(params, loss)
            total += loss.item() * n
        if epoch % 5 == 4 or epoch == epochs - 1:
            pred = mx.argmax(forward(params, x_te), axis=1)
            acc = float(np.mean(np.array(pred) == y_te))
            print(f"epoch {epoch + 1:3d}  loss {total / len(x_tr):.4f}  test accuracy {acc:.3f}")
    print(f"trained in {time.perf_counter() - start:.2f} s")
    return acc


if __name__ == "__main__":
    acc = main()
    assert acc > 0.9, f"accuracy {acc:.3f} is too low"
