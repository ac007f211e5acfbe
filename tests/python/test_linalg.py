"""mx.linalg against numpy.linalg: float32/float64, batched and broadcast
shapes, non-contiguous inputs, empty matrices, MLX's dtype rules and
errors; finite-difference checks of every derivative in float64
(decompositions through quantities that do not depend on the sign/phase
choice of singular and eigen vectors); vmap against a loop."""

import numpy as np
import pytest

from conftest import IS_EMBER, ember_only, mx
from gradcheck import check_grads, check_vmap

LA = mx.linalg
FL = ["float32", "float64"]
TOL = {"float32": dict(rtol=2e-4, atol=2e-5), "float64": dict(rtol=1e-10, atol=1e-11)}
SQUARE = [(3, 3), (1, 1), (2, 4, 4), (2, 1, 5, 5)]


def rng(seed=0):
    return np.random.default_rng(seed)


def well(shape, dtype="float64", seed=0):
    """Well-conditioned square matrices (random + n I)."""
    n = shape[-1]
    a = rng(seed).standard_normal(shape) + n * np.eye(n)
    return a.astype(dtype)


def spd(shape, dtype="float64", seed=0):
    a = rng(seed).standard_normal(shape)
    return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def sym_separated(n, seed=0):
    """Symmetric with well-separated eigenvalues 1, 3, 5, ..."""
    q, _ = np.linalg.qr(rng(seed).standard_normal((n, n)))
    return (q * (1 + 2 * np.arange(n))) @ q.T


def arr(x, layout="contiguous"):
    """x as an mx array of its own dtype; 'transposed' gives a non-contiguous
    array with the same values (a transposed copy, transposed back)."""
    x = np.asarray(x)
    if layout == "transposed":
        t = mx.array(np.ascontiguousarray(np.swapaxes(x, -1, -2)), dtype=getattr(mx, x.dtype.name))
        return mx.swapaxes(t, -1, -2)
    return mx.array(x, dtype=getattr(mx, x.dtype.name))


def npy(a):
    return np.array(a)


def close(got, want, dtype):
    np.testing.assert_allclose(npy(got), want, **TOL[dtype])


# ---------------------------------------------------------------------------
# forward results against NumPy
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FL)
@pytest.mark.parametrize("shape", SQUARE)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_inv_slogdet(dtype, shape, layout):
    a = well(shape, dtype)
    x = arr(a, layout)
    r = LA.inv(x)
    assert r.dtype == x.dtype and r.shape == a.shape
    close(r, np.linalg.inv(a.astype(np.float64)), dtype)
    sign, logabs = LA.slogdet(x)
    ws, wl = np.linalg.slogdet(a.astype(np.float64))
    np.testing.assert_array_equal(npy(sign), ws)
    close(logabs, wl, dtype)


@pytest.mark.parametrize("dtype", [
    "float32",
    # MLX: a float64 det computes in float32 (1e-7 relative from the exact one)
    pytest.param("float64", marks=[ember_only])])
@pytest.mark.parametrize("shape", SQUARE)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_det(dtype, shape, layout):
    a = well(shape, dtype)
    x = arr(a, layout)
    d = LA.det(x)
    assert d.dtype == x.dtype and d.shape == a.shape[:-2]
    np.testing.assert_allclose(npy(d), np.linalg.det(a.astype(np.float64)), rtol=TOL[dtype]["rtol"] * 10)


def test_det_signs_singular_and_dtypes():
    a = np.array([[0.0, 1, 0], [1, 0, 0], [0, 0, 2]])
    assert LA.det(mx.array(a)).item() == pytest.approx(-2)
    s, l = LA.slogdet(mx.array(np.zeros((3, 3))))
    assert s.item() == 0 and l.item() == -np.inf
    assert LA.det(mx.array(np.zeros((2, 2)))).item() == 0
    assert LA.det(mx.zeros((0, 0))).item() == 1
    # MLX's dtypes: integers compute in float32, half types keep their type
    assert LA.det(mx.array([[2, 1], [1, 3]])).dtype == mx.float32
    assert LA.det(mx.array([[2, 1], [1, 3]])).item() == pytest.approx(5)
    assert LA.det(mx.array([[2.0, 1], [1, 3]], mx.float16)).dtype == mx.float16
    assert LA.slogdet(mx.array([[2.0, 1], [1, 3]], mx.bfloat16))[1].dtype == mx.bfloat16
    assert LA.det(mx.array(np.eye(3))).dtype == mx.float32  # mx.array(float64 numpy) is float32


@pytest.mark.parametrize("dtype", FL)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_solve(dtype, layout):
    a = well((2, 3, 4, 4), dtype)
    b = rng(1).standard_normal((2, 3, 4, 2)).astype(dtype)
    x = LA.solve(arr(a, layout), arr(b, layout))
    assert x.shape == (2, 3, 4, 2) and x.dtype == getattr(mx, dtype)
    close(x, np.linalg.solve(a.astype(np.float64), b), dtype)
    v = rng(2).standard_normal(4).astype(dtype)
    xv = LA.solve(arr(a[0, 0], layout), arr(v))
    assert xv.shape == (4,)
    close(xv, np.linalg.solve(a[0, 0].astype(np.float64), v), dtype)
    # mixed float32/float64 promotes
    assert LA.solve(arr(well((3, 3), "float64")), mx.ones((3,))).dtype == mx.float64


