"""One training step, end to end, beside MLX, JAX and PyTorch (issue "Speed").

Two models, float32, the same initial weights (NumPy, fixed seed) and the
same batch in every framework, one optimizer update per step:

- MLP 784-512-512-10 (ReLU), batch 256, mean cross-entropy, SGD (lr 0.1);
- a 2-layer pre-LayerNorm transformer language model: vocabulary 1024,
  d = 256, 4 heads, sequence 128 (causal), batch 16, MLP 4d with exact GELU,
  learned positions, a final LayerNorm and an untied output layer; mean
  token cross-entropy, AdamW (lr 1e-3, betas 0.9/0.999, eps 1e-8, weight
  decay 0.01 on every parameter, bias correction on: PyTorch's rule).

Ember and MLX run the same code (``nn.Module``, ``nn.value_and_grad``,
``optimizers``; attention through ``mx.fast.scaled_dot_product_attention``),
PyTorch its own ``torch.nn`` modules and ``torch.optim`` (eager,
``torch.set_num_threads(2)``), JAX a function of a parameter dict with the
optimizer written out (no optax), once eagerly and once under ``jax.jit``.
The "(compiled)" rows are ``jax.jit``, ``mx.compile`` (Ember's and MLX's,
the same code: the step with the model's and the optimizer's state as
``inputs``/``outputs``) and ``torch.compile`` (of the loss, whose backward
AOTAutograd compiles with it, and of the optimizer's step); the last column holds Ember's eager step against
the fastest peer of the row.

A step is ``loss, grads = value_and_grad(...); update; eval`` (for PyTorch
``zero_grad; forward; backward; step``). The first step's result is checked
against a float64 NumPy reference (the MLP: the loss and every updated
parameter; the transformer: the loss); the last timed step must have a
lower, finite loss (the batch is the same every step, so training on it
lowers the loss). Run:

    PYTHONPATH=python /work/peers/bin/python benchmarks/bench_train.py [--quick] [--only PATTERN]
"""

import importlib
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Case, Extras, METRICS, main  # noqa: E402

# --- shapes -----------------------------------------------------------------

MLP_DIMS = (784, 512, 512, 10)
MLP_BATCH = 256
MLP_LR = 0.1

VOCAB, D_MODEL, HEADS, SEQ, BATCH, LAYERS = 1024, 256, 4, 128, 16, 2
FFN = 4 * D_MODEL
LN_EPS = 1e-5
ADAMW = dict(lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, wd=0.01)


# --- inputs -----------------------------------------------------------------

def _uniform(rng, shape, fan_in):
    k = 1.0 / math.sqrt(fan_in)
    return rng.uniform(-k, k, size=shape).astype(np.float32)


def mlp_inputs(rng):
    """[W1, b1, W2, b2, W3, b3, x, labels]: weights (out, in) as nn.Linear's,
    x (256, 784) float32, labels (256,) int32."""
    arrs = []
    for a, b in zip(MLP_DIMS[:-1], MLP_DIMS[1:]):
        arrs += [_uniform(rng, (b, a), a), _uniform(rng, (b,), a)]
    arrs.append(rng.standard_normal((MLP_BATCH, MLP_DIMS[0]), dtype=np.float32))
    arrs.append(rng.integers(0, MLP_DIMS[-1], MLP_BATCH).astype(np.int32))
    return arrs


def transformer_param_specs(vocab=VOCAB, d=D_MODEL, seq=SEQ, layers=LAYERS, ffn=None):
    """The transformer's parameters in their canonical order: (name, shape).
    Per layer ``l``: ln1, qkv (one (3d, d) projection: q, k, v stacked),
    proj, ln2, fc1 (ffn, d), fc2 (d, ffn); then lnf and head."""
    ffn = ffn or 4 * d
    specs = [("tok_emb", (vocab, d)), ("pos_emb", (seq, d))]
    for i in range(layers):
        p = f"layers.{i}."
        specs += [(p + "ln1.weight", (d,)), (p + "ln1.bias", (d,)),
                  (p + "qkv.weight", (3 * d, d)), (p + "qkv.bias", (3 * d,)),
                  (p + "proj.weight", (d, d)), (p + "proj.bias", (d,)),
                  (p + "ln2.weight", (d,)), (p + "ln2.bias", (d,)),
                  (p + "fc1.weight", (ffn, d)), (p + "fc1.bias", (ffn,)),
                  (p + "fc2.weight", (d, ffn)), (p + "fc2.bias", (d,))]
    specs += [("lnf.weight", (d,)), ("lnf.bias", (d,)),
              ("head.weight", (vocab, d)), ("head.bias", (vocab,))]
    return specs


