"""LoRA: fine-tune a small transformer by training low-rank adapters only.

The base model is ``char_transformer.py``'s character-level transformer,
first trained on Python source (the standard library's modules, as there).
Fine-tuning moves it to another kind of text that every Python has: the
English prose of the documentation topics in ``pydoc_data.topics`` (what
``help("assert")`` prints). ``LoRALinear``, a subclass of ``nn.Module``,
wraps a frozen ``nn.Linear`` and adds ``scale * x @ A @ B`` with ``A`` of
shape ``(in, rank)`` and ``B`` of shape ``(rank, out)`` (zero at first, so
the adapted model starts as the base). The whole base model is frozen with
``freeze()``, the attention's query and value projections are replaced by
LoRA layers, and only the adapters' parameters reach the optimizer. At the
end the script checks that every base weight is bit for bit what it was,
and that fusing the adapters into the weights (``W + scale * (A @ B).T``)
gives the same logits.

    pip install ".[examples]" && python examples/lora.py
    python examples/lora.py --pretrain-steps 20 --steps 20    # shortened run (CI)
"""

import argparse
import math
import time

import numpy as np
from tqdm import tqdm

import ember.core as mx
import ember.nn as nn
import ember.optimizers as optim
from ember.utils import tree_flatten

from char_transformer import VOCAB, TransformerLM, encode, eval_windows, lm_loss, load_corpus, train_batch


class LoRALinear(nn.Module):
    """A frozen linear layer plus a trainable low-rank update:
    ``base(x) + scale * (x @ lora_a) @ lora_b``.

    Args:
        base (nn.Linear): the layer to adapt (kept as the child ``base``).
        rank (int): the rank of the update. Default: 8.
        alpha (float): ``scale = alpha / rank``. Default: 16.
    """

    def __init__(self, base, rank=8, alpha=16.0):
        super().__init__()
        out_dims, in_dims = base.weight.shape
        self.base = base
        self.scale = alpha / rank
        bound = 1.0 / math.sqrt(in_dims)
        self.lora_a = mx.random.uniform(low=-bound, high=bound, shape=(in_dims, rank))
        self.lora_b = mx.zeros((rank, out_dims))

    def __call__(self, x):
        return self.base(x) + self.scale * ((x @ self.lora_a) @ self.lora_b)

    def fuse(self):
        """The plain ``nn.Linear`` equal to this layer: the update merged
        into the base weight."""
        out_dims, in_dims = self.base.weight.shape
        fused = nn.Linear(in_dims, out_dims, bias="bias" in self.base)
        delta = (self.scale * (self.lora_a @ self.lora_b)).T
        fused.weight = self.base.weight + delta.astype(self.base.weight.dtype)
        if "bias" in self.base:
            fused.bias = self.base.bias
        return fused


def apply_lora(model, rank, alpha):
    """Freezes ``model`` and puts LoRA layers on every block's query and
    value projections (in place).

    Returns:
        list: the LoRA layers.
    """
    model.freeze()
    layers = []
    for block in model.blocks:
        block.attn.query_proj = LoRALinear(block.attn.query_proj, rank, alpha)
        block.attn.value_proj = LoRALinear(block.attn.value_proj, rank, alpha)
        layers += [block.attn.query_proj, block.attn.value_proj]
    return layers


def fuse_lora(model):
    """Replaces the LoRA layers by their fused ``nn.Linear`` (in place)."""
    for block in model.blocks:
        for name in ("query_proj", "value_proj"):
            layer = block.attn[name]
            if isinstance(layer, LoRALinear):
                block.attn[name] = layer.fuse()


def docs_corpus(max_chars):
    """The documentation topics of ``pydoc_data.topics``, sorted by name,
    joined by blank lines."""
    from pydoc_data.topics import topics
    return "\n\n".join(topics[k].expandtabs(4) for k in sorted(topics))[:max_chars]


def run(model, data, steps, batch_size, context, lr, seed, desc, progress):
    """Trains the model's trainable parameters with Adam on random windows
    of ``data``; returns the training losses."""
    loss_and_grad = nn.value_and_grad(model, lambda x, y: lm_loss(model, x, y))
    optimizer = optim.Adam(learning_rate=lr)
    losses = []
    bar = tqdm(range(steps), desc=desc, disable=not progress)
    for step in bar:
        x, y = train_batch(data, step, batch_size, context, seed)
        loss, grads = loss_and_grad(x, y)
        optimizer.update(model, grads)
        mx.eval(model.parameters(), optimizer.state, loss)
        losses.append(loss.item())
        bar.set_postfix(loss=f"{losses[-1]:.3f}")
    bar.close()
    return losses


