"""Train an MLP on scikit-learn's bundled 8x8 digits with ``ember.nn`` and
``ember.optimizers``.

The data ships inside scikit-learn (nothing is downloaded): 1797 images of
8x8 pixels, split 80/20 into training and test sets with a seeded
permutation. The model is two hidden layers of ReLUs, trained with Adam on
the cross-entropy loss; ``nn.value_and_grad`` differentiates the loss with
respect to the model's parameters and ``optimizer.update`` applies the step.
A tqdm bar shows the progress; ``--plot PATH`` writes a PNG of the training
loss and the test accuracy (matplotlib).

    pip install ".[examples]" && python examples/digits_mlp.py
    python examples/digits_mlp.py --steps 50          # shortened run (CI)
    python examples/digits_mlp.py --plot digits_mlp.png
"""

import argparse
import time

import numpy as np
from sklearn.datasets import load_digits
from tqdm import tqdm

import ember.core as mx
import ember.nn as nn
import ember.optimizers as optim


def load_data(seed=0, image=False):
    """The digits, scaled to [0, 1] and split 80/20 with a seeded shuffle.

    Args:
        seed (int): the seed of the split. Default: 0.
        image (bool): give the images as ``(N, 8, 8, 1)`` (channels last)
            instead of ``(N, 64)`` vectors. Default: False.

    Returns:
        tuple: ``(x_train, y_train, x_test, y_test)``, NumPy arrays (float32
        images, int32 labels).
    """
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    if image:
        x = x.reshape(-1, 8, 8, 1)
    y = digits.target.astype(np.int32)
    order = np.random.default_rng(seed).permutation(len(x))
    split = int(0.8 * len(x))
    tr, te = order[:split], order[split:]
    return x[tr], y[tr], x[te], y[te]


def batches(n, batch_size, rng):
    """Endless stream of index batches: a fresh permutation per epoch, the
    last short batch of each epoch dropped."""
    while True:
        perm = rng.permutation(n)
        for i in range(0, n - batch_size + 1, batch_size):
            yield perm[i:i + batch_size]