@ember_only  # MLX: a b whose batch broadcasts (or a vector b for a batch of a) fails in take_along_axis
@pytest.mark.parametrize("dtype", FL)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_solve_broadcasts_the_batch(dtype, layout):
    a = well((2, 3, 4, 4), dtype)
    b = rng(1).standard_normal((3, 4, 2)).astype(dtype)  # batch broadcasts
    x = LA.solve(arr(a, layout), arr(b, layout))
    assert x.shape == (2, 3, 4, 2) and x.dtype == getattr(mx, dtype)
    close(x, np.linalg.solve(a.astype(np.float64), np.broadcast_to(b, (2, 3, 4, 2))), dtype)
    v = rng(2).standard_normal(4).astype(dtype)
    xv = LA.solve(arr(a, layout), arr(v))
    assert xv.shape == (2, 3, 4)
    close(xv, np.linalg.solve(a.astype(np.float64), v[..., None])[..., 0], dtype)


@pytest.mark.parametrize("dtype", FL)
@pytest.mark.parametrize("upper", [False, True])
def test_triangular(dtype, upper):
    a = well((2, 4, 4), dtype)
    t = np.triu(a) if upper else np.tril(a)
    b = rng(1).standard_normal((2, 4, 3)).astype(dtype)
    # only the chosen triangle is read: garbage in the other one is ignored
    close(LA.solve_triangular(arr(a), arr(b), upper=upper), np.linalg.solve(t, b), dtype)
    close(LA.tri_inv(arr(a), upper=upper), np.linalg.inv(t), dtype)


@pytest.mark.parametrize("dtype", FL)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_cholesky(dtype, upper, layout):
    a = spd((3, 5, 5), dtype)
    L = np.linalg.cholesky(a.astype(np.float64))
    want = np.swapaxes(L, -1, -2) if upper else L
    c = LA.cholesky(arr(a, layout), upper=upper)
    close(c, want, dtype)
    close(LA.cholesky_inv(c, upper=upper), np.linalg.inv(a.astype(np.float64)), dtype)


@pytest.mark.parametrize("dtype", FL)
@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 6), (2, 5, 2), (0, 0), (3, 0)])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_qr(dtype, shape, layout):
    a = rng().standard_normal(shape).astype(dtype)
    q, r = LA.qr(arr(a, layout))
    k = min(shape[-2:])
    assert q.shape == shape[:-1] + (k,) and r.shape == shape[:-2] + (k, shape[-1])
    qn, rn = npy(q).astype(np.float64), npy(r).astype(np.float64)
    np.testing.assert_allclose(qn @ rn, a, **TOL[dtype])
    np.testing.assert_allclose(np.swapaxes(qn, -1, -2) @ qn, np.broadcast_to(np.eye(k), shape[:-2] + (k, k)),
                               **TOL[dtype])
    np.testing.assert_array_equal(np.tril(rn, -1), 0)
    # LAPACK's sign convention, as NumPy's
    if min(shape) > 0:
        close(r, np.linalg.qr(a.astype(np.float64))[1], dtype)


@pytest.mark.parametrize("dtype", FL)
@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 6), (2, 3, 5, 4), (0, 0), (2, 0)])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_svd(dtype, shape, layout):
    a = rng().standard_normal(shape).astype(dtype)
    u, s, vt = LA.svd(arr(a, layout))
    m, n = shape[-2:]
    k = min(m, n)
    assert u.shape == shape[:-1] + (m,) and s.shape == shape[:-2] + (k,) and vt.shape == shape[:-2] + (n, n)
    close(s, np.linalg.svd(a.astype(np.float64), compute_uv=False), dtype)
    un, sn, vn = (npy(x).astype(np.float64) for x in (u, s, vt))
    np.testing.assert_allclose((un[..., :k] * sn[..., None, :]) @ vn[..., :k, :], a, **TOL[dtype])
    np.testing.assert_allclose(np.swapaxes(un, -1, -2) @ un, np.broadcast_to(np.eye(m), shape[:-2] + (m, m)),
                               **TOL[dtype])
    np.testing.assert_allclose(vn @ np.swapaxes(vn, -1, -2), np.broadcast_to(np.eye(n), shape[:-2] + (n, n)),
                               **TOL[dtype])
    s2 = LA.svd(arr(a, layout), compute_uv=False)
    assert isinstance(s2, mx.array)
    close(s2, np.linalg.svd(a.astype(np.float64), compute_uv=False), dtype)


