"""Quantized text generation with a Llama-3.2-1B-shaped model: Ember (mlx-lm's
llama code through ``ember.alias_mlx()``, 4-bit affine, group 64) beside
llama.cpp (llama-cpp-python, Q4_0) and MLX (mlx-lm, 4-bit affine, group 64)
on the same machine, prefill and decode tokens per second.

    PYTHONPATH=python python benchmarks/bench_llm.py \\
        --llama-python /work/llama-venv/bin/python --mlx-python /path/to/mlx/bin/python

The model: hidden 2048, 16 layers, 32 query / 8 key-value heads (head 64),
SwiGLU 8192, vocabulary 128256, tied embeddings; random weights drawn with
NumPy from a seed per tensor (so every framework quantizes the same float
weights; std K^-1/2). Prompt: ``--prompt`` random token ids (128), then
``--gen`` greedy tokens (64), ``--threads`` threads (2); best of ``--rounds``
rounds (3) after a warm-up, Ember and llama.cpp loaded side by side and
taking turns a round at a time (the order reversed each round), with the
round-by-round ratios printed: the VM's memory bandwidth drifts by 15-20%
within minutes, and a decode token reads every weight once.

- Ember and MLX: mlx-lm 0.32's ``llama.py`` unchanged, ``nn.quantize(model,
  64, 4)``, a ``make_prompt_cache`` KV cache, and mlx-lm's own generation
  function, ``mlx_lm.generate.generate_step`` (greedy): prefill is the time
  to its first token, decode the time of the ``--gen`` tokens after it. Its
  module imports ``transformers`` (``pip install transformers``); without
  it the script runs the same loop written out here and says so: prefill
  (the prompt but its last token into the cache, evaluating only the cache,
  then the last token's step), then each step builds the next token's graph
  and ``async_eval``s it before reading the current token. MLX is ~1 token/s
  on a CPU, so it runs ``--mlx-prompt`` (32) and ``--mlx-gen`` (4) tokens,
  one round.
- llama.cpp: a GGUF file (architecture ``llama``, Q4_0 for every matrix and
  the embedding, float32 norms; a placeholder vocabulary with the 256 byte
  tokens) written with the ``gguf`` package's writer and Q4_0 quantizer into
  ``--out`` (kept for the next run), loaded with ``llama_cpp.Llama``
  (``n_threads`` = ``n_threads_batch`` = threads, ``n_batch`` = the prompt);
  prefill is one ``eval`` of the prompt, decode ``eval`` of one token at a
  time, each the argmax of the previous logits.

Prints the CPU, Ember's ISA level, the DRAM read bandwidth (mem_bw.py) with
the decode rate it allows (one read of the weights per token), the busy-cores
line, and the table.
"""
import argparse
import json
import os
import subprocess
import sys
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

CONFIG = dict(model_type="llama", hidden_size=2048, num_hidden_layers=16, intermediate_size=8192,
              num_attention_heads=32, num_key_value_heads=8, head_dim=64, rms_norm_eps=1e-5,
              vocab_size=128256, rope_theta=500000.0, tie_word_embeddings=True,
              max_position_embeddings=131072)
GROUP, BITS = 64, 4


