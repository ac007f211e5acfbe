"""Per-example gradients with ``vmap(grad(...))``, and training with
per-example gradient clipping (the update of DP-SGD).

``mx.grad`` of the loss of a single example, mapped over the batch with
``mx.vmap``, gives every example's gradient in one vectorized call. The
script first checks it against the plain way, a Python loop that calls
``grad`` once per example: the two must agree (asserted), and it prints how
long each takes. Then it trains the digits MLP of ``digits_mlp.py`` with
those gradients: each example's gradient is clipped to norm ``--clip``, the
clipped gradients are averaged, Gaussian noise of standard deviation
``--noise * --clip / batch`` is added (DP-SGD's step, without its privacy
accounting) and Adam applies the result.

    pip install ".[examples]" && python examples/per_example_grads.py
    python examples/per_example_grads.py --steps 30     # shortened run (CI)
"""

import argparse
import time

import numpy as np
from tqdm import tqdm

import ember.core as mx
import ember.nn as nn
import ember.optimizers as optim
from ember.utils import tree_flatten, tree_map, tree_unflatten

from digits_mlp import MLP, accuracy, batches, load_data


def functional(model, fn):
    """``fn`` as a pure function of the model's trainable parameters:
    ``call(params, *args)`` puts ``params`` into ``model``, evaluates
    ``fn(*args)`` and puts the original parameters back, so the transforms
    can trace it and no traced array is left in the model."""

    def call(params, *args):
        saved = model.trainable_parameters()
        model.update(params)
        try:
            return fn(*args)
        finally:
            model.update(saved)

    return call


def per_example_grad_fns(model):
    """The two ways to get one gradient per example.

    Returns:
        tuple: ``(vectorized, looped)``, both ``f(params, x, y)`` returning a
        tree shaped like ``params`` whose leaves have a leading batch axis.
    """
    def example_loss(x, y):  # one example: x (features...), y a scalar label
        return nn.losses.cross_entropy(model(x[None]), y[None], reduction="mean")

    grad_one = mx.grad(functional(model, example_loss))
    vectorized = mx.vmap(grad_one, in_axes=(None, 0, 0))

    def looped(params, x, y):
        grads = [grad_one(params, x[i], y[i]) for i in range(x.shape[0])]
        return tree_map(lambda *g: mx.stack(g), *grads)

    return vectorized, looped


def clipped_mean(grads, clip):
    """Clips each example's gradient (the whole tree) to norm ``clip`` and
    averages over the examples.

    Returns:
        tuple: ``(mean gradient tree, per-example norms)``.
    """
    leaves = [g for _, g in tree_flatten(grads)]
    n = leaves[0].shape[0]
    norms = mx.sqrt(sum(mx.sum(mx.square(g.reshape(n, -1)), axis=1) for g in leaves))
    scale = mx.minimum(1.0, clip / (norms + 1e-12))
    mean = tree_map(lambda g: mx.mean(g * scale.reshape((n,) + (1,) * (g.ndim - 1)), axis=0), grads)
    return mean, norms


def compare(model, x, y, repeats=3):
    """Per-example gradients of a batch, vectorized and looped: checks they
    agree and times both (the best of ``repeats``).

    Returns:
        dict: ``max_abs_diff``, ``vmap_seconds``, ``loop_seconds``,
        ``speedup``.
    """
    vectorized, looped = per_example_grad_fns(model)
    params = model.trainable_parameters()

    def best(fn):
        times, out = [], None
        for _ in range(repeats):
            start = time.perf_counter()
            out = fn(params, x, y)
            mx.eval(out)
            times.append(time.perf_counter() - start)
        return out, min(times)

    g_vmap, t_vmap = best(vectorized)
    g_loop, t_loop = best(looped)
    shapes = {name: tuple(p.shape) for name, p in tree_flatten(params)}
    diff = 0.0
    for (name, a), (_, b) in zip(tree_flatten(g_vmap), tree_flatten(g_loop)):
        a, b = np.array(a), np.array(b)
        assert a.shape == b.shape == (x.shape[0],) + shapes[name], name
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6, err_msg=f"per-example gradient of {name}")
        diff = max(diff, float(np.max(np.abs(a - b))))
    return {"max_abs_diff": diff, "vmap_seconds": t_vmap, "loop_seconds": t_loop, "speedup": t_loop / t_vmap}