@pytest.mark.parametrize("dtype", FL)
@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_eigh(dtype, uplo, layout):
    a = rng().standard_normal((2, 5, 5))
    sym = (a + np.swapaxes(a, -1, -2)).astype(dtype)
    # garbage in the triangle not read
    junk = np.triu(rng(3).standard_normal((5, 5)), 1)
    given = sym + (junk.T if uplo == "U" else junk).astype(dtype)
    w, v = LA.eigh(arr(given, layout), UPLO=uplo)
    close(w, np.linalg.eigvalsh(sym.astype(np.float64)), dtype)
    wn, vn = npy(w).astype(np.float64), npy(v).astype(np.float64)
    np.testing.assert_allclose((vn * wn[..., None, :]) @ np.swapaxes(vn, -1, -2), sym, **TOL[dtype])
    close(LA.eigvalsh(arr(given, layout), UPLO=uplo), np.linalg.eigvalsh(sym.astype(np.float64)), dtype)


@pytest.mark.parametrize("dtype", FL)
def test_eig(dtype):
    a = rng().standard_normal((3, 4, 4)).astype(dtype)  # real matrices with complex pairs
    w, v = LA.eig(arr(a))
    assert w.dtype == mx.complex64 and v.dtype == mx.complex64
    wn, vn = npy(w).astype(np.complex128), npy(v).astype(np.complex128)
    np.testing.assert_allclose(a @ vn, vn * wn[..., None, :], rtol=1e-4, atol=1e-4)
    want = np.sort_complex(np.linalg.eigvals(a.astype(np.float64)))
    np.testing.assert_allclose(np.sort_complex(npy(LA.eigvals(arr(a)))), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", FL)
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 4),
                                   pytest.param((0, 0), marks=[ember_only])])  # MLX: SIGFPE
def test_lu(dtype, shape):
    a = rng().standard_normal(shape).astype(dtype)
    p, l, u = LA.lu(arr(a))
    m, n = shape[-2:]
    k = min(m, n)
    assert p.dtype == mx.uint32 and p.shape == shape[:-1]
    assert l.shape == shape[:-1] + (k,) and u.shape == shape[:-2] + (k, n)
    pn, ln, un = npy(p), npy(l).astype(np.float64), npy(u).astype(np.float64)
    lp = np.take_along_axis(ln, pn[..., None].astype(np.int64), axis=-2)
    np.testing.assert_allclose(lp @ un, a, **TOL[dtype])
    np.testing.assert_array_equal(np.triu(ln[..., :k, :], 1), 0)
    np.testing.assert_allclose(np.diagonal(ln[..., :k, :], 0, -2, -1), 1)
    np.testing.assert_array_equal(np.tril(un, -1), 0)
    lu, piv = LA.lu_factor(arr(a))
    assert lu.shape == shape and piv.shape == shape[:-2] + (k,) and piv.dtype == mx.uint32
    # packed factors: the same L and U
    lun = npy(lu).astype(np.float64)
    np.testing.assert_allclose(np.triu(lun)[..., :k, :], un, **TOL[dtype])
    np.testing.assert_allclose(np.tril(lun, -1)[..., :, :k], np.tril(ln, -1), **TOL[dtype])


def test_lu_pivots_are_row_swaps():
    a = np.array([[0.0, 1, 2], [3, 0, 1], [1, 5, 0]])
    lu, piv = LA.lu_factor(arr(a))
    np.testing.assert_array_equal(npy(piv), [1, 2, 2])
    p, l, u = LA.lu(arr(a))
    np.testing.assert_array_equal(npy(p), [2, 0, 1])


@pytest.mark.parametrize("dtype", FL)
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 3), (0, 3)])
def test_pinv(dtype, shape):
    a = rng().standard_normal(shape).astype(dtype)
    p = LA.pinv(arr(a))
    assert p.shape == shape[:-2] + (shape[-1], shape[-2])
    close(p, np.linalg.pinv(a.astype(np.float64)), dtype)
    # rank-deficient: small singular values dropped as NumPy does
    r = np.outer(np.arange(1.0, 5), np.arange(1.0, 4))
    np.testing.assert_allclose(npy(LA.pinv(arr(r.astype(dtype)))), np.linalg.pinv(r), rtol=1e-4, atol=1e-6)


NORM_VEC = [None, 2, 1, 0, -1, np.inf, -np.inf, 3, 0.5]
NORM_MAT = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


@pytest.mark.parametrize("dtype", FL)
@pytest.mark.parametrize("ord", NORM_VEC)
@pytest.mark.parametrize("keepdims", [False, True])
def test_vector_norms(dtype, ord, keepdims):
    x = rng().standard_normal((3, 4, 5)).astype(dtype)
    x[0, 0, 0] = 0
    for axis in [0, -1, 1]:
        got = LA.norm(arr(x), ord=ord, axis=axis, keepdims=keepdims)
        with np.errstate(divide="ignore"):  # negative orders over the zero: NumPy's 1/0 = inf is the answer
            want = np.linalg.norm(x.astype(np.float64), ord=ord, axis=axis, keepdims=keepdims)
        assert got.dtype == getattr(mx, dtype)
        close(got, want, dtype)
    v = x[1, 1]
    close(LA.norm(arr(v), ord=ord), np.linalg.norm(v.astype(np.float64), ord=ord), dtype)