def tensor(name, shape):
    """The float32 weights of `name` (the same in every process)."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    if len(shape) == 1:  # norm weights
        return (1 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
    return (rng.standard_normal(shape, dtype=np.float32) * np.float32(shape[-1] ** -0.5))


def prompt_ids(n):
    return np.random.default_rng(1).integers(300, CONFIG["vocab_size"], n).astype(np.int32)


# --------------------------------------------------------------------------
# mlx-lm (Ember or MLX)
# --------------------------------------------------------------------------

def mlx_lm_worker(backend, prompt_len, gen):
    """Loads the model; returns (info, one_round), one_round() -> (prefill
    tok/s, decode tok/s, tokens)."""
    if backend == "ember":
        import ember

        ember.alias_mlx()
    import mlx.core as mx
    import mlx.nn as nn
    from mlx.utils import tree_flatten, tree_unflatten

    import mlx_lm_configs as C

    C.import_mlx_lm()
    from mlx_lm.models import llama
    from mlx_lm.models.cache import make_prompt_cache

    t_load = time.perf_counter()
    model = llama.Model(llama.ModelArgs.from_dict(CONFIG))
    nn.quantize(model, group_size=GROUP, bits=BITS)   # lazy: replaced below before anything is evaluated
    params = dict(tree_flatten(model.parameters()))
    new = []
    for k, v in params.items():
        if k.endswith(".scales") or k.endswith(".biases"):
            continue
        if k.endswith(".weight") and v.dtype == mx.uint32:
            base = k[: -len(".weight")]
            shape = (v.shape[0], v.shape[1] * 32 // BITS)
            w = mx.array(tensor(k, shape)).astype(mx.bfloat16)
            q, s, b = mx.quantize(w, GROUP, BITS)
            mx.eval(q, s, b)
            new += [(k, q), (base + ".scales", s), (base + ".biases", b)]
            del w
        else:
            x = mx.array(tensor(k, v.shape)).astype(mx.bfloat16)
            mx.eval(x)
            new.append((k, x))
    model.update(tree_unflatten(new))
    mx.eval(model.parameters())
    nbytes = sum(v.nbytes for _, v in tree_flatten(model.parameters()))
    t_load = time.perf_counter() - t_load

    prompt = mx.array(prompt_ids(prompt_len))[None]

    def step(y, cache):
        logits = model(y, cache=cache)
        return mx.argmax(logits[:, -1, :], axis=-1)

    try:
        from mlx_lm.generate import generate_step
    except ImportError:  # its module needs transformers
        generate_step = None

    def one_round_mlx_lm():
        # mlx-lm's own loop: the first token ends the prefill
        cache = make_prompt_cache(model)
        t0 = time.perf_counter()
        out, t1 = [], None
        for tok, _ in generate_step(prompt[0], model, max_tokens=gen + 1, prompt_cache=cache):
            if t1 is None:
                t1 = time.perf_counter()
            out.append(int(tok))
        t2 = time.perf_counter()
        return prompt_len / (t1 - t0), gen / (t2 - t1), out[:gen]

    def one_round():
        if generate_step is not None:
            return one_round_mlx_lm()
        cache = make_prompt_cache(model)
        t0 = time.perf_counter()
        # generate_step's prefill: all but the last prompt token fill the
        # cache (only the cache is evaluated, so no logits are computed for
        # them), then the last one gives the first token
        model(prompt[:, :-1], cache=cache)
        mx.eval([c.state for c in cache])
        y = step(prompt[:, -1:], cache)
        mx.eval(y)
        t1 = time.perf_counter()
        out = []
        mx.async_eval(y)
        for _ in range(gen):
            nxt = step(y[:, None], cache)
            mx.async_eval(nxt)
            out.append(y.item())
            y = nxt
        mx.eval(y)
        t2 = time.perf_counter()
        return prompt_len / (t1 - t0), gen / (t2 - t1), out

    return dict(weight_bytes=int(nbytes), load_s=t_load, prompt=prompt_len, gen=gen,
                loop="mlx_lm.generate.generate_step" if generate_step else "generate_step's loop, written out"), one_round


# --------------------------------------------------------------------------
# llama.cpp
# --------------------------------------------------------------------------

def write_gguf(path):
    import gguf
    from gguf.quants import quantize

    Q4 = gguf.GGMLQuantizationType.Q4_0
    c = CONFIG
    w = gguf.GGUFWriter(path + ".tmp", "llama")
    w.add_name("random llama-3.2-1b-shaped")
    w.add_context_length(4096)
    w.add_embedding_length(c["hidden_size"])
    w.add_block_count(c["num_hidden_layers"])
    w.add_feed_forward_length(c["intermediate_size"])
    w.add_head_count(c["num_attention_heads"])
    w.add_head_count_kv(c["num_key_value_heads"])
    w.add_rope_dimension_count(c["head_dim"])
    w.add_rope_freq_base(c["rope_theta"])
    w.add_layer_norm_rms_eps(c["rms_norm_eps"])
    w.add_vocab_size(c["vocab_size"])
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_0)
    # a placeholder vocabulary: <unk> <s> </s>, the 256 byte tokens, then t<i>
    toks = ["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)]
    toks += [f"t{i}" for i in range(len(toks), c["vocab_size"])]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    types += [gguf.TokenType.BYTE] * 256 + [gguf.TokenType.NORMAL] * (len(toks) - 259)
    w.add_tokenizer_model("llama")
    w.add_token_list(toks)
    w.add_token_scores([0.0] * len(toks))
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    H, F, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    hd, nq, nkv = c["head_dim"], c["num_attention_heads"], c["num_key_value_heads"]

    def mat(gname, mname, shape):
        w.add_tensor(gname, quantize(tensor(mname, shape), Q4), raw_dtype=Q4)

    # mlx-lm's parameter names seed the tensors, so both files hold the same floats
    mat("token_embd.weight", "model.embed_tokens.weight", (V, H))
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        w.add_tensor(f"blk.{i}.attn_norm.weight", tensor(p + "input_layernorm.weight", (H,)))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", tensor(p + "post_attention_layernorm.weight", (H,)))
        mat(f"blk.{i}.attn_q.weight", p + "self_attn.q_proj.weight", (nq * hd, H))
        mat(f"blk.{i}.attn_k.weight", p + "self_attn.k_proj.weight", (nkv * hd, H))
        mat(f"blk.{i}.attn_v.weight", p + "self_attn.v_proj.weight", (nkv * hd, H))
        mat(f"blk.{i}.attn_output.weight", p + "self_attn.o_proj.weight", (H, nq * hd))
        mat(f"blk.{i}.ffn_gate.weight", p + "mlp.gate_proj.weight", (F, H))
        mat(f"blk.{i}.ffn_up.weight", p + "mlp.up_proj.weight", (F, H))
        mat(f"blk.{i}.ffn_down.weight", p + "mlp.down_proj.weight", (H, F))
    w.add_tensor("output_norm.weight", tensor("model.norm.weight", (H,)))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(path + ".tmp", path)


def llama_cpp_worker(out, prompt_len, gen, threads):
    """As mlx_lm_worker, for llama.cpp (the GGUF written on first use)."""
    path = os.path.join(out, "llama1b-shaped-q4_0.gguf")
    t_load = time.perf_counter()
    if not os.path.exists(path):
        write_gguf(path)
    import llama_cpp

    llm = llama_cpp.Llama(model_path=path, n_ctx=prompt_len + gen + 8, n_threads=threads, n_threads_batch=threads,
                          n_batch=prompt_len, n_ubatch=prompt_len, verbose=False, seed=0)
    t_load = time.perf_counter() - t_load
    prompt = [int(t) for t in prompt_ids(prompt_len)]
    nv = llm.n_vocab()

    def last_argmax():  # the greedy token from the last evaluated position's logits
        return int(np.argmax(np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(nv,))))

    def one_round():
        llm.reset()
        t0 = time.perf_counter()
        llm.eval(prompt)
        y = last_argmax()
        t1 = time.perf_counter()
        out_toks = []
        for _ in range(gen):
            out_toks.append(y)
            llm.eval([y])
            y = last_argmax()
        t2 = time.perf_counter()
        return prompt_len / (t1 - t0), gen / (t2 - t1), out_toks

    return dict(weight_bytes=os.path.getsize(path), load_s=t_load, prompt=prompt_len, gen=gen,
                version=llama_cpp.__version__), one_round


def serve(args):
    """A worker process: loads its model, says so with one JSON line on
    stdout, then runs one round (prefill and decode) for each "round" line
    on stdin, answering with a JSON line; ends at "quit" or end of input.
    Between rounds it blocks on stdin, so it takes no CPU from the others."""
    # replies on a descriptor of their own: anything else written to stdout
    # (Python or C) goes to stderr and cannot break the protocol
    sys.stdout.flush()
    reply = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    if args.worker == "llama.cpp":
        info, one_round = llama_cpp_worker(args.out, args.prompt, args.gen, args.threads)
    else:
        info, one_round = mlx_lm_worker(args.worker, args.prompt, args.gen)
    reply.write(json.dumps(info) + "\n")
    reply.flush()
    for line in sys.stdin:
        if line.strip() != "round":
            break
        pre, dec, toks = one_round()
        reply.write(json.dumps(dict(prefill_tps=pre, decode_tps=dec, tokens=toks)) + "\n")
        reply.flush()
    return 0


class Worker:
    def __init__(self, name, python, args, prompt, gen, env):
        cmd = [python, os.path.abspath(__file__), "--out", args.out, "--prompt", str(prompt), "--gen", str(gen),
               "--threads", str(args.threads), "--worker", name]
        self.name = name
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
        self.info = self._read()
        self.pre, self.dec, self.tokens = [], [], None

    def _read(self):
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.name} worker ended (exit status {self.proc.wait()})")
        return json.loads(line)

    def round(self, keep):
        self.proc.stdin.write("round\n")
        self.proc.stdin.flush()
        r = self._read()
        if keep:
            self.pre.append(r["prefill_tps"])
            self.dec.append(r["decode_tps"])
        self.tokens = r["tokens"]

    def close(self):
        self.proc.stdin.write("quit\n")
        self.proc.stdin.close()
        self.proc.wait()

    def result(self):
        return dict(self.info, prefill_tps=max(self.pre), decode_tps=max(self.dec), prefill_all=self.pre,
                    decode_all=self.dec, tokens=self.tokens)


# --------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-python", help="an interpreter with llama-cpp-python and gguf (omit: no llama.cpp)")
    ap.add_argument("--mlx-python", help="an interpreter with mlx and mlx-lm (omit: no MLX)")
    ap.add_argument("--out", default=f"/tmp/bench-llm-{os.environ.get('USER', 'user')}")
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--mlx-prompt", type=int, default=32)
    ap.add_argument("--mlx-gen", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds after a warm-up, taken in turns")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", help="comma-separated: ember,llama.cpp,mlx")
    ap.add_argument("--worker", choices=["ember", "mlx", "llama.cpp"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.worker:
        return serve(args)

    from machine import LoadMeter, cpu_info
    import mem_bw

    model, _ = cpu_info()
    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    import ember.core as emx

    cfg = emx.__config__()
    bw = mem_bw.bandwidth(refresh=False)
    gbps = mem_bw.read_gbps(args.threads, bw)
    extras = [f for f in ("avx512_vnni", "avx512_bf16", "amx_int8", "amx_bf16") if f in cfg["cpu_features"]]
    print(f"CPU: {model} ({os.cpu_count()} CPUs), Ember ISA level {cfg['isa']}"
          f"{''.join(' + ' + f for f in extras)}; {args.threads} threads")
    runs = [("ember", sys.executable, args.prompt, args.gen)]
    if args.llama_python:
        runs.append(("llama.cpp", args.llama_python, args.prompt, args.gen))
    if args.mlx_python:
        runs.append(("mlx", args.mlx_python, args.mlx_prompt, args.mlx_gen))
    if args.only:
        keep = set(args.only.split(","))
        runs = [r for r in runs if r[0] in keep]
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), EMBER_NUM_THREADS=str(args.threads))
    load = LoadMeter()
    res = {}
    # Ember and llama.cpp stay loaded and take turns, a round each (the order
    # reversed every round), so that the VM's drift in memory bandwidth
    # (decode rates of one framework 15-20% apart within minutes) falls on
    # both alike; the per-round ratios are paired. MLX (~1 token/s) runs one
    # short round of its own afterwards.
    paired = [Worker(n, py, args, p, g, env) for n, py, p, g in runs if n != "mlx"]
    for r in range(args.rounds + 1):  # round 0: warm-up
        for w in (paired if r % 2 == 0 else paired[::-1]):
            time.sleep(0.5)  # the other framework's spinning threads settle
            w.round(keep=r > 0 or args.rounds == 0)
    for w in paired:
        w.close()
        res[w.name] = w.result()
    for n, py, p, g in runs:
        if n == "mlx":
            w = Worker(n, py, args, p, g, env)
            w.round(keep=True)
            w.close()
            res[n] = w.result()
    for name, r in res.items():
        print(f"  {name}: prefill {r['prefill_tps']:.1f} tok/s, decode {r['decode_tps']:.1f} tok/s "
              f"(all rounds: {[round(v, 1) for v in r['prefill_all']]}, {[round(v, 1) for v in r['decode_all']]})",
              flush=True)
        if "loop" in r:
            print(f"    {name}'s generation loop: {r['loop']}")
    if "ember" in res and "llama.cpp" in res:
        e, l = res["ember"], res["llama.cpp"]
        for what in ("prefill", "decode"):
            ratios = sorted(a / b for a, b in zip(e[f"{what}_all"], l[f"{what}_all"]))
            print(f"  Ember / llama.cpp {what}, round by round: {[round(x, 2) for x in ratios]}"
                  f" (median {ratios[len(ratios) // 2]:.2f})")
    other = load.other_cores()
    wb = res["ember"]["weight_bytes"] if "ember" in res else None
    print(f"\nDRAM read bandwidth ({args.threads} threads, mem_bw.py): {gbps:.1f} GB/s"
          + (f" -> {gbps * 1e9 / wb:.1f} tok/s if a token reads the {wb / 1e6:.0f} MB of weights once"
             if wb else ""))
    print(f"other processes kept {'?' if other is None else f'{other:.2f}'} of {os.cpu_count()} cores busy")
    print("\n| system | weights | prompt / generated | prefill tok/s | decode tok/s |")
    print("|---|---|---|---:|---:|")
    names = {"ember": "Ember (mlx-lm llama, alias_mlx)", "llama.cpp": "llama.cpp (llama-cpp-python "
             + res.get("llama.cpp", {}).get("version", "") + ")", "mlx": "MLX (mlx-lm)"}
    for name, r in res.items():
        kind = "Q4_0" if name == "llama.cpp" else f"{BITS}-bit affine, group {GROUP}"
        print(f"| {names[name]} | {kind}, {r['weight_bytes'] / 1e6:.0f} MB | {r['prompt']} / {r['gen']} "
              f"| {r['prefill_tps']:.1f} | {r['decode_tps']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