def transformer_init(rng, specs):
    """NumPy float32 initial weights for ``specs``: embeddings N(0, 0.02²),
    LayerNorm weight 1 (plus a little noise so that its gradient matters)
    and bias 0, linear layers U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    out = []
    for name, shape in specs:
        if name.endswith("emb"):
            a = 0.02 * rng.standard_normal(shape)
        elif ".ln" in "." + name and name.endswith("weight"):
            a = 1 + 0.1 * rng.standard_normal(shape)
        elif ".ln" in "." + name:
            a = 0.1 * rng.standard_normal(shape)
        else:
            a = _uniform(rng, shape, shape[-1] if name.endswith("weight") else specs_fan_in(specs, name))
        out.append(np.asarray(a, np.float32))
    return out


def specs_fan_in(specs, bias_name):
    """The fan-in of the linear layer a bias belongs to."""
    w = dict(specs)[bias_name[:-len("bias")] + "weight"]
    return w[-1]


def transformer_inputs(rng):
    """[*weights in canonical order, tokens (16, 128) int32, targets (16, 128) int32]."""
    specs = transformer_param_specs()
    tokens = rng.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int32)
    targets = rng.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int32)
    return transformer_init(rng, specs) + [tokens, targets]


# --- float64 NumPy references -----------------------------------------------

def _log_softmax(z):
    m = z.max(axis=-1, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=-1, keepdims=True))


def mlp_loss_and_grads(params, x, labels):
    """float64 loss and gradients of the MLP (params [W1, b1, ...], W (out, in))."""
    params = [np.asarray(p, np.float64) for p in params]
    x = np.asarray(x, np.float64)
    n = len(params) // 2
    acts, h = [x], x
    for i in range(n):
        h = h @ params[2 * i].T + params[2 * i + 1]
        if i < n - 1:
            h = np.maximum(h, 0)
        acts.append(h)
    lp = _log_softmax(h)
    rows = np.arange(len(labels))
    loss = -lp[rows, labels].mean()
    d = np.exp(lp)
    d[rows, labels] -= 1
    d /= len(labels)
    grads = [None] * len(params)
    for i in reversed(range(n)):
        grads[2 * i] = d.T @ acts[i]
        grads[2 * i + 1] = d.sum(axis=0)
        if i > 0:
            d = (d @ params[2 * i]) * (acts[i] > 0)
    return loss, grads


def mlp_ref(*arrs):
    """(loss, *parameters after one SGD step)."""
    params, x, labels = arrs[:-2], arrs[-2], arrs[-1]
    loss, grads = mlp_loss_and_grads(params, x, labels)
    return (np.float64(loss), *[np.asarray(p, np.float64) - MLP_LR * g
                                for p, g in zip(params, grads)])


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def transformer_loss_ref(params, tokens, targets, heads=HEADS):
    """float64 NumPy forward of the transformer: the mean token cross-entropy."""
    specs = transformer_param_specs(vocab=params[0].shape[0], d=params[0].shape[1],
                                    seq=params[1].shape[0], layers=(len(params) - 6) // 12,
                                    ffn=params[10].shape[0])
    p = {name: np.asarray(a, np.float64) for (name, _), a in zip(specs, params)}
    B, T = tokens.shape
    d = p["tok_emb"].shape[1]
    hd = d // heads

    def ln(x, w, b):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + LN_EPS) * w + b

    def lin(x, name):
        return x @ p[name + ".weight"].T + p[name + ".bias"]

    x = p["tok_emb"][tokens] + p["pos_emb"][:T]
    causal = np.tril(np.ones((T, T), bool))
    for i in range((len(params) - 6) // 12):
        q_ = f"layers.{i}."
        qkv = lin(ln(x, p[q_ + "ln1.weight"], p[q_ + "ln1.bias"]), q_ + "qkv")
        q, k, v = (a.reshape(B, T, heads, hd).transpose(0, 2, 1, 3) for a in np.split(qkv, 3, -1))
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd)
        s = np.where(causal, s, -np.inf)
        a = np.exp(_log_softmax(s)) @ v
        x = x + lin(a.transpose(0, 2, 1, 3).reshape(B, T, d), q_ + "proj")
        h = lin(ln(x, p[q_ + "ln2.weight"], p[q_ + "ln2.bias"]), q_ + "fc1")
        h = h * (1 + _erf(h / math.sqrt(2))) / 2
        x = x + lin(h, q_ + "fc2")
    logits = lin(ln(x, p["lnf.weight"], p["lnf.bias"]), "head")
    lp = _log_softmax(logits).reshape(B * T, -1)
    return -lp[np.arange(B * T), targets.reshape(-1)].mean()


def transformer_ref(*arrs):
    return (np.float64(transformer_loss_ref(arrs[:-2], arrs[-2], arrs[-1])),)


def loss_fell(first, last):
    """check_last of a training step: the loss (output 0) must be finite and
    lower than the first step's."""
    a, b = float(first[0]), float(last[0])
    if not math.isfinite(b):
        return f"the loss is {b} after training"
    if not b < a:
        return f"the loss did not fall: {a!r} at the first step, {b!r} at the last"
    return None