@pytest.mark.parametrize("dtype", FL)
@pytest.mark.parametrize("ord", NORM_MAT)
@pytest.mark.parametrize("keepdims", [False, True])
def test_matrix_norms(dtype, ord, keepdims):
    x = rng().standard_normal((3, 4, 5)).astype(dtype)
    for axis in [(1, 2), (2, 0), (-1, -2)]:
        got = LA.norm(arr(x), ord=ord, axis=axis, keepdims=keepdims)
        want = np.linalg.norm(x.astype(np.float64), ord=ord, axis=axis, keepdims=keepdims)
        close(got, want, dtype)
    m = x[0]
    close(LA.norm(arr(m, "transposed"), ord=ord), np.linalg.norm(m.astype(np.float64), ord=ord), dtype)


def test_norm_defaults_and_dtypes():
    x = rng().standard_normal((2, 3, 4)).astype(np.float32)
    close(LA.norm(mx.array(x)), np.linalg.norm(x.ravel()), "float32")
    assert LA.norm(mx.array(x), keepdims=True).shape == (1, 1, 1)
    assert LA.norm(mx.array([[1, 2], [3, 4]])).dtype == mx.float32
    assert LA.norm(mx.array([True, False])).dtype == mx.float32
    assert LA.norm(mx.array([3.0, 4.0], mx.float16)).dtype == mx.float16
    c = LA.norm(mx.array(np.array([3 + 4j, 0], np.complex64)))
    assert c.dtype == mx.float32 and c.item() == pytest.approx(5)
    assert LA.norm(mx.array(np.array([3 + 4j, 1], np.complex64)), ord=1).item() == pytest.approx(6)


@pytest.mark.parametrize("shapes", [((3,), (3,)), ((4, 3), (3,)), ((2, 1, 3), (5, 3)), ((2,), (2,)), ((4, 2), (3,))])
def test_cross(shapes):
    a = rng().standard_normal(shapes[0]).astype(np.float32)
    b = rng(1).standard_normal(shapes[1]).astype(np.float32)
    pa = np.concatenate([a, np.zeros(a.shape[:-1] + (1,), a.dtype)], -1) if a.shape[-1] == 2 else a
    pb = np.concatenate([b, np.zeros(b.shape[:-1] + (1,), b.dtype)], -1) if b.shape[-1] == 2 else b
    close(LA.cross(mx.array(a), mx.array(b)), np.cross(pa, pb), "float32")


def test_cross_axis_and_ints():
    a = rng().standard_normal((3, 4)).astype(np.float64)
    b = rng(1).standard_normal((3, 4)).astype(np.float64)
    close(LA.cross(arr(a), arr(b), axis=0), np.cross(a, b, axis=0), "float64")
    r = LA.cross(mx.array([1, 0, 0]), mx.array([0, 1, 0]))
    assert r.dtype == mx.int32 and r.tolist() == [0, 0, 1]


def cplx(shape, seed=0):
    r = rng(seed)
    return (r.standard_normal(shape) + 1j * r.standard_normal(shape)).astype(np.complex64)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (2, 3, 5), (0, 0)])
