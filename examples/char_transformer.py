"""A character-level transformer language model, trained on the Python
standard library's own source files.

The corpus is already on every machine: the top-level ``.py`` files of the
standard library (the folder of ``os.py``), in sorted order, up to
``--chars`` characters; the first 90% trains, the last 10% (other files)
measures the validation loss. The vocabulary is fixed (newline and the 95
printable ASCII characters; tabs become spaces and anything else ``?``), so
a checkpoint does not depend on the corpus.

The model is a small pre-norm transformer written here from ``nn.Linear``,
``nn.RMSNorm`` and ``nn.Embedding``: rotary position embeddings
(``mx.fast.rope``), causal attention (``mx.fast.scaled_dot_product_attention``),
a GELU MLP, and output logits tied to the embedding table. It trains with
AdamW; the loss is printed as it falls, and at the end the model writes a
sample of text.

``--save DIR`` writes a checkpoint (``model.save_weights`` for the model,
``mx.save_safetensors`` for the optimizer state, a JSON file for the
configuration and the step count); ``--resume DIR`` continues from one. The
batch of step ``s`` is drawn from a generator seeded with ``(seed, s)``, so
a resumed run sees exactly the batches an uninterrupted one would.

    pip install ".[examples]" && python examples/char_transformer.py
    python examples/char_transformer.py --steps 20               # shortened run (CI)
    python examples/char_transformer.py --steps 400 --save ckpt  # then ...
    python examples/char_transformer.py --steps 400 --resume ckpt --save ckpt
"""

import argparse
import glob
import json
import math
import os
import time

import numpy as np
from tqdm import tqdm

import ember.core as mx
import ember.nn as nn
import ember.optimizers as optim
from ember.utils import tree_flatten, tree_unflatten

# ---------------------------------------------------------------------------
# the corpus
# ---------------------------------------------------------------------------

VOCAB = "\n" + "".join(chr(c) for c in range(32, 127))
_UNKNOWN = VOCAB.index("?")
_TABLE = np.full(256, _UNKNOWN, dtype=np.int32)
for _i, _c in enumerate(VOCAB):
    _TABLE[ord(_c)] = _i


def stdlib_files():
    """The standard library's top-level ``.py`` files, sorted by name, those
    whose names start with an underscore (private modules) left out."""
    root = os.path.dirname(os.__file__)
    return [f for f in sorted(glob.glob(os.path.join(root, "*.py"))) if not os.path.basename(f).startswith("_")]


def load_corpus(max_chars=1_000_000, files=None):
    """Reads files (by default :func:`stdlib_files`) in order, joined by
    blank lines, until ``max_chars`` characters.

    Args:
        max_chars (int): the corpus length. Default: 1_000_000.
        files (list, optional): the files to read. Default: None, the
            standard library's.

    Returns:
        str: the text, tabs expanded to four spaces.
    """
    parts, total = [], 0
    for path in files if files is not None else stdlib_files():
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read().expandtabs(4) + "\n\n"
        parts.append(text)
        total += len(text)
        if total >= max_chars:
            break
    return "".join(parts)[:max_chars]


def encode(text):
    """The token ids of ``text`` (int32 NumPy array); characters outside
    the vocabulary become ``?``."""
    raw = np.frombuffer(text.encode("ascii", errors="replace"), dtype=np.uint8)
    return _TABLE[raw]


def decode(ids):
    """The text of a sequence of token ids."""
    return "".join(VOCAB[int(i)] for i in ids)


# ---------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------