def main(steps=400, hidden=128, batch_size=64, lr=2e-3, clip=1.0, noise=0.5, seed=0, progress=True):
    """Compares vmap(grad) with a loop of grad, then trains with per-example
    clipping.

    Args:
        steps (int): training steps. Default: 400.
        hidden (int): the MLP's hidden width. Default: 128.
        batch_size (int): examples per step (and in the comparison).
            Default: 64.
        lr (float): Adam's learning rate. Default: 2e-3.
        clip (float): the norm each example's gradient is clipped to.
            Default: 1.0.
        noise (float): the noise multiplier (0: clipping only). Default: 0.5.
        seed (int): seeds the initialisation, the split, the batches and the
            noise. Default: 0.
        progress (bool): show a progress bar. Default: True.

    Returns:
        dict: :func:`compare`'s measurements, plus ``initial_loss`` and
        ``final_loss`` (training-set cross entropy before and after),
        ``accuracy`` (test), ``clipped_fraction`` (of the examples in the
        last step) and ``seconds`` (the training loop).
    """
    mx.random.seed(seed)
    x_tr, y_tr, x_te, y_te = load_data(seed)
    model = MLP(x_tr.shape[1], hidden, 10)
    mx.eval(model.parameters())

    out = compare(model, mx.array(x_tr[:batch_size]), mx.array(y_tr[:batch_size]))
    print(f"per-example gradients of {batch_size} examples: vmap(grad) {out['vmap_seconds'] * 1e3:.1f} ms, "
          f"a loop of grad {out['loop_seconds'] * 1e3:.1f} ms ({out['speedup']:.1f}x faster with vmap); "
          f"largest difference {out['max_abs_diff']:.2e}")

    vectorized, _ = per_example_grad_fns(model)
    xa_tr, ya_tr = mx.array(x_tr), mx.array(y_tr)

    def train_loss():
        return nn.losses.cross_entropy(model(xa_tr), ya_tr, reduction="mean").item()

    optimizer = optim.Adam(learning_rate=lr)
    rng = np.random.default_rng(seed)
    stream = batches(len(x_tr), batch_size, rng)
    key = mx.random.key(seed)
    initial_loss = train_loss()
    start = time.perf_counter()
    bar = tqdm(range(steps), desc="per-example clipping", disable=not progress)
    for step in bar:
        idx = next(stream)
        grads = vectorized(model.trainable_parameters(), mx.array(x_tr[idx]), mx.array(y_tr[idx]))
        mean, norms = clipped_mean(grads, clip)
        if noise > 0:
            key, sub = mx.random.split(key)
            flat = tree_flatten(mean)
            keys = mx.random.split(sub, len(flat))
            sigma = noise * clip / batch_size
            mean = tree_unflatten([(k, g + sigma * mx.random.normal(g.shape, key=keys[i]))
                                   for i, (k, g) in enumerate(flat)])
        optimizer.update(model, mean)
        mx.eval(model.parameters(), optimizer.state, norms)
        if step % 50 == 49:
            bar.set_postfix(median_grad_norm=f"{float(np.median(np.array(norms))):.3f}")
    seconds = time.perf_counter() - start
    bar.close()
    final_loss = train_loss()
    out.update(initial_loss=initial_loss, final_loss=final_loss, accuracy=accuracy(model, x_te, y_te),
               clipped_fraction=float(np.mean(np.array(norms) > clip)), seconds=seconds)
    print(f"training loss {initial_loss:.4f} -> {final_loss:.4f}, test accuracy {out['accuracy']:.4f} "
          f"({steps} steps with per-example clipping to {clip} and noise {noise} in {seconds:.2f} s; "
          f"{out['clipped_fraction']:.0%} of the last batch clipped)")
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=400, help="training steps (default: 400)")
    parser.add_argument("--hidden", type=int, default=128, help="hidden width (default: 128)")
    parser.add_argument("--batch-size", type=int, default=64, help="batch size (default: 64)")
    parser.add_argument("--lr", type=float, default=2e-3, help="learning rate (default: 2e-3)")
    parser.add_argument("--clip", type=float, default=1.0, help="per-example gradient norm bound (default: 1)")
    parser.add_argument("--noise", type=float, default=0.5, help="noise multiplier (default: 0.5)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    args = parser.parse_args()
    result = main(steps=args.steps, hidden=args.hidden, batch_size=args.batch_size, lr=args.lr, clip=args.clip,
                  noise=args.noise, seed=args.seed, progress=not args.no_progress)
    if result["final_loss"] >= result["initial_loss"]:
        raise SystemExit(f"the training loss did not fall: {result['initial_loss']:.4f} -> "
                         f"{result['final_loss']:.4f}")