def test_svd_complex64(shape):
    a = cplx(shape)
    u, s, vt = LA.svd(arr(a))
    assert u.dtype == mx.complex64 and s.dtype == mx.float32 and vt.dtype == mx.complex64
    k = min(shape[-2:])
    np.testing.assert_allclose(npy(s), np.linalg.svd(a.astype(np.complex128), compute_uv=False), rtol=1e-4, atol=1e-5)
    un, sn, vn = npy(u), npy(s), npy(vt)
    np.testing.assert_allclose((un[..., :k] * sn[..., None, :]) @ vn[..., :k, :], a, rtol=1e-4, atol=1e-4)
    s2 = LA.svd(arr(a), compute_uv=False)
    assert s2.dtype == mx.float32
    np.testing.assert_allclose(npy(s2), npy(s), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_complex64(uplo):
    a = cplx((2, 4, 4))
    h = a + np.conj(np.swapaxes(a, -1, -2))
    w, v = LA.eigh(arr(h), UPLO=uplo)
    assert w.dtype == mx.float32 and v.dtype == mx.complex64
    np.testing.assert_allclose(npy(w), np.linalg.eigvalsh(h.astype(np.complex128)), rtol=1e-4, atol=1e-4)
    vn = npy(v)
    np.testing.assert_allclose((vn * npy(w)[..., None, :]) @ np.conj(np.swapaxes(vn, -1, -2)), h, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(npy(LA.eigvalsh(arr(h), UPLO=uplo)), npy(w), rtol=1e-5, atol=1e-5)


def test_eigvals_complex64():
    a = cplx((2, 4, 4))
    want = np.sort_complex(np.linalg.eigvals(a.astype(np.complex128)))
    np.testing.assert_allclose(np.sort_complex(npy(LA.eig(arr(a))[0])), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.sort_complex(npy(LA.eigvals(arr(a)))), want, rtol=1e-4, atol=1e-4)


@ember_only  # MLX: the eigenvectors of a complex matrix are conjugated (conj(A) v = conj(w) v)
def test_eig_complex64():
    a = cplx((2, 4, 4))
    w, v = LA.eig(arr(a))
    wn, vn = npy(w), npy(v)
    np.testing.assert_allclose(a @ vn, vn * wn[..., None, :], rtol=1e-4, atol=1e-4)


@ember_only  # MLX 0.32.4 returns complex64 (zero imaginary part) for ord 2, -2, 1, inf
def test_matrix_norms_complex64():
    a = cplx((2, 4, 4))
    for ord in [2, -2, "nuc", "fro", 1, np.inf]:
        got = LA.norm(arr(a), ord=ord, axis=(1, 2))
        assert got.dtype == mx.float32
        np.testing.assert_allclose(npy(got), np.linalg.norm(a.astype(np.complex128), ord=ord, axis=(1, 2)),
                                   rtol=1e-4)


def test_complex_derivatives_raise():
    raises(ValueError, "complex64 decompositions", lambda: mx.grad(
        lambda x: mx.sum(LA.svd(x, compute_uv=False)))(mx.array(cplx((3, 3)))))


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------

def raises(exc, frag, f):
    """f() (evaluated) raises exc; the message holds frag on Ember (MLX
    words its messages differently)."""
    with pytest.raises(exc) as e:
        out = f()
        mx.eval(out)
    if IS_EMBER:
        assert frag in str(e.value), str(e.value)


SQ_OPS = ["inv", "tri_inv", "cholesky", "cholesky_inv", "det", "slogdet", "eigh", "eigvalsh", "eig", "eigvals"]
ANY_OPS = ["qr", "svd", "pinv", "lu", "lu_factor"]


@pytest.mark.parametrize("name", SQ_OPS + ANY_OPS)
def test_shape_and_dtype_errors(name):
    f = getattr(LA, name)
    raises(ValueError, f"[linalg::{name}]", lambda: f(mx.zeros((3,))))
    raises(ValueError, ">= 2 dimensions", lambda: f(mx.array(1.0)))
    if name in SQ_OPS:
        raises(ValueError, "square", lambda: f(mx.zeros((2, 3))))
        raises(ValueError, "(2,3)", lambda: f(mx.zeros((2, 3))))
    if name not in ("det", "slogdet"):
        raises(ValueError, "float32 or float64", lambda: f(mx.zeros((2, 2), mx.int32)))
        if name not in ("svd", "eig", "eigvals", "eigh", "eigvalsh"):
            raises(ValueError, "float32 or float64.", lambda: f(mx.zeros((2, 2), mx.complex64)))
        raises(ValueError, "float32 or float64", lambda: f(mx.zeros((2, 2), mx.float16)))


@ember_only  # MLX refuses the 2^31 concatenation (its dims are int32)
def test_dimensions_beyond_lapack_int_raise():
    # a 2^31 dim from two halves (a shape given from Python stays in int32);
    # the ops check before anything is evaluated, so nothing is allocated
    def long(axis):
        half = mx.broadcast_to(mx.zeros((1, 1)), (2**30, 1) if axis == 0 else (1, 2**30))
        return mx.concatenate([half, half], axis=axis)
    big = long(0)
    raises(ValueError, "[linalg::svd] Matrix dimensions must be below 2^31", lambda: LA.svd(big))
    raises(ValueError, "[linalg::qr] Matrix dimensions", lambda: LA.qr(big))
    raises(ValueError, "Too many right-hand sides", lambda: LA.solve(mx.eye(1), long(1)))


@ember_only  # MLX raises RuntimeError ("LU factorization failed with error code 1")
def test_singular_errors():
    z = mx.zeros((2, 3, 3))
    raises(ValueError, "[linalg::inv] Matrix is singular", lambda: LA.inv(z))
    raises(ValueError, "[linalg::tri_inv] Matrix is singular", lambda: LA.tri_inv(z))
    raises(ValueError, "[linalg::solve] Matrix is singular", lambda: LA.solve(z, mx.ones((3,))))
    raises(ValueError, "[linalg::solve_triangular] Matrix is singular",
           lambda: LA.solve_triangular(z, mx.ones((3,))))
    # one bad matrix in a batch fails the whole batch
    b = np.stack([np.eye(3), np.zeros((3, 3))])
    raises(ValueError, "singular", lambda: LA.inv(mx.array(b)))


@ember_only  # MLX: cholesky of a matrix that is not positive definite returns garbage
def test_cholesky_not_positive_definite_raises():
    raises(ValueError, "not positive definite", lambda: LA.cholesky(-mx.eye(3)))


def test_argument_errors():
    a = mx.eye(3)
    raises(ValueError, "[linalg::solve] Last dimension", lambda: LA.solve(a, mx.ones((4,))))
    raises(ValueError, "(3,3)", lambda: LA.solve(a, mx.ones((4, 2))))
    raises(ValueError, "do not broadcast", lambda: LA.solve(mx.zeros((2, 3, 3)) + a, mx.ones((4, 3, 1))))
    raises(ValueError, "float32 or float64", lambda: LA.solve(mx.eye(3, dtype=mx.int32), mx.ones((3,), mx.int32)))
    raises(ValueError, "int32 and float32", lambda: LA.solve(mx.eye(3, dtype=mx.int32), mx.ones((3,))))
    raises(ValueError, "Complex", lambda: LA.det(mx.zeros((2, 2), mx.complex64)))
    raises(ValueError, "float32 or float64. Received array with type complex64",
           lambda: LA.inv(mx.zeros((2, 2), mx.complex64)))
    raises(ValueError, "float32 or float64 or complex64. Received array with type int32",
           lambda: LA.svd(mx.zeros((2, 2), mx.int32)))
    raises(ValueError, "size 2 or 3", lambda: LA.cross(mx.ones((4,)), mx.ones((4,))))
    raises(ValueError, "only supported for matrices", lambda: LA.norm(mx.ones(3), ord="fro"))
    raises(ValueError, "Invalid ord value 'foo'", lambda: LA.norm(mx.ones((2, 3)), ord="foo"))
    raises(ValueError, "Invalid ord value 3", lambda: LA.norm(mx.ones((2, 3)), ord=3))
    raises(ValueError, "too many axes", lambda: LA.norm(mx.ones((2, 3, 3)), ord=2))
    raises(ValueError, "too many axes", lambda: LA.norm(mx.ones((2, 3, 3)), axis=(0, 1, 2)))
    raises(ValueError, "Duplicate", lambda: LA.norm(mx.ones((2, 3)), axis=(1, 1)))
    raises(IndexError, "[linalg::norm]", lambda: LA.norm(mx.ones((2, 3)), axis=5))
    with pytest.raises(TypeError):
        LA.norm(mx.ones(3), ord=[1])


def test_solves_promote_an_integer_or_half_b():
    """MLX: the matrix must be float32/float64, b promotes with it."""
    for b in (mx.ones((3,), mx.int32), mx.ones((3,), mx.float16), mx.ones((3,), mx.bool_)):
        for f in (LA.solve_triangular, LA.solve):
            x = f(mx.eye(3), b, stream=mx.cpu) if f is LA.solve else f(mx.eye(3), b, upper=False, stream=mx.cpu)
            assert x.dtype == mx.float32 and x.tolist() == [1.0, 1.0, 1.0]
    raises(ValueError, "float32 or float64", lambda: LA.solve(mx.eye(3, dtype=mx.float16), mx.ones((3,)), stream=mx.cpu))


@ember_only  # MLX: an UPLO other than 'L' or 'U' is taken as 'L'
def test_eigh_bad_uplo_raises():
    raises(ValueError, "UPLO", lambda: LA.eigh(mx.eye(3), UPLO="X"))


# MLX: NaN inputs are not checked (NaN results, or RuntimeError "SVD failed"/"Eigenvalue decomposition failed")
@ember_only
@pytest.mark.parametrize("name", ["inv", "cholesky", "qr", "svd", "eigh", "eigvalsh", "eig", "tri_inv"])
def test_nan_input_raises(name):
    a = np.eye(3)
    a[1, 1] = np.nan
    raises(ValueError, f"[linalg::{name.replace('eigvalsh', 'eigh')}] The input contains NaN",
           lambda: getattr(LA, name)(mx.array(a)))
    raises(ValueError, "contains NaN", lambda: LA.solve(mx.array(a), mx.ones((3,))))


def test_nan_input_propagates_in_det_and_lu():
    a = np.eye(3)
    a[1, 1] = np.nan
    assert np.isnan(LA.det(mx.array(a)).item())
    assert np.isnan(LA.slogdet(mx.array(a))[1].item())
    p, l, u = LA.lu(mx.array(a))
    assert npy(p).tolist() == [0, 1, 2] and np.isnan(npy(u)).any()
    lu, piv = LA.lu_factor(mx.array(a))
    assert npy(piv).tolist() == [0, 1, 2]


@ember_only  # MLX: the sign of slogdet of a NaN matrix is 0 (NumPy: 1)
def test_nan_input_gives_a_nan_slogdet_sign():
    a = np.eye(3)
    a[1, 1] = np.nan
    assert np.isnan(LA.slogdet(mx.array(a))[0].item())


@ember_only  # MLX: no derivatives of the decompositions ("[Primitive::jvp] Not implemented for ...")
# ---------------------------------------------------------------------------
# derivatives (float64 finite differences)
# ---------------------------------------------------------------------------

def test_grad_inv_det_slogdet():
    a = well((2, 3, 3))
    check_grads(LA.inv, [a], order=2)
    check_grads(LA.det, [a], order=2)
    check_grads(lambda x: LA.slogdet(x)[1], [a], order=2)
    check_grads(lambda x: LA.slogdet(x), [-a])  # sign has a zero derivative
    check_grads(LA.det, [well((2, 2), seed=2) - 10 * np.eye(2)])  # negative determinant


@ember_only  # MLX: no derivatives of the decompositions ("[Primitive::jvp] Not implemented for ...")
def test_grad_solve():
    a, b = well((2, 4, 4)), rng(1).standard_normal((4, 2))
    check_grads(LA.solve, [a, b], order=2)
    check_grads(LA.solve, [a, b[:, 0]])
    check_grads(lambda x: LA.solve(x, arr(b)), [a])


@ember_only  # MLX: no derivatives of the decompositions ("[Primitive::jvp] Not implemented for ...")
@pytest.mark.parametrize("upper", [False, True])
def test_grad_triangular(upper):
    a, b = well((2, 4, 4)), rng(1).standard_normal((2, 4, 3))
    check_grads(lambda x, y: LA.solve_triangular(x, y, upper=upper), [a, b], order=2)
    check_grads(lambda x: LA.tri_inv(x, upper=upper), [a], order=2)


@ember_only  # MLX: no derivatives of the decompositions ("[Primitive::jvp] Not implemented for ...")
@pytest.mark.parametrize("upper", [False, True])
def test_grad_cholesky(upper):
    check_grads(lambda x: LA.cholesky(x, upper=upper), [spd((2, 4, 4))], order=2)
    c = np.linalg.cholesky(spd((3, 3)))
    check_grads(lambda x: LA.cholesky_inv(x, upper=upper), [c.T if upper else c])


@ember_only  # MLX: no derivatives of the decompositions ("[Primitive::jvp] Not implemented for ...")
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (2, 4, 2)])
def test_grad_qr(shape):
    a = rng().standard_normal(shape) + np.eye(*shape[-2:])
    check_grads(lambda x: LA.qr(x), [a], order=2)
    check_grads(lambda x: LA.qr(x)[0], [a])  # R dropped: its handle is recomputed
    check_grads(lambda x: LA.qr(x)[1], [a])