# --- Ember and MLX (one code, MLX's API) ------------------------------------

def _libs(mx):
    """(nn, optimizers) of the framework whose core is ``mx``."""
    top = mx.__name__.split(".")[0]
    return importlib.import_module(top + ".nn"), importlib.import_module(top + ".optimizers")


def mlx_models(mx):
    """The two models as classes of the framework whose core is ``mx``
    (``ember.core`` or ``mlx.core``)."""
    nn, _ = _libs(mx)

    class MLP(nn.Module):
        """784-512-512-10 with ReLU."""

        def __init__(self, dims=MLP_DIMS):
            super().__init__()
            self.layers = [nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:])]

        def __call__(self, x):
            for layer in self.layers[:-1]:
                x = nn.relu(layer(x))
            return self.layers[-1](x)

    class Block(nn.Module):
        """Pre-LayerNorm block: causal self-attention, then the MLP."""

        def __init__(self, d, heads, ffn):
            super().__init__()
            self.heads = heads
            self.ln1 = nn.LayerNorm(d, eps=LN_EPS)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.ln2 = nn.LayerNorm(d, eps=LN_EPS)
            self.fc1 = nn.Linear(d, ffn)
            self.fc2 = nn.Linear(ffn, d)

        def __call__(self, x):
            B, T, D = x.shape
            H = self.heads
            q, k, v = mx.split(self.qkv(self.ln1(x)), 3, axis=-1)
            q, k, v = (a.reshape(B, T, H, D // H).transpose(0, 2, 1, 3) for a in (q, k, v))
            a = mx.fast.scaled_dot_product_attention(q, k, v, scale=1.0 / math.sqrt(D // H),
                                                     mask="causal")
            x = x + self.proj(a.transpose(0, 2, 1, 3).reshape(B, T, D))
            return x + self.fc2(nn.gelu(self.fc1(self.ln2(x))))

    class Transformer(nn.Module):
        """Token and position embeddings, blocks, final LayerNorm, output layer."""

        def __init__(self, vocab=VOCAB, d=D_MODEL, heads=HEADS, seq=SEQ, layers=LAYERS, ffn=None):
            super().__init__()
            self.tok_emb = nn.Embedding(vocab, d)
            self.pos_emb = nn.Embedding(seq, d)
            self.layers = [Block(d, heads, ffn or 4 * d) for _ in range(layers)]
            self.lnf = nn.LayerNorm(d, eps=LN_EPS)
            self.head = nn.Linear(d, vocab)

        def __call__(self, tokens):
            T = tokens.shape[1]
            x = self.tok_emb(tokens) + self.pos_emb.weight[:T]
            for block in self.layers:
                x = block(x)
            return self.head(self.lnf(x))

    return MLP, Transformer


def mlx_set_params(model, specs, arrays):
    """Puts ``arrays`` (canonical order) into ``model`` by their dotted names
    (``tok_emb``/``pos_emb`` are the embeddings' weights)."""
    from_names = {}
    for (name, _), a in zip(specs, arrays):
        if name.endswith("_emb"):
            name += ".weight"
        from_names[name] = a
    tree = {}
    for name, a in from_names.items():
        node = tree
        keys = name.split(".")
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = a
    model.update(_lists(tree))


def _lists(tree):
    """Dicts whose keys are 0..n-1 as lists (``layers.0`` is a list item)."""
    if not isinstance(tree, dict):
        return tree
    out = {k: _lists(v) for k, v in tree.items()}
    if out and all(k.isdigit() for k in out):
        return [out[str(i)] for i in range(len(out))]
    return out


def mlx_transformer_params(model, specs):
    """The model's parameters in canonical order."""
    out = []
    for name, _ in specs:
        node = model
        for k in (name + ".weight" if name.endswith("_emb") else name).split("."):
            node = node[int(k)] if k.isdigit() else node[k]
        out.append(node)
    return out


def _mlx_step(mx, model, loss_fn, opt, outputs, compile_step):
    nn, _ = _libs(mx)
    vg = nn.value_and_grad(model, loss_fn)
    if not compile_step:
        def step(*batch):
            loss, grads = vg(*batch)
            opt.update(model, grads)
            mx.eval(loss, model.parameters(), opt.state)
            return (loss, *outputs())
        return step
    opt.init(model.trainable_parameters())
    state = [model.state, opt.state]

    def inner(*batch):
        loss, grads = vg(*batch)
        opt.update(model, grads)
        return loss
    cstep = mx.compile(inner, inputs=state, outputs=state)

    def step(*batch):
        loss = cstep(*batch)
        mx.eval(loss, model.parameters(), opt.state)
        return (loss, *outputs())
    return step


def mlp_mlx(mx, *arrs, compile_step=False):
    nn, optim = _libs(mx)
    MLP, _ = mlx_models(mx)
    model = MLP()
    for i, layer in enumerate(model.layers):
        layer.weight, layer.bias = arrs[2 * i], arrs[2 * i + 1]
    x, labels = arrs[-2], arrs[-1]
    opt = optim.SGD(learning_rate=MLP_LR)

    def loss_fn(x, labels):
        return nn.losses.cross_entropy(model(x), labels, reduction="mean")

    def outputs():
        return [a for layer in model.layers for a in (layer.weight, layer.bias)]
    step = _mlx_step(mx, model, loss_fn, opt, outputs, compile_step)
    return lambda: step(x, labels)


def transformer_mlx(mx, *arrs, compile_step=False):
    nn, optim = _libs(mx)
    _, Transformer = mlx_models(mx)
    specs = transformer_param_specs()
    model = Transformer()
    mlx_set_params(model, specs, arrs[:-2])
    tokens, targets = arrs[-2], arrs[-1]
    opt = optim.AdamW(learning_rate=ADAMW["lr"], betas=[ADAMW["b1"], ADAMW["b2"]],
                      eps=ADAMW["eps"], weight_decay=ADAMW["wd"], bias_correction=True)

    def loss_fn(tokens, targets):
        logits = model(tokens)
        return nn.losses.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                                       reduction="mean")
    step = _mlx_step(mx, model, loss_fn, opt, list, compile_step)
    return lambda: step(tokens, targets)


# --- PyTorch (eager) --------------------------------------------------------

def torch_models(torch):
    F = torch.nn.functional

    class Block(torch.nn.Module):
        def __init__(self, d, heads, ffn):
            super().__init__()
            self.heads = heads
            self.ln1 = torch.nn.LayerNorm(d, eps=LN_EPS)
            self.qkv = torch.nn.Linear(d, 3 * d)
            self.proj = torch.nn.Linear(d, d)
            self.ln2 = torch.nn.LayerNorm(d, eps=LN_EPS)
            self.fc1 = torch.nn.Linear(d, ffn)
            self.fc2 = torch.nn.Linear(ffn, d)

        def forward(self, x):
            B, T, D = x.shape
            H = self.heads
            q, k, v = self.qkv(self.ln1(x)).split(D, dim=-1)
            q, k, v = (a.reshape(B, T, H, D // H).transpose(1, 2) for a in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(B, T, D))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    class Transformer(torch.nn.Module):
        def __init__(self, vocab=VOCAB, d=D_MODEL, heads=HEADS, seq=SEQ, layers=LAYERS, ffn=None):
            super().__init__()
            self.tok_emb = torch.nn.Embedding(vocab, d)
            self.pos_emb = torch.nn.Embedding(seq, d)
            self.layers = torch.nn.ModuleList(Block(d, heads, ffn or 4 * d) for _ in range(layers))
            self.lnf = torch.nn.LayerNorm(d, eps=LN_EPS)
            self.head = torch.nn.Linear(d, vocab)

        def forward(self, tokens):
            x = self.tok_emb(tokens) + self.pos_emb.weight[:tokens.shape[1]]
            for block in self.layers:
                x = block(x)
            return self.head(self.lnf(x))

    return Transformer


def _torch_step(torch, model, opt, loss_fn, outputs, jit=False):
    # compiled: torch.compile of the loss (forward and, through AOTAutograd,
    # backward) and of the optimizer's step, as PyTorch's tutorials do
    if jit:
        loss_fn = torch.compile(loss_fn)
        opt_step = torch.compile(opt.step)
    else:
        opt_step = opt.step

    def step(*batch):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(*batch)
        loss.backward()
        opt_step()
        return (loss.detach(), *outputs())
    return step


def mlp_torch(torch, *arrs, jit=False):
    torch.set_num_threads(2)
    F = torch.nn.functional
    dims = MLP_DIMS
    layers = []
    for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
        lin = torch.nn.Linear(a, b)
        with torch.no_grad():
            lin.weight.copy_(arrs[2 * i])
            lin.bias.copy_(arrs[2 * i + 1])
        layers += [lin, torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers[:-1])
    x, labels = arrs[-2], arrs[-1].long()
    opt = torch.optim.SGD(model.parameters(), lr=MLP_LR)
    lins = [m for m in model if isinstance(m, torch.nn.Linear)]
    step = _torch_step(torch, model, opt, lambda x, y: F.cross_entropy(model(x), y),
                       lambda: [t.detach() for m in lins for t in (m.weight, m.bias)], jit)
    return lambda: step(x, labels)


def transformer_torch(torch, *arrs, jit=False):
    torch.set_num_threads(2)
    F = torch.nn.functional
    specs = transformer_param_specs()
    model = torch_models(torch)()
    named = dict(model.named_parameters())
    with torch.no_grad():
        for (name, _), a in zip(specs, arrs[:-2]):
            named[name + ".weight" if name.endswith("_emb") else name].copy_(a)
    tokens, targets = arrs[-2].long(), arrs[-1].long().reshape(-1)
    opt = torch.optim.AdamW(model.parameters(), lr=ADAMW["lr"], betas=(ADAMW["b1"], ADAMW["b2"]),
                            eps=ADAMW["eps"], weight_decay=ADAMW["wd"])

    def loss_fn(tokens, targets):
        logits = model(tokens)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets)
    step = _torch_step(torch, model, opt, loss_fn, list, jit)
    return lambda: step(tokens, targets)


# --- JAX (a function of the parameters; eager or jax.jit) -------------------

def _jax_ce(jax, jnp, logits, labels):
    lp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(lp, labels[:, None], axis=-1))


def mlp_jax(jnp, *arrs, jit=False):
    import jax
    params = list(arrs[:-2])
    x, labels = arrs[-2], arrs[-1]

    def loss_fn(params, x, labels):
        h = x
        n = len(params) // 2
        for i in range(n):
            h = h @ params[2 * i].T + params[2 * i + 1]
            if i < n - 1:
                h = jax.nn.relu(h)
        return _jax_ce(jax, jnp, h, labels)

    vg = jax.value_and_grad(loss_fn)

    def step(params, x, labels):
        loss, grads = vg(params, x, labels)
        return loss, [p - MLP_LR * g for p, g in zip(params, grads)]
    if jit:
        step = jax.jit(step)
    state = {"params": params}

    def run():
        loss, state["params"] = step(state["params"], x, labels)
        return (loss, *state["params"])
    return run


def transformer_jax(jnp, *arrs, jit=False):
    import jax
    specs = transformer_param_specs()
    params = {name: a for (name, _), a in zip(specs, arrs[:-2])}
    tokens, targets = arrs[-2], arrs[-1].reshape(-1)
    B, T = tokens.shape
    H, D = HEADS, D_MODEL

    def ln(x, p):
        mu = jnp.mean(x, -1, keepdims=True)
        var = jnp.mean(jnp.square(x - mu), -1, keepdims=True)
        return (x - mu) * jax.lax.rsqrt(var + LN_EPS) * p[".weight"] + p[".bias"]

    def loss_fn(params, tokens, targets):
        def sub(prefix):
            return {".weight": params[prefix + ".weight"], ".bias": params[prefix + ".bias"]}

        def lin(x, prefix):
            return x @ params[prefix + ".weight"].T + params[prefix + ".bias"]
        x = params["tok_emb"][tokens] + params["pos_emb"][:T]
        for i in range(LAYERS):
            q_ = f"layers.{i}."
            q, k, v = jnp.split(lin(ln(x, sub(q_ + "ln1")), q_ + "qkv"), 3, axis=-1)
            q, k, v = (a.reshape(B, T, H, D // H) for a in (q, k, v))
            a = jax.nn.dot_product_attention(q, k, v, is_causal=True)
            x = x + lin(a.reshape(B, T, D), q_ + "proj")
            x = x + lin(jax.nn.gelu(lin(ln(x, sub(q_ + "ln2")), q_ + "fc1"), approximate=False),
                        q_ + "fc2")
        logits = lin(ln(x, sub("lnf")), "head")
        return _jax_ce(jax, jnp, logits.reshape(B * T, -1), targets)

    vg = jax.value_and_grad(loss_fn)
    lr, b1, b2, eps, wd = (ADAMW[k] for k in ("lr", "b1", "b2", "eps", "wd"))

    def step(params, m, v, t, tokens, targets):
        loss, g = vg(params, tokens, targets)
        t = t + 1
        m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, g)
        v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * jnp.square(g), v, g)
        c1, c2 = 1 - b1 ** t, 1 - b2 ** t
        params = jax.tree_util.tree_map(
            lambda p, m, v: p * (1 - lr * wd) - lr * (m / c1) / (jnp.sqrt(v / c2) + eps),
            params, m, v)
        return loss, params, m, v, t
    if jit:
        step = jax.jit(step)
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    state = [params, zeros, jax.tree_util.tree_map(jnp.zeros_like, params), jnp.float32(0)]

    def run():
        out = step(*state, tokens, targets)
        state[:] = out[1:]
        return (out[0],)
    return run


# --- the table --------------------------------------------------------------

MLP_NAME = "MLP 784-512-512-10, batch 256, SGD step"
TF_NAME = (f"transformer {LAYERS}x(d={D_MODEL}, {HEADS} heads), seq {SEQ}, batch {BATCH}, "
           f"vocab {VOCAB}, AdamW step")

CASES = [
    Case(name=MLP_NAME + " (eager)", metric="ms", amount=1, make_inputs=mlp_inputs,
         reference=mlp_ref, out_dtype="float32", check_last=loss_fell,
         impls={"mlx": mlp_mlx, "jax": mlp_jax, "torch": mlp_torch}),
    Case(name=MLP_NAME + " (compiled)", metric="ms", amount=1, make_inputs=mlp_inputs,
         reference=mlp_ref, out_dtype="float32", check_last=loss_fell,
         impls={"mlx": lambda mx, *a: mlp_mlx(mx, *a, compile_step=True),
                "jax": lambda jnp, *a: mlp_jax(jnp, *a, jit=True),
                "torch": lambda torch, *a: mlp_torch(torch, *a, jit=True)}),
    Case(name=TF_NAME + " (eager)", metric="ms", amount=1, make_inputs=transformer_inputs,
         reference=transformer_ref, out_dtype="float32", check_last=loss_fell,
         impls={"mlx": transformer_mlx, "jax": transformer_jax, "torch": transformer_torch}),
    Case(name=TF_NAME + " (compiled)", metric="ms", amount=1, make_inputs=transformer_inputs,
         reference=transformer_ref, out_dtype="float32", check_last=loss_fell,
         impls={"mlx": lambda mx, *a: transformer_mlx(mx, *a, compile_step=True),
                "jax": lambda jnp, *a: transformer_jax(jnp, *a, jit=True),
                "torch": lambda torch, *a: transformer_torch(torch, *a, jit=True)}),
]


def eager_vs_compiled(args, by_fw, machine):
    """A column: Ember's eager step against the fastest peer of the row
    (on the compiled rows, Ember's eager time against the compiled peers)."""
    to_ms = METRICS["ms"][0]

    def median(fw, name):
        r = by_fw.get(fw, {}).get("results", {}).get(name)
        return to_ms(1, r["median_s"]) if r and r["status"] == "ok" else None

    def col(case):
        eager = case.name.replace("(compiled)", "(eager)")
        e = median("ember", eager)
        peers = [(median(fw, case.name), fw) for fw in ("torch", "jax", "mlx")]
        peers = [p for p in peers if p[0] is not None]
        if e is None or not peers:
            return "n/a"
        best, fw = min(peers)
        return f"{best / e:.2f}× ({fw})"
    return Extras(columns=[("ember eager / best", col)],
                  lines=["ember eager / best: the fastest peer's step on the row ÷ Ember's eager "
                         "step (> 1: Ember's eager step is faster)."])


if __name__ == "__main__":
    main(CASES, title="One training step (bench_train.py)", extras=eager_vs_compiled)