def plot_curves(path, losses, evals, title):
    """Writes a PNG with the training loss per step and the test accuracy
    at each evaluation.

    Args:
        path (str): the PNG file.
        losses (list): the training loss of each step.
        evals (list): ``(step, accuracy)`` pairs.
        title (str): the figure title.

    Returns:
        None
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    ax1.plot(np.arange(1, len(losses) + 1), losses, lw=0.8)
    ax1.set_xlabel("step")
    ax1.set_ylabel("training loss")
    ax1.set_yscale("log")
    ax1.grid(alpha=0.3)
    steps, accs = zip(*evals) if evals else ((), ())
    ax2.plot(steps, accs, marker="o")
    ax2.set_xlabel("step")
    ax2.set_ylabel("test accuracy")
    ax2.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


class MLP(nn.Module):
    """``in_dims -> hidden -> hidden -> out_dims`` with ReLUs in between."""

    def __init__(self, in_dims, hidden, out_dims):
        super().__init__()
        self.layers = [nn.Linear(in_dims, hidden), nn.Linear(hidden, hidden), nn.Linear(hidden, out_dims)]

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = nn.relu(layer(x))
        return self.layers[-1](x)


def accuracy(model, x, y):
    """The fraction of ``x`` that ``model`` classifies as ``y``."""
    pred = mx.argmax(model(mx.array(x)), axis=-1)
    return float(np.mean(np.array(pred) == y))


def train(model, data, steps, batch_size, lr, seed, eval_every, progress, desc):
    """The training loop the two digits examples share.

    Args:
        model (nn.Module): the classifier.
        data (tuple): ``load_data``'s four arrays.
        steps (int): the number of Adam steps.
        batch_size (int): examples per step.
        lr (float): Adam's learning rate.
        seed (int): the seed of the batch order.
        eval_every (int): steps between test-accuracy evaluations.
        progress (bool): show a tqdm bar.
        desc (str): the bar's label.

    Returns:
        dict: ``initial_loss`` and ``final_loss`` (cross entropy on the whole
        training set before and after), ``accuracy`` (test, at the end),
        ``losses`` (per step), ``evals`` (``(step, accuracy)`` pairs) and
        ``seconds`` (the training loop's wall time).
    """
    x_tr, y_tr, x_te, y_te = data
    xa_tr, ya_tr = mx.array(x_tr), mx.array(y_tr)

    def loss_fn(x, y):
        return nn.losses.cross_entropy(model(x), y, reduction="mean")

    def full_loss():
        model.eval()
        loss = loss_fn(xa_tr, ya_tr).item()
        model.train()
        return loss

    loss_and_grad = nn.value_and_grad(model, loss_fn)
    optimizer = optim.Adam(learning_rate=lr)
    rng = np.random.default_rng(seed)

    initial_loss = full_loss()
    losses, evals = [], []
    start = time.perf_counter()
    bar = tqdm(range(1, steps + 1), desc=desc, disable=not progress, leave=True)
    stream = batches(len(x_tr), batch_size, rng)
    for step in bar:
        idx = next(stream)
        loss, grads = loss_and_grad(mx.array(x_tr[idx]), mx.array(y_tr[idx]))
        optimizer.update(model, grads)
        mx.eval(model.parameters(), optimizer.state, loss)
        losses.append(loss.item())
        if step % eval_every == 0 or step == steps:
            model.eval()
            evals.append((step, accuracy(model, x_te, y_te)))
            model.train()
            bar.set_postfix(loss=f"{np.mean(losses[-eval_every:]):.4f}", test_acc=f"{evals[-1][1]:.3f}")
    seconds = time.perf_counter() - start
    bar.close()
    return {"initial_loss": initial_loss, "final_loss": full_loss(), "accuracy": evals[-1][1],
            "losses": losses, "evals": evals, "seconds": seconds}


def main(steps=1000, hidden=128, batch_size=64, lr=2e-3, seed=0, plot=None, progress=True):
    """Trains the MLP and reports what it measured.

    Args:
        steps (int): Adam steps (1000 is about 45 epochs). Default: 1000.
        hidden (int): width of the hidden layers. Default: 128.
        batch_size (int): examples per step. Default: 64.
        lr (float): the learning rate. Default: 2e-3.
        seed (int): seeds the initialisation, the split and the batch order.
            Default: 0.
        plot (str, optional): write the loss and accuracy curves to this
            PNG. Default: None.
        progress (bool): show a progress bar. Default: True.

    Returns:
        dict: see :func:`train`.
    """
    mx.random.seed(seed)
    data = load_data(seed)
    model = MLP(data[0].shape[1], hidden, 10)
    mx.eval(model.parameters())
    out = train(model, data, steps, batch_size, lr, seed, eval_every=max(1, min(100, steps // 10)),
                progress=progress, desc="digits MLP")
    print(f"training loss {out['initial_loss']:.4f} -> {out['final_loss']:.4f}, "
          f"test accuracy {out['accuracy']:.4f}, {steps} steps in {out['seconds']:.2f} s")
    if plot:
        plot_curves(plot, out["losses"], out["evals"], f"digits MLP ({hidden} hidden, Adam)")
        print(f"wrote {plot}")
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1000, help="Adam steps (default: 1000)")
    parser.add_argument("--hidden", type=int, default=128, help="hidden width (default: 128)")
    parser.add_argument("--batch-size", type=int, default=64, help="batch size (default: 64)")
    parser.add_argument("--lr", type=float, default=2e-3, help="learning rate (default: 2e-3)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    parser.add_argument("--plot", metavar="PNG", help="write the loss/accuracy curves to this PNG")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    args = parser.parse_args()
    result = main(steps=args.steps, hidden=args.hidden, batch_size=args.batch_size, lr=args.lr,
                  seed=args.seed, plot=args.plot, progress=not args.no_progress)
    if result["final_loss"] >= result["initial_loss"]:
        raise SystemExit(f"the training loss did not fall: {result['initial_loss']:.4f} -> "
                         f"{result['final_loss']:.4f}")