class Attention(nn.Module):
    """Multi-head causal self-attention with rotary position embeddings.

    Args:
        dims (int): the model width.
        num_heads (int): the number of heads (``dims`` a multiple of it).
    """

    def __init__(self, dims, num_heads):
        super().__init__()
        if dims % num_heads:
            raise ValueError(f"[Attention] dims ({dims}) must be a multiple of num_heads ({num_heads}).")
        self.num_heads = num_heads
        self.query_proj = nn.Linear(dims, dims, bias=False)
        self.key_proj = nn.Linear(dims, dims, bias=False)
        self.value_proj = nn.Linear(dims, dims, bias=False)
        self.out_proj = nn.Linear(dims, dims, bias=False)

    def __call__(self, x):
        B, L, D = x.shape
        H = self.num_heads

        def heads(t):  # (B, L, D) -> (B, H, L, D / H)
            return t.reshape(B, L, H, D // H).transpose(0, 2, 1, 3)

        q, k, v = heads(self.query_proj(x)), heads(self.key_proj(x)), heads(self.value_proj(x))
        q = mx.fast.rope(q, D // H, traditional=False, base=10000.0, scale=1.0, offset=0)
        k = mx.fast.rope(k, D // H, traditional=False, base=10000.0, scale=1.0, offset=0)
        o = mx.fast.scaled_dot_product_attention(q, k, v, scale=1.0 / math.sqrt(D // H), mask="causal")
        return self.out_proj(o.transpose(0, 2, 1, 3).reshape(B, L, D))


class Block(nn.Module):
    """Pre-norm transformer block: ``x + attn(norm(x))``, then
    ``x + mlp(norm(x))`` with a GELU MLP of width ``4 * dims``."""

    def __init__(self, dims, num_heads):
        super().__init__()
        self.attn_norm = nn.RMSNorm(dims)
        self.attn = Attention(dims, num_heads)
        self.mlp_norm = nn.RMSNorm(dims)
        self.mlp_in = nn.Linear(dims, 4 * dims)
        self.mlp_out = nn.Linear(4 * dims, dims)

    def __call__(self, x):
        x = x + self.attn(self.attn_norm(x))
        return x + self.mlp_out(nn.gelu(self.mlp_in(self.mlp_norm(x))))


class TransformerLM(nn.Module):
    """Token embedding, ``num_layers`` blocks, a final RMSNorm and logits
    through the (tied) embedding table.

    Args:
        vocab_size (int): the number of tokens.
        dims (int): the model width.
        num_heads (int): attention heads per block.
        num_layers (int): the number of blocks.
    """

    def __init__(self, vocab_size, dims, num_heads, num_layers):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, dims)
        self.blocks = [Block(dims, num_heads) for _ in range(num_layers)]
        self.norm = nn.RMSNorm(dims)

    def __call__(self, tokens):
        x = self.embedding(tokens)
        for block in self.blocks:
            x = block(x)
        return self.embedding.as_linear(self.norm(x))


def lm_loss(model, inputs, targets):
    """Mean next-token cross entropy (nats per character)."""
    return nn.losses.cross_entropy(model(inputs), targets, reduction="mean")


def generate(model, prompt, length, context, temperature=0.8, seed=0):
    """Samples ``length`` characters after ``prompt``, one at a time, each
    from the model's distribution over the last ``context`` characters.

    Args:
        model (TransformerLM): the model.
        prompt (str): the text to continue (at least one character).
        length (int): how many characters to sample.
        context (int): the longest window the model sees.
        temperature (float): divides the logits; 0 means greedy.
            Default: 0.8.
        seed (int): seeds the sampling key. Default: 0.

    Returns:
        str: the sampled characters (without the prompt).
    """
    ids = [int(i) for i in encode(prompt)]
    key = mx.random.key(seed)
    out = []
    for _ in range(length):
        logits = model(mx.array([ids[-context:]], dtype=mx.int32))[0, -1]
        if temperature == 0:
            nxt = mx.argmax(logits)
        else:
            key, sub = mx.random.split(key)
            nxt = mx.random.categorical(logits / temperature, key=sub)
        ids.append(nxt.item())
        out.append(ids[-1])
    return decode(out)


# ---------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------

def train_batch(data, step, batch_size, context, seed):
    """The batch of step ``step``: ``batch_size`` random windows of
    ``context + 1`` characters, from a generator seeded with ``(seed,
    step)``. Returns ``(inputs, targets)``, int32 arrays ``(B, context)``."""
    rng = np.random.default_rng([seed, step])
    starts = rng.integers(0, len(data) - context - 1, size=batch_size)
    windows = data[starts[:, None] + np.arange(context + 1)]
    return mx.array(windows[:, :-1]), mx.array(windows[:, 1:])


def eval_windows(data, context, count=64):
    """``count`` evenly spaced windows of the validation text, the same for
    every run: ``(inputs, targets)``."""
    starts = np.linspace(0, len(data) - context - 1, count).astype(np.int64)
    windows = data[starts[:, None] + np.arange(context + 1)]
    return mx.array(windows[:, :-1]), mx.array(windows[:, 1:])


# ---------------------------------------------------------------------------
# checkpoints
# ---------------------------------------------------------------------------

def save_checkpoint(path, model, optimizer, config):
    """Writes ``path/model.safetensors`` (``model.save_weights``),
    ``path/optimizer.safetensors`` (the optimizer's state, flattened to
    dotted names) and ``path/config.json`` (``config``, with the step).

    Args:
        path (str): the folder (created if missing).
        model (nn.Module): the model.
        optimizer (optim.Optimizer): its optimizer.
        config (dict): the model's configuration and the seed.

    Returns:
        None
    """
    os.makedirs(path, exist_ok=True)
    model.save_weights(os.path.join(path, "model.safetensors"))
    mx.save_safetensors(os.path.join(path, "optimizer.safetensors"), dict(tree_flatten(optimizer.state)))
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump({**config, "step": int(optimizer.step.item())}, f, indent=2)


def load_checkpoint(path):
    """Reads a checkpoint :func:`save_checkpoint` wrote.

    Args:
        path (str): the folder.

    Returns:
        tuple: ``(model, optimizer_state, config)``.
    """
    with open(os.path.join(path, "config.json")) as f:
        config = json.load(f)
    model = TransformerLM(len(VOCAB), config["dims"], config["heads"], config["layers"])
    model.load_weights(os.path.join(path, "model.safetensors"))
    state = tree_unflatten(list(mx.load(os.path.join(path, "optimizer.safetensors")).items()))
    return model, state, config


# ---------------------------------------------------------------------------
# training
# ---------------------------------------------------------------------------

def main(steps=800, dims=64, heads=4, layers=2, context=64, batch_size=16, lr=1e-3, seed=0, chars=1_000_000,
         save=None, resume=None, sample_length=300, prompt="def ", temperature=0.8, log_every=100,
         progress=True):
    """Trains (or continues training) the model, then samples from it.

    Args:
        steps (int): optimizer steps in this run. Default: 800.
        dims (int): model width. Default: 64.
        heads (int): attention heads. Default: 4.
        layers (int): transformer blocks. Default: 2.
        context (int): characters per training window. Default: 64.
        batch_size (int): windows per step. Default: 16.
        lr (float): AdamW's learning rate. Default: 1e-3.
        seed (int): seeds the initialisation, the batches and the sample.
            Default: 0.
        chars (int): corpus length. Default: 1_000_000.
        save (str, optional): write a checkpoint to this folder at the
            end. Default: None.
        resume (str, optional): start from the checkpoint in this folder
            (its configuration and seed replace ``dims``, ``heads``,
            ``layers``, ``context``, ``seed``). Default: None.
        sample_length (int): characters to sample at the end (0: none).
            Default: 300.
        prompt (str): the sample's prompt. Default: ``"def "``.
        temperature (float): the sampling temperature. Default: 0.8.
        log_every (int): steps between printed losses. Default: 100.
        progress (bool): show a progress bar. Default: True.

    Returns:
        dict: ``initial_loss`` and ``final_loss`` (validation loss, nats per
        character, before and after this run), ``losses`` (training loss
        per step), ``start_step`` and ``end_step`` (the optimizer's step
        count), ``sample`` (the text), ``seconds`` (the training loop's wall
        time) and ``steps_per_second``.
    """
    config = {"dims": dims, "heads": heads, "layers": layers, "context": context, "seed": seed}
    if resume:
        model, opt_state, saved = load_checkpoint(resume)
        config = {k: saved[k] for k in config}
        optimizer = optim.AdamW(learning_rate=lr, weight_decay=0.01)
        optimizer.state = opt_state
        print(f"resumed from {resume} at step {saved['step']}")
    else:
        mx.random.seed(seed)
        model = TransformerLM(len(VOCAB), dims, heads, layers)
        optimizer = optim.AdamW(learning_rate=lr, weight_decay=0.01)
    context, seed = config["context"], config["seed"]
    mx.eval(model.parameters())

    data = encode(load_corpus(chars))
    split = int(0.9 * len(data))
    train_data, val_data = data[:split], data[split:]
    val_inputs, val_targets = eval_windows(val_data, context)
    n_params = sum(p.size for _, p in tree_flatten(model.parameters()))
    print(f"corpus: {len(data):,} characters of the standard library ({len(train_data):,} train, "
          f"{len(val_data):,} validation); model: {n_params:,} parameters")

    def val_loss():
        return lm_loss(model, val_inputs, val_targets).item()

    loss_and_grad = nn.value_and_grad(model, lambda x, y: lm_loss(model, x, y))
    start_step = int(optimizer.step.item())
    initial_loss = val_loss()
    print(f"step {start_step:5d}  validation loss {initial_loss:.3f}")

    losses = []
    start = time.perf_counter()
    bar = tqdm(range(start_step, start_step + steps), desc="char transformer", disable=not progress)
    for step in bar:
        x, y = train_batch(train_data, step, batch_size, context, seed)
        loss, grads = loss_and_grad(x, y)
        optimizer.update(model, grads)
        mx.eval(model.parameters(), optimizer.state, loss)
        losses.append(loss.item())
        bar.set_postfix(loss=f"{losses[-1]:.3f}")
        if (step + 1 - start_step) % log_every == 0:
            bar.write(f"step {step + 1:5d}  training loss {np.mean(losses[-log_every:]):.3f}")
    seconds = time.perf_counter() - start
    bar.close()

    final_loss = val_loss()
    end_step = int(optimizer.step.item())
    print(f"step {end_step:5d}  validation loss {final_loss:.3f}  ({steps} steps in {seconds:.2f} s, "
          f"{steps / max(seconds, 1e-9):.1f} steps/s)")
    sample = ""
    if sample_length > 0:
        sample = generate(model, prompt, sample_length, context, temperature, seed)
        print(f"--- sample (temperature {temperature}) ---\n{prompt}{sample}\n---")
    if save:
        save_checkpoint(save, model, optimizer, config)
        print(f"saved the model and optimizer state at step {end_step} to {save}")
    return {"initial_loss": initial_loss, "final_loss": final_loss, "losses": losses, "start_step": start_step,
            "end_step": end_step, "sample": sample, "seconds": seconds,
            "steps_per_second": steps / max(seconds, 1e-9)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=800, help="optimizer steps (default: 800)")
    parser.add_argument("--dims", type=int, default=64, help="model width (default: 64)")
    parser.add_argument("--heads", type=int, default=4, help="attention heads (default: 4)")
    parser.add_argument("--layers", type=int, default=2, help="transformer blocks (default: 2)")
    parser.add_argument("--context", type=int, default=64, help="training window (default: 64)")
    parser.add_argument("--batch-size", type=int, default=16, help="windows per step (default: 16)")
    parser.add_argument("--lr", type=float, default=1e-3, help="learning rate (default: 1e-3)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    parser.add_argument("--chars", type=int, default=1_000_000, help="corpus length (default: 1000000)")
    parser.add_argument("--save", metavar="DIR", help="write a checkpoint to DIR at the end")
    parser.add_argument("--resume", metavar="DIR", help="continue from the checkpoint in DIR")
    parser.add_argument("--sample-length", type=int, default=300, help="characters to sample (default: 300)")
    parser.add_argument("--prompt", default="def ", help="the sample's prompt (default: 'def ')")
    parser.add_argument("--temperature", type=float, default=0.8, help="sampling temperature (default: 0.8)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    args = parser.parse_args()
    result = main(steps=args.steps, dims=args.dims, heads=args.heads, layers=args.layers, context=args.context,
                  batch_size=args.batch_size, lr=args.lr, seed=args.seed, chars=args.chars, save=args.save,
                  resume=args.resume, sample_length=args.sample_length, prompt=args.prompt,
                  temperature=args.temperature, progress=not args.no_progress)
    if args.steps > 0 and result["final_loss"] >= result["initial_loss"]:
        raise SystemExit(f"the validation loss did not fall: {result['initial_loss']:.3f} -> "
                         f"{result['final_loss']:.3f}")
