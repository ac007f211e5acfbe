"""Run on 3 and 4 ranks by test_distributed_mpi.py: the agreement message,
reduced by recursive doubling over point-to-point messages (a group that is
not a power of two folds its last ranks in first), carrying small reductions;
larger ones through MPI or around the ring of ranks. Sums, maxima and minima
against NumPy below and above the size that rides in the message, every
rank's result bit for bit the same, disagreements named with both ranks'
shapes on every rank, the group usable afterwards. Prints "OK <rank>" at the
end; any failure raises."""
import numpy as np

import ember.core as mx

D = mx.distributed
g = D.init()
r, n = g.rank(), g.size()
assert n >= 3, n


def data(rank, size, dtype, seed=0):
    return np.random.default_rng(seed + 31 * rank).standard_normal(size).astype(dtype)


# up to 16 KB rides in the message: 4096 float32 do, 4097 do not (and float64
# from 2049 on); above, MPI_Iallreduce where a rank's block would be under
# 8 KB, else the ring (ring_all_reduce): blocks split unevenly, and 98305
# float64 on 3 ranks (blocks of 32768, 32768 and 32769: 256 KB segments) gives
# one rank more segments to send than to receive
for size in (1, 7, 300, 2049, 4096, 4097, 16385, 98305):
    for dt in ("float32", "float64", "int32"):
        xs = [data(k, size, "float64", size) * 100 for k in range(n)]
        xs = [x.astype(dt) for x in xs]
        for kind, ref in (("sum", np.sum), ("max", np.max), ("min", np.min)):
            y = getattr(D, "all_" + kind)(mx.array(xs[r], dtype=getattr(mx, dt)))
            got = np.array(y)
            if kind == "sum" and dt != "int32":
                np.testing.assert_allclose(got, ref(np.stack(xs), axis=0), rtol=1e-5, atol=1e-4, err_msg=f"{kind} {dt} {size}")
            else:
                np.testing.assert_array_equal(got, ref(np.stack(xs), axis=0), err_msg=f"{kind} {dt} {size}")
            # every rank ends with the same bits
            every = np.array(D.all_gather(y.reshape(1, -1)))
            assert (every.view(np.uint8) == every[:1].view(np.uint8)).all(), (kind, dt, size)
    # NaN on one rank: still the same result everywhere
    x = data(r, size, "float32")
    if r == n - 1:
        x[0] = np.nan
    every = np.array(D.all_gather(D.all_max(mx.array(x)).reshape(1, -1)))
    assert (every.view(np.uint32) == every[:1].view(np.uint32)).all(), size

# sum_scatter and all_gather: through MPI for blocks under 8 KB, round the ring
# above (the reduce-scatter's partial sums in the thread's two block buffers)
for size in (100, 30001):
    zs = [np.random.default_rng(k).integers(-1000, 1000, size * n).astype(np.int32) for k in range(n)]
    got = np.array(D.sum_scatter(mx.array(zs[r])))
    np.testing.assert_array_equal(got, np.sum(zs, axis=0)[r * size:(r + 1) * size], err_msg=f"sum_scatter {size}")
    fs = [z.astype(np.float32) / 7 for z in zs]
    got = np.array(D.sum_scatter(mx.array(fs[r])))
    np.testing.assert_allclose(got, np.sum(fs, axis=0)[r * size:(r + 1) * size], rtol=1e-5, atol=1e-4, err_msg=f"sum_scatter {size}")
    got = np.array(D.all_gather(mx.array(zs[r][:size])))
    np.testing.assert_array_equal(got, np.concatenate([z[:size] for z in zs]), err_msg=f"all_gather {size}")

# ---- disagreements: the last rank differs; every rank raises naming it ------------
last = n - 1
# (both carried; neither; 24 bytes of data against 64 KB, not carried; and
# against 16 KB, carried in 5 pieces of the message where 24 bytes take one)
for shape, other in (((2, 3), (3, 2)), ((200, 100), (100, 200)), ((2, 3), (128, 128)), ((2, 3), (64, 64))):
    try:
        mx.eval(D.all_sum(mx.ones(shape if r != last else other)))
        raise AssertionError("no error")
    except ValueError as err:
        s = str(err)
        assert f"rank 0 has a float32 array of shape {shape}" in s and f"rank {last} has a float32 array of shape {other}" in s, s
try:
    mx.eval(D.all_max(mx.ones(4)) if r != 1 else D.all_gather(mx.ones(4)))
    raise AssertionError("no error")
except ValueError as err:
    assert "rank 1 has a float32 array of shape (4,)" in str(err) and "(in another collective)" in str(err), str(err)
assert D.all_sum(mx.array(r)).item() == n * (n - 1) // 2

# ---- a subgroup of two and one of the rest -------------------------------------------
sub = g.split(0 if r < 2 else 1)
want = [k for k in range(n) if (k < 2) == (r < 2)]
got = D.all_sum(mx.array(data(r, 300, "float32")), group=sub)
np.testing.assert_allclose(np.array(got), sum(data(k, 300, "float32") for k in want), rtol=1e-6)

print("OK", r, flush=True)