def main(pretrain_steps=400, steps=200, dims=64, heads=4, layers=2, context=64, batch_size=16,
         pretrain_lr=1e-3, lr=1e-2, rank=8, alpha=16.0, seed=0, chars=400_000, progress=True):
    """Pre-trains the base model on code, then LoRA-fine-tunes it on prose.

    Args:
        pretrain_steps (int): steps of full training on the code. Default: 400.
        steps (int): LoRA fine-tuning steps on the prose. Default: 200.
        dims (int): model width. Default: 64.
        heads (int): attention heads. Default: 4.
        layers (int): transformer blocks. Default: 2.
        context (int): characters per window. Default: 64.
        batch_size (int): windows per step. Default: 16.
        pretrain_lr (float): the pre-training learning rate. Default: 1e-3.
        lr (float): the fine-tuning learning rate. Default: 1e-2.
        rank (int): the adapters' rank. Default: 8.
        alpha (float): the adapters' scale times the rank. Default: 16.
        seed (int): seeds everything. Default: 0.
        chars (int): the length of each corpus. Default: 400_000.
        progress (bool): show progress bars. Default: True.

    Returns:
        dict: ``initial_loss`` and ``final_loss`` (validation loss on the
        prose before and after fine-tuning), ``code_loss_before`` and
        ``code_loss_after`` (validation loss on the code),
        ``trainable_parameters`` and ``total_parameters`` (while
        fine-tuning), ``base_unchanged`` (every base weight equal to its
        value before fine-tuning), ``fused_max_diff`` (largest logit
        difference between the adapted and the fused model), ``losses``
        (fine-tuning losses) and ``seconds``.
    """
    start = time.perf_counter()
    mx.random.seed(seed)
    code, prose = encode(load_corpus(chars)), encode(docs_corpus(chars))
    code_train, code_val = code[:int(0.9 * len(code))], code[int(0.9 * len(code)):]
    prose_train, prose_val = prose[:int(0.9 * len(prose))], prose[int(0.9 * len(prose)):]
    code_eval, prose_eval = eval_windows(code_val, context), eval_windows(prose_val, context)

    def val(windows):
        return lm_loss(model, *windows).item()

    model = TransformerLM(len(VOCAB), dims, heads, layers)
    mx.eval(model.parameters())
    run(model, code_train, pretrain_steps, batch_size, context, pretrain_lr, seed, "pre-train (code)", progress)
    code_before, prose_before = val(code_eval), val(prose_eval)
    print(f"base model after {pretrain_steps} steps on code: validation loss {code_before:.3f} on code, "
          f"{prose_before:.3f} on prose")

    base = {k: np.array(v) for k, v in tree_flatten(model.parameters())}
    apply_lora(model, rank, alpha)
    mx.eval(model.parameters())
    trainable = sum(p.size for _, p in tree_flatten(model.trainable_parameters()))
    total = sum(p.size for _, p in tree_flatten(model.parameters()))
    names = [k for k, _ in tree_flatten(model.trainable_parameters())]
    assert all(k.rsplit(".", 1)[-1] in ("lora_a", "lora_b") for k in names), names
    print(f"LoRA rank {rank} on the query and value projections: {trainable:,} trainable of {total:,} "
          f"parameters ({trainable / total:.1%})")
    assert abs(val(prose_eval) - prose_before) < 1e-6, "with lora_b = 0 the adapted model must be the base"

    losses = run(model, prose_train, steps, batch_size, context, lr, seed + 1, "LoRA fine-tune (prose)", progress)
    prose_after, code_after = val(prose_eval), val(code_eval)
    print(f"after {steps} LoRA steps on prose: validation loss {prose_before:.3f} -> {prose_after:.3f} on prose, "
          f"{code_before:.3f} -> {code_after:.3f} on code")

    # the base weights: the LoRA layers hold them as `<...>.base.weight`
    after = {k.replace(".base.", "."): np.array(v) for k, v in tree_flatten(model.parameters())
             if not k.endswith(("lora_a", "lora_b"))}
    unchanged = after.keys() == base.keys() and all(np.array_equal(after[k], base[k]) for k in base)
    print(f"base weights unchanged: {unchanged} ({len(base)} arrays compared bit for bit)")

    x = prose_eval[0][:4]
    adapted = np.array(model(x))
    fuse_lora(model)
    fused_diff = float(np.max(np.abs(np.array(model(x)) - adapted)))
    print(f"fused the adapters into the weights: largest logit difference {fused_diff:.2e}")
    seconds = time.perf_counter() - start
    print(f"total {seconds:.1f} s")
    return {"initial_loss": prose_before, "final_loss": prose_after, "code_loss_before": code_before,
            "code_loss_after": code_after, "trainable_parameters": trainable, "total_parameters": total,
            "base_unchanged": unchanged, "fused_max_diff": fused_diff, "losses": losses, "seconds": seconds}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pretrain-steps", type=int, default=400, help="base-model steps (default: 400)")
    parser.add_argument("--steps", type=int, default=200, help="LoRA fine-tuning steps (default: 200)")
    parser.add_argument("--dims", type=int, default=64, help="model width (default: 64)")
    parser.add_argument("--layers", type=int, default=2, help="transformer blocks (default: 2)")
    parser.add_argument("--rank", type=int, default=8, help="LoRA rank (default: 8)")
    parser.add_argument("--lr", type=float, default=1e-2, help="fine-tuning learning rate (default: 1e-2)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    args = parser.parse_args()
    result = main(pretrain_steps=args.pretrain_steps, steps=args.steps, dims=args.dims, layers=args.layers,
                  rank=args.rank, lr=args.lr, seed=args.seed, progress=not args.no_progress)
    if not result["base_unchanged"]:
        raise SystemExit("a base weight changed during LoRA fine-tuning")
    if result["final_loss"] >= result["initial_loss"]:
        raise SystemExit(f"the fine-tuning loss did not fall: {result['initial_loss']:.3f} -> "
                         f"{result['final_loss']:.3f}")