@ember_only  # MLX: no derivatives of the decompositions ("[Primitive::jvp] Not implemented for ...")
def test_grad_qr_wide_raises():
    raises(ValueError, "at least as many rows", lambda: mx.grad(lambda x: mx.sum(LA.qr(x)[1]))(mx.ones((2, 3))))


@ember_only  # MLX: no derivatives of the decompositions ("[Primitive::jvp] Not implemented for ...")
def test_grad_svd():
    u, _ = np.linalg.qr(rng().standard_normal((4, 4)))
    v, _ = np.linalg.qr(rng(1).standard_normal((4, 4)))
    a = (u * np.array([4.0, 3, 2, 1])) @ v.T  # well-separated singular values

    def invariants(x):  # independent of the signs of singular vector pairs
        U, S, Vt = LA.svd(x)
        return S, U * U, Vt * Vt, U[:, :2] @ (S[:2, None] * Vt[:2])
    check_grads(invariants, [a], order=2)
    check_grads(lambda x: LA.svd(x)[1], [a])
    check_grads(lambda x: LA.svd(x, compute_uv=False), [a], order=2)
    for shape in [(5, 3), (3, 5), (2, 4, 3)]:
        check_grads(lambda x: LA.svd(x, compute_uv=False), [rng(2).standard_normal(shape)], order=2)


