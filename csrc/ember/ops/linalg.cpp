// Matrix products: NumPy's matmul rules (1-D operands promoted and the added
// dim removed; batch dims broadcast).
#include <cmath>
#include <initializer_list>
#include <string>

#include "ember/ops/common.h"
#include "ember/ops/products.h"
#include "ember/primitives/linalg.h"

namespace ember {

using detail::fail;

array matmul(const array& a_in, const array& b_in, const StreamOrDevice& s) {
  if (a_in.ndim() == 0 || b_in.ndim() == 0) {
    fail("matmul", "Got 0-dimension input; inputs must have at least one dimension (shapes ",
         shape_str(a_in.shape()), " and ", shape_str(b_in.shape()), ").");
  }
  array a = a_in.ndim() == 1 ? reshape(a_in, {1, a_in.shape()[0]}, s) : a_in;
  array b = b_in.ndim() == 1 ? reshape(b_in, {b_in.shape()[0], 1}, s) : b_in;
  if (a.shape(-1) != b.shape(-2)) {
    fail("matmul", "Last dimension of first input with shape ", shape_str(a_in.shape()),
         " must match second to last dimension of second input with shape ", shape_str(b_in.shape()), ".");
  }
  Dtype t = promote_types(a.dtype(), b.dtype());
  // (half types: the kernel converts tiles to float32 and rounds once at the end)
  Dtype compute = t;
  if (a.ndim() > 2 && b.ndim() == 2 && a.size() > 0) {
    // A batch of matrices against one (x @ W.T on a (batch, seq, features)
    // input): the batch folds into the rows, one product instead of a batch
    // of products against a broadcast b — and in the gradients, b's is one
    // product whose k runs over the batch, not a batch of products summed
    // afterwards. (A reshape of a that is not row-contiguous copies it.)
    Shape out(a.shape().begin(), a.shape().end() - 1);
    const int64_t rows = a.size() / a.shape(-1);
    array r = matmul_node(reshape(astype(a, compute, s), {rows, a.shape(-1)}, s), astype(b, compute, s), to_stream(s));
    if (b_in.ndim() > 1) out.push_back(b.shape(-1));
    return astype(reshape(r, out, s), t, s);
  }
  Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  Shape batch = broadcast_shapes(ba, bb, "matmul");
  Shape sa = batch, sb = batch;
  sa.insert(sa.end(), {a.shape(-2), a.shape(-1)});
  sb.insert(sb.end(), {b.shape(-2), b.shape(-1)});
  a = broadcast_to(astype(a, compute, s), sa, s);
  b = broadcast_to(astype(b, compute, s), sb, s);
  array r = matmul_node(a, b, to_stream(s));
  if (a_in.ndim() == 1 || b_in.ndim() == 1) {
    Shape final_shape = batch;
    if (a_in.ndim() > 1) final_shape.push_back(a_in.shape(-2));
    if (b_in.ndim() > 1) final_shape.push_back(b_in.shape(-1));
    r = reshape(r, final_shape, s);
  }
  return astype(r, t, s);
}

namespace {

// The inputs' promoted dtype, which must be a real floating point type (or,
// with allow_complex, complex64 too; MLX's message either way).
Dtype real_floating_result(const char* op, std::initializer_list<Dtype> ts, bool allow_complex = false) {
  Dtype t = *ts.begin();
  std::string names;
  for (Dtype d : ts) {
    t = promote_types(t, d);
    names += std::string(names.empty() ? "" : ", ") + dtype_name(d);
  }
  if (!is_floating(t) && !(allow_complex && is_complex(t))) {
    fail(op, "Only real floating point types are supported; got ", names, ", which promote to ", dtype_name(t),
         ".");
  }
  return t;
}

int64_t prod(const Shape& s) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

}  // namespace

array addmm(const array& c, const array& a, const array& b, float alpha, float beta, const StreamOrDevice& s) {
  // complex64 too, as MLX (alpha and beta stay real, as MLX's)
  Dtype t = real_floating_result("addmm", {c.dtype(), a.dtype(), b.dtype()}, /*allow_complex=*/true);
  array ab = matmul(astype(a, t, s), astype(b, t, s), s);
  if (broadcast_shapes(c.shape(), ab.shape(), "addmm") != ab.shape()) {
    fail("addmm", "The addend of shape ", shape_str(c.shape()), " does not broadcast to the product's shape ",
         shape_str(ab.shape()), ".");
  }
  if (alpha != 1.0f) ab = multiply(ab, array(alpha, t), s);
  if (beta == 0.0f) return ab;  // as BLAS: c is not read (its NaNs do not leak)
  array cc = astype(c, t, s);
  if (beta != 1.0f) cc = multiply(cc, array(beta, t), s);
  return add(ab, cc, s);
}

array gather_mm(const array& a_in, const array& b_in, const std::optional<array>& lhs_indices,
                const std::optional<array>& rhs_indices, bool sorted_indices, const StreamOrDevice& s) {
  if (a_in.ndim() == 0 || b_in.ndim() == 0) {
    fail("gather_mm", "Inputs must have at least one dimension (shapes ", shape_str(a_in.shape()), " and ",
         shape_str(b_in.shape()), ").");
  }
  array a = a_in.ndim() == 1 ? reshape(a_in, {1, a_in.shape()[0]}, s) : a_in;
  array b = b_in.ndim() == 1 ? reshape(b_in, {b_in.shape()[0], 1}, s) : b_in;
  if (a.shape(-1) != b.shape(-2)) {
    fail("gather_mm", "Last dimension of first input with shape ", shape_str(a_in.shape()),
         " must match second to last dimension of second input with shape ", shape_str(b_in.shape()), ".");
  }
  Dtype t = real_floating_result("gather_mm", {a.dtype(), b.dtype()});
  Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  const int64_t M = a.shape(-2), K = a.shape(-1), N = b.shape(-1);
  auto indices = [&](const std::optional<array>& given, const Shape& batch, const char* which) {
    if (!given) return reshape(arange(0, static_cast<double>(prod(batch)), 1, Dtype::uint32, s), batch, s);
    if (!is_integral(given->dtype())) {
      fail("gather_mm", "The ", which, " indices must be integers; got ", dtype_name(given->dtype()), ".");
    }
    return *given;
  };
  array li = indices(lhs_indices, ba, "lhs"), ri = indices(rhs_indices, bb, "rhs");
  Shape I = broadcast_shapes(li.shape(), ri.shape(), "gather_mm");
  array ga = gather(reshape(astype(a, t, s), {prod(ba), M, K}, s), {broadcast_to(li, I, s)}, {0}, s);
  array gb = gather(reshape(astype(b, t, s), {prod(bb), K, N}, s), {broadcast_to(ri, I, s)}, {0}, s);
  array out = matmul(ga, gb, s);  // I ++ (M, N)
  Shape final_shape = I;
  if (a_in.ndim() > 1) final_shape.push_back(M);
  if (b_in.ndim() > 1) final_shape.push_back(N);
  return final_shape == out.shape() ? out : reshape(out, final_shape, s);
}

array segmented_mm(const array& a, const array& b, const array& segments, const StreamOrDevice& s) {
  if (a.ndim() != 2 || b.ndim() != 2) {
    fail("segmented_mm", "Batched matmul is not supported: a and b must be matrices (shapes ", shape_str(a.shape()),
         " and ", shape_str(b.shape()), ").");
  }
  if (a.shape(1) != b.shape(0)) {
    fail("segmented_mm", "Last dimension of first input with shape ", shape_str(a.shape()),
         " must match first dimension of second input with shape ", shape_str(b.shape()), ".");
  }
  if (!is_integral(segments.dtype())) {
    fail("segmented_mm", "Segments must be integers; got ", dtype_name(segments.dtype()), ".");
  }
  if (segments.ndim() == 0 || segments.shape(-1) != 2) {
    fail("segmented_mm", "Segments must have shape (..., 2) of [start, end) pairs; got ", shape_str(segments.shape()),
         ".");
  }
  Dtype t = real_floating_result("segmented_mm", {a.dtype(), b.dtype()});
  const int64_t K = a.shape(1);
  int nd = segments.ndim();
  Shape lo_start(nd, 0), hi_start(nd, 0), stop = segments.shape(), step(nd, 1);
  stop[nd - 1] = 1;
  hi_start[nd - 1] = 1;
  Shape hi_stop = segments.shape();
  array lo = slice(segments, lo_start, stop, step, s), hi = slice(segments, hi_start, hi_stop, step, s);
  array ks = arange(0, static_cast<double>(K), 1, Dtype::int64, s);
  // (..., K): whether column k of a (row k of b) lies in the segment
  array in_seg = logical_and(greater_equal(ks, astype(lo, Dtype::int64, s), s),
                             less(ks, astype(hi, Dtype::int64, s), s), s);
  array mask = expand_dims(astype(in_seg, t, s), {-2}, s);  // (..., 1, K)
  return matmul(multiply(astype(a, t, s), mask, s), astype(b, t, s), s);
}

namespace {

// mask (..., ceil(rows / bs), ceil(cols / bs)) applied to x (..., rows, cols)
// block by block: a boolean mask selects (masked entries become 0, NaNs
// included), a numeric one scales.
array apply_block_mask(const array& x, const array& mask, int bs, const char* name, const StreamOrDevice& s) {
  const int64_t rows = x.shape(-2), cols = x.shape(-1);
  const int64_t br = (rows + bs - 1) / bs, bc = (cols + bs - 1) / bs;
  if (mask.ndim() < 2 || mask.shape(-2) != br || mask.shape(-1) != bc) {
    fail("block_masked_mm", "The ", name, " of shape ", shape_str(mask.shape()), " must end in (", br, ",", bc,
         "): the number of ", bs, "-blocks of a (", rows, ",", cols, ") operand.");
  }
  array m = repeat(repeat(mask, bs, -2, s), bs, -1, s);
  int nd = m.ndim();
  Shape start(nd, 0), stop = m.shape(), step(nd, 1);
  stop[nd - 2] = rows;
  stop[nd - 1] = cols;
  m = slice(m, start, stop, step, s);
  if (mask.dtype() == Dtype::bool_) return where(m, x, zeros_like(x, {}, s), s);
  return multiply(x, astype(m, x.dtype(), s), s);
}

}  // namespace

array block_masked_mm(const array& a, const array& b, int block_size, const std::optional<array>& mask_out,
                      const std::optional<array>& mask_lhs, const std::optional<array>& mask_rhs,
                      const StreamOrDevice& s) {
  // as MLX: without a mask it is a matmul, and the block size is not used
  if ((mask_out || mask_lhs || mask_rhs) && block_size != 32 && block_size != 64) {
    fail("block_masked_mm", "Only block sizes 32 and 64 are supported; got ", block_size, ".");
  }
  if (a.ndim() < 2 || b.ndim() < 2) {
    fail("block_masked_mm", "Inputs must have at least two dimensions (shapes ", shape_str(a.shape()), " and ",
         shape_str(b.shape()), ").");
  }
  Dtype t = real_floating_result("block_masked_mm", {a.dtype(), b.dtype()});
  array x = astype(a, t, s), y = astype(b, t, s);
  if (mask_lhs) x = apply_block_mask(x, *mask_lhs, block_size, "mask_lhs", s);
  if (mask_rhs) y = apply_block_mask(y, *mask_rhs, block_size, "mask_rhs", s);
  array out = matmul(x, y, s);
  if (mask_out) out = apply_block_mask(out, *mask_out, block_size, "mask_out", s);
  return out;
}

namespace {

// The m x m factors hadamard_transform uses for n = m * 2^k, as sign rows:
// row i is the transform of the i-th unit vector. They are the matrices
// MLX's transform applies (read off its output on the identity), so results
// agree with MLX for every supported n, not just powers of 2.
struct HadamardFactor {
  int m;
  const char* signs;  // m * m of '+' / '-'
};
const HadamardFactor kHadamardFactors[] = {
    {12,
     "+-++++++++++"
     "--+-+-+-+-+-"
     "+++-++----++"
     "+---+--+-++-"
     "+++++-++----"
     "+-+---+--+-+"
     "++--+++-++--"
     "+--++---+--+"
     "++----+++-++"
     "+--+-++---+-"
     "++++----+++-"
     "+-+--+-++---"},
    {20,
     "+-----++++--++--+--+"
     "-+---+-+++---+++-+--"
     "--+--++-+++---+-+-+-"
     "---+-+++-+++-----+-+"
     "----+++++--++--+--+-"
     "+----+----+-++---++-"
     "-+----+----+-++---++"
     "--+----+--+-+-++---+"
     "---+----+-++-+-++---"
     "----+----+-++-+-++--"
     "++--+-+--++----+----"
     "+++--+-+---+----+---"
     "-+++--+-+---+----+--"
     "--+++--+-+---+----+-"
     "+--+++--+-----+----+"
     "+-++-++--+-+++++----"
     "-+-+++++--+-+++-+---"
     "+-+-+-+++-++-++--+--"
     "++-+---++++++-+---+-"
     "-++-++--++++++-----+"},
    {28,
     "+--------++++--+-++-+-++--++"
     "-+--------+++++-+-++-+-++--+"
     "--+----+---+++-+-+-++++-++--"
     "---+---++---+++-+-+-+-++-++-"
     "----+--+++---+++-+-+---++-++"
     "-----+-++++----++-+-++--++-+"
     "------+-++++--+-++-+-++--++-"
     "++----++------+--++---+-++-+"
     "+++-----+------+--++-+-+-++-"
     "-+++-----+------+--++-+-+-++"
     "--+++-----+---+--+--++-+-+-+"
     "---+++-----+--++--+--++-+-+-"
     "----+++-----+--++--+--++-+-+"
     "+----++------+--++--++-++-+-"
     "+-+--+--++--+++------++----+"
     "-+-+--++-++--+-+-----+++----"
     "+-+-+--++-++----+-----+++---"
     "-+-+-+--++-++----+-----+++--"
     "--+-+-+--++-++----+-----+++-"
     "+--+-+-+--++-+-----+-----+++"
     "-+--+-+++--++-------++----++"
     "+--++--+-+--+---++++-+------"
     "-+--++--+-+--+---++++-+-----"
     "--+--+++-+-+--+---+++--+----"
     "+--+--+-+-+-+-++---++---+---"
     "++--+----+-+-++++---+----+--"
     "-++--+-+--+-+-++++--------+-"
     "--++--+-+--+-+-++++--------+"},
};

}  // namespace

array hadamard_transform(const array& a, std::optional<float> scale, const StreamOrDevice& s) {
  if (a.size() == 0) fail("hadamard_transform", "Does not support empty arrays (shape ", shape_str(a.shape()), ").");
  const int64_t len = a.ndim() ? a.shape(-1) : 1;
  // len = m * 2^k with m = 1 or one of the factors above.
  const HadamardFactor* factor = nullptr;
  for (const auto& f : kHadamardFactors) {
    if (len % f.m == 0 && ((len / f.m) & (len / f.m - 1)) == 0) factor = &f;
  }
  if ((len & (len - 1)) && !factor) {
    fail("hadamard_transform", "The last dimension must be m * 2^k with m in (1, 12, 20, 28); got ", len,
         " (shape ", shape_str(a.shape()), ").");
  }
  if (!(len & (len - 1))) factor = nullptr;
  const int64_t n = factor ? len / factor->m : len;  // the power-of-2 part
  Dtype out_t = is_inexact(a.dtype()) ? a.dtype() : Dtype::float32;
  Dtype t = (out_t == Dtype::float16 || out_t == Dtype::bfloat16) ? Dtype::float32 : out_t;
  array x = astype(a, t, s);
  Shape shape = x.shape();
  // Butterflies on the 2^k part: at stage h the last axis is viewed as
  // (len / 2h, 2, h); the pairs (u, v) along the middle axis become
  // (u + v, u - v).
  Shape lead(shape.begin(), shape.end() - (a.ndim() ? 1 : 0));
  for (int64_t h = 1; h < n; h *= 2) {
    Shape v = lead;
    v.insert(v.end(), {len / (2 * h), 2, h});
    array y = reshape(x, v, s);
    int nd = y.ndim();
    Shape start(nd, 0), stop = y.shape(), step(nd, 1);
    stop[nd - 2] = 1;
    array u = slice(y, start, stop, step, s);
    start[nd - 2] = 1;
    stop[nd - 2] = 2;
    array w = slice(y, start, stop, step, s);
    x = reshape(concatenate({add(u, w, s), subtract(u, w, s)}, nd - 2, s), shape, s);
  }
  if (factor) {
    // The last axis is (m, n) and the transform is kron(F, S_n): after the
    // butterflies on the n part, out[c, :] = sum_a F[a, c] x[a, :].
    const int m = factor->m;
    std::vector<double> ft(m * m);
    for (int a = 0; a < m; ++a) {
      for (int c = 0; c < m; ++c) ft[c * m + a] = factor->signs[a * m + c] == '+' ? 1.0 : -1.0;
    }
    Shape split = lead;
    split.insert(split.end(), {m, n});
    array f_t = astype(array(ft.data(), {m, m}, Dtype::float64), t, s);
    x = reshape(matmul(f_t, reshape(x, split, s), s), shape, s);
  }
  double sc = scale ? static_cast<double>(*scale) : 1.0 / std::sqrt(static_cast<double>(len));
  if (sc != 1.0) x = multiply(x, array(sc, t), s);
  return astype(x, out_t, s);
}

}  // namespace ember
