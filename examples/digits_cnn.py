"""Train a small convolutional network on scikit-learn's bundled 8x8 digits
with ``ember.nn`` and ``ember.optimizers``.

The same data, split, loop and plot as ``digits_mlp.py`` (imported from it),
with the images kept as ``(N, 8, 8, 1)`` arrays (channels last, as
``nn.Conv2d`` takes them): two 3x3 convolutions with ReLU and 2x2 max
pooling (8x8 -> 4x4 -> 2x2), dropout, then a linear classifier.

    pip install ".[examples]" && python examples/digits_cnn.py
    python examples/digits_cnn.py --steps 50          # shortened run (CI)
    python examples/digits_cnn.py --plot digits_cnn.png
"""

import argparse

import ember.core as mx
import ember.nn as nn

from digits_mlp import load_data, plot_curves, train


class CNN(nn.Module):
    """conv(1->c1) relu pool, conv(c1->c2) relu pool, dropout, linear(4*c2->10)."""

    def __init__(self, c1=16, c2=32, dropout=0.1):
        super().__init__()
        self.conv1 = nn.Conv2d(1, c1, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(c1, c2, kernel_size=3, padding=1)
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(2 * 2 * c2, 10)

    def __call__(self, x):
        x = self.pool(nn.relu(self.conv1(x)))     # (N, 4, 4, c1)
        x = self.pool(nn.relu(self.conv2(x)))     # (N, 2, 2, c2)
        x = self.drop(x.reshape(x.shape[0], -1))
        return self.head(x)


def main(steps=600, channels=(16, 32), batch_size=64, lr=3e-3, seed=0, plot=None, progress=True):
    """Trains the CNN and reports what it measured.

    Args:
        steps (int): Adam steps (600 is about 27 epochs). Default: 600.
        channels (tuple): the two convolutions' output channels.
            Default: (16, 32).
        batch_size (int): examples per step. Default: 64.
        lr (float): the learning rate. Default: 3e-3.
        seed (int): seeds the initialisation, the dropout masks, the split
            and the batch order. Default: 0.
        plot (str, optional): write the loss and accuracy curves to this
            PNG. Default: None.
        progress (bool): show a progress bar. Default: True.

    Returns:
        dict: see ``digits_mlp.train``: ``initial_loss``, ``final_loss``,
        ``accuracy``, ``losses``, ``evals``, ``seconds``.
    """
    mx.random.seed(seed)
    data = load_data(seed, image=True)
    model = CNN(*channels)
    mx.eval(model.parameters())
    out = train(model, data, steps, batch_size, lr, seed, eval_every=max(1, min(100, steps // 10)),
                progress=progress, desc="digits CNN")
    print(f"training loss {out['initial_loss']:.4f} -> {out['final_loss']:.4f}, "
          f"test accuracy {out['accuracy']:.4f}, {steps} steps in {out['seconds']:.2f} s")
    if plot:
        plot_curves(plot, out["losses"], out["evals"], f"digits CNN (channels {channels[0]}, {channels[1]}; Adam)")
        print(f"wrote {plot}")
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=600, help="Adam steps (default: 600)")
    parser.add_argument("--channels", type=int, nargs=2, default=(16, 32), metavar=("C1", "C2"),
                        help="output channels of the two convolutions (default: 16 32)")
    parser.add_argument("--batch-size", type=int, default=64, help="batch size (default: 64)")
    parser.add_argument("--lr", type=float, default=3e-3, help="learning rate (default: 3e-3)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    parser.add_argument("--plot", metavar="PNG", help="write the loss/accuracy curves to this PNG")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    args = parser.parse_args()
    result = main(steps=args.steps, channels=tuple(args.channels), batch_size=args.batch_size, lr=args.lr,
                  seed=args.seed, plot=args.plot, progress=not args.no_progress)
    if result["final_loss"] >= result["initial_loss"]:
        raise SystemExit(f"the training loss did not fall: {result['initial_loss']:.4f} -> "
                         f"{result['final_loss']:.4f}")