@ember_only  # MLX: no derivatives of the decompositions ("[Primitive::jvp] Not implemented for ...")
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 3)])
def test_grad_svd_rectangular(shape):
    # the thin factors of a non-square matrix (K = min(M, N) columns of U and
    # rows of Vt), through functions independent of the signs of the pairs
    k = min(shape[-2:])
    base = rng(3).standard_normal(shape)
    u, _, vt = np.linalg.svd(base, full_matrices=False)
    a = (u * np.linspace(4.0, 1.0, k)) @ vt  # well-separated singular values

    def invariants(x):
        U, S, Vt = LA.svd(x)
        Uk, Vtk = U[..., :, :k], Vt[..., :k, :]
        return S, Uk * Uk, Vtk * Vtk, Uk[..., :, :2] @ (S[..., :2, None] * Vtk[..., :2, :])
    check_grads(invariants, [a], order=2)


@ember_only  # MLX: no derivatives of the decompositions ("[Primitive::jvp] Not implemented for ...")
def test_grad_svd_rectangular_extra_columns_ignored():
    # columns of the full U past K are any basis of the rest of the space:
    # their cotangents are ignored (as PyTorch does) and their tangents are 0
    a = mx.array(rng(4).standard_normal((4, 2)))
    g = mx.grad(lambda x: mx.sum(LA.svd(x)[0][:, 2:]))(a)
    np.testing.assert_array_equal(npy(g), np.zeros((4, 2)))
    _, (du, _, dvt) = mx.jvp(lambda x: LA.svd(x), [a], [mx.ones((4, 2), mx.float64)])
    np.testing.assert_array_equal(npy(du)[:, 2:], np.zeros((4, 2)))
    assert dvt.shape == (2, 2)
    b = mx.array(rng(5).standard_normal((2, 4)))
    _, (du, _, dvt) = mx.jvp(lambda x: LA.svd(x), [b], [mx.ones((2, 4), mx.float64)])
    assert du.shape == (2, 2)
    np.testing.assert_array_equal(npy(dvt)[2:], np.zeros((2, 4)))


@ember_only  # MLX: no derivatives of the decompositions ("[Primitive::jvp] Not implemented for ...")
@pytest.mark.parametrize("shape", [(4, 2), (2, 5), (2, 3, 4)])
def test_grad_pinv_rectangular(shape):
    # pinv is built on the svd: its derivative of a non-square, full-rank
    # matrix against finite differences (and second order)
    check_grads(lambda x: LA.pinv(x), [rng(6).standard_normal(shape)], order=2)


@ember_only  # MLX: no derivatives of the decompositions ("[Primitive::jvp] Not implemented for ...")
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_grad_eigh(uplo):
    a = sym_separated(4)

    def invariants(x):
        w, v = LA.eigh(x, UPLO=uplo)
        return w, v * v, (v * w) @ v.T
    check_grads(invariants, [a], order=2)
    check_grads(lambda x: LA.eigh(x, UPLO=uplo)[0], [a])
    check_grads(lambda x: LA.eigvalsh(x, UPLO=uplo), [np.stack([a, sym_separated(4, 1)])], order=2)


@pytest.mark.parametrize("ord", [
    None, "fro",
    # MLX: the nuclear and spectral norms have no derivative ("Not implemented for SVD")
    pytest.param("nuc", marks=[ember_only]), pytest.param(2, marks=[ember_only]),
    pytest.param(-2, marks=[ember_only]),
    1, -1, np.inf, -np.inf])
def test_grad_matrix_norms(ord):
    a = rng().standard_normal((2, 4, 3))
    check_grads(lambda x: LA.norm(x, ord=ord, axis=(1, 2)), [a])


@pytest.mark.parametrize("ord", [None, 2, 1, 3, np.inf])
def test_grad_vector_norms(ord):
    check_grads(lambda x: LA.norm(x, ord=ord, axis=-1), [rng().standard_normal((3, 4))])


@ember_only  # MLX: no derivatives of the decompositions ("[Primitive::jvp] Not implemented for ...")
def test_grad_pinv():
    check_grads(LA.pinv, [well((3, 3))])


def test_grad_cross():
    check_grads(LA.cross, [rng().standard_normal((4, 3)), rng(1).standard_normal((3,))], order=2)


def test_no_rule_for_eig_and_lu():
    for f in [lambda x: LA.eigvals(x).real, lambda x: LA.lu(x)[1], lambda x: LA.lu_factor(x)[0]]:
        raises(ValueError, "has no vjp rule", lambda: mx.grad(lambda x: mx.sum(f(x)))(mx.eye(3)))


# ---------------------------------------------------------------------------
# vmap
# ---------------------------------------------------------------------------

def test_vmap():
    a = well((3, 4, 4))
    check_vmap(LA.inv, [a], rtol=1e-10, atol=1e-12)
    check_vmap(lambda x: LA.cholesky(x, upper=True), [spd((3, 4, 4))], rtol=1e-10, atol=1e-12)
    check_vmap(LA.svd, [a], out_axes=1, rtol=1e-10, atol=1e-12)
    check_vmap(LA.eigh, [spd((3, 4, 4))], rtol=1e-10, atol=1e-12)
    check_vmap(LA.eigvals, [a], rtol=1e-5, atol=1e-6)
    check_vmap(lambda x: LA.norm(x, ord=2), [a], rtol=1e-10, atol=1e-12)
    check_vmap(LA.pinv, [a], rtol=1e-10, atol=1e-12)


@ember_only  # MLX: "[Primitive::vmap] Not implemented for LUF" (det, slogdet, solve, lu) and "for QRF" (qr)
def test_vmap_of_lu_and_qr_based_ops():
    a = well((3, 4, 4))
    b = rng(1).standard_normal((3, 4, 2))
    check_vmap(LA.det, [a], rtol=1e-10, atol=1e-12)
    check_vmap(LA.slogdet, [a], rtol=1e-10, atol=1e-12)
    check_vmap(LA.solve, [a, b], rtol=1e-10, atol=1e-12)
    check_vmap(LA.solve, [a, b[0]], in_axes=(0, None), rtol=1e-10, atol=1e-12)
    check_vmap(LA.solve, [a[0], b], in_axes=(None, 0), rtol=1e-10, atol=1e-12)
    check_vmap(LA.solve, [np.moveaxis(a, 0, 2), np.moveaxis(b, 0, 1)], in_axes=(2, 1), rtol=1e-10, atol=1e-12)
    check_vmap(LA.qr, [a], in_axes=1, rtol=1e-10, atol=1e-12)
    check_vmap(LA.lu, [a], rtol=1e-10, atol=1e-12)
    check_vmap(LA.lu_factor, [a], rtol=1e-10, atol=1e-12)


@ember_only  # MLX: no derivatives of the decompositions ("[Primitive::jvp] Not implemented for ...")
def test_vmap_of_grad():
    a = well((3, 4, 4))
    g = mx.vmap(mx.grad(lambda x: LA.slogdet(x)[1]))(arr(a))
    np.testing.assert_allclose(npy(g), np.swapaxes(np.linalg.inv(a), -1, -2), rtol=1e-10)
    # d/dA sum(w^2) = 2 A, read from the lower triangle: 2 tril(A) + 2 tril(A, -1)
    s = spd((3, 4, 4))
    h = mx.vmap(mx.grad(lambda x: mx.sum(LA.eigvalsh(x) ** 2)))(arr(s))
    np.testing.assert_allclose(npy(h), 2 * np.tril(s) + 2 * np.tril(s, -1), rtol=1e-10, atol=1e-12)
