// Quantization ops (ops/quantized.h): MLX's defaults, checks and messages,
// then one node each (primitives/quantized.h). gather_qmm is a composite:
// the gathers, then quantized_matmul over the gathered batch.
#include "ember/ops/quantized.h"

#include <sstream>

#include "ember/ops/common.h"
#include "ember/primitives/quantized.h"

namespace ember {

using detail::fail;

namespace {

std::string shp(const Shape& s) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? "," : "") << s[i];
  os << ")";
  return os.str();
}

QuantMode parse_mode(const char* op, const std::string& mode) {
  if (mode == "affine") return QuantMode::Affine;
  if (mode == "mxfp4") return QuantMode::MxFp4;
  if (mode == "mxfp8") return QuantMode::MxFp8;
  if (mode == "nvfp4") return QuantMode::NvFp4;
  fail(op, "Invalid quantization mode '", mode, "'.");
}

// The mode's group size and bits (defaults filled in), checked.
std::pair<int, int> check_params(const char* op, QuantMode mode, const std::string& name,
                                 std::optional<int> group_size, std::optional<int> bits) {
  if (mode == QuantMode::Affine) {
    int gs = group_size.value_or(64), b = bits.value_or(4);
    if (gs != 32 && gs != 64 && gs != 128)
      fail(op, "The requested group size ", gs, " is not supported. The supported group sizes are 32, 64, and 128.");
    if (b < 1 || b > 8 || b == 7)
      fail(op, "The requested number of bits ", b, " is not supported. The supported bits are 1, 2, 3, 4, 5, 6 and 8.");
    return {gs, b};
  }
  const int want_gs = mode == QuantMode::NvFp4 ? 16 : 32, want_bits = mode == QuantMode::MxFp8 ? 8 : 4;
  int gs = group_size.value_or(want_gs), b = bits.value_or(want_bits);
  if (gs != want_gs) fail(op, name, " quantization requires group size ", want_gs, " but got ", gs, ".");
  if (b != want_bits) fail(op, name, " quantization requires bits to be ", want_bits, " but got ", b, ".");
  return {gs, b};
}

void check_float(const char* op, const char* what, const array& a) {
  if (a.dtype() != Dtype::float32 && a.dtype() != Dtype::float16 && a.dtype() != Dtype::bfloat16)
    fail(op, what, " must be float32, float16 or bfloat16 but has dtype ", dtype_name(a.dtype()), ".");
}

array checked_global(const char* op, QuantMode mode, const array& g) {
  if (mode != QuantMode::NvFp4) fail(op, "A global scale is only supported with the nvfp4 mode.");
  if (g.size() != 1) fail(op, "The global scale must be a single value but has shape ", shp(g.shape()), ".");
  if (!is_floating(g.dtype())) fail(op, "The global scale must be floating point but has dtype ", dtype_name(g.dtype()), ".");
  return astype(reshape(g, {}), Dtype::float32);
}

// Checks codes, scales and biases for a matrix whose dequantized last axis
// has C = codes.shape(-1) * 32 / bits elements; returns C.
int64_t check_quantized(const char* op, QuantMode mode, int gs, int bits, const array& w, const array& scales,
                        const std::optional<array>& biases) {
  if (w.dtype() != Dtype::uint32)
    fail(op, "The quantized weights must be uint32 but have dtype ", dtype_name(w.dtype()), ".");
  if (w.ndim() < 2)
    fail(op, "The quantized weights must have at least 2 dimensions but have shape ", shp(w.shape()), ".");
  const int64_t C = w.shape(-1) * 32 / bits;
  if ((w.shape(-1) * 32) % bits != 0 || C % gs != 0)
    fail(op, "The last dimension of the quantized weights ", shp(w.shape()), " does not hold whole groups of ", gs,
         " values of ", bits, " bits.");
  Shape want = w.shape();
  want.back() = C / gs;
  if (scales.shape() != want)
    fail(op, "The scales must have shape ", shp(want), " for quantized weights of shape ", shp(w.shape()),
         " (group size ", gs, ", ", bits, " bits) but have shape ", shp(scales.shape()), ".");
  if (mode == QuantMode::Affine) {
    if (!biases) fail(op, "The affine mode requires biases.");
    if (biases->shape() != want)
      fail(op, "The biases must have shape ", shp(want), " for quantized weights of shape ", shp(w.shape()),
           " but have shape ", shp(biases->shape()), ".");
    check_float(op, "The scales", scales);
    check_float(op, "The biases", *biases);
  } else {
    if (biases) fail(op, "Biases can only be used with the affine mode.");
    if (scales.dtype() != Dtype::uint8)
      fail(op, "The scales of the fp modes must be uint8 but have dtype ", dtype_name(scales.dtype()), ".");
  }
  return C;
}

}  // namespace

std::vector<array> quantize(const array& w, std::optional<int> group_size, std::optional<int> bits,
                            const std::string& mode_name, const std::optional<array>& global_scale,
                            const StreamOrDevice& s) {
  const char* op = "quantize";
  QuantMode mode = parse_mode(op, mode_name);
  if (w.ndim() < 2)
    fail(op, "The matrix to be quantized must have at least 2 dimension but it has only ", w.ndim(), ".");
  // MLX's order: divisibility before the supported sizes (a size of 0 or
  // less is reported as unsupported, where MLX divides by it)
  const int want = group_size.value_or(mode == QuantMode::Affine ? 64 : mode == QuantMode::NvFp4 ? 16 : 32);
  if (want > 0 && w.shape(-1) % want != 0)
    fail(op, "The last dimension of the matrix needs to be divisible by the quantization group size ", want,
         ". However the provided  matrix has shape ", shp(w.shape()));
  auto [gs, b] = check_params(op, mode, mode_name, group_size, bits);
  check_float(op, "The matrix to be quantized", w);
  std::vector<array> in{w};
  if (global_scale) in.push_back(checked_global(op, mode, *global_scale));
  Shape qs = w.shape(), ss = w.shape();
  qs.back() = w.shape(-1) * b / 32;
  ss.back() = w.shape(-1) / gs;
  Stream st = to_stream(s);
  if (mode == QuantMode::Affine)
    return make_nodes<Quantize>({qs, ss, ss}, {Dtype::uint32, w.dtype(), w.dtype()}, std::move(in), st, gs, b, mode,
                                false);
  return make_nodes<Quantize>({qs, ss}, {Dtype::uint32, Dtype::uint8}, std::move(in), st, gs, b, mode,
                              global_scale.has_value());
}

array dequantize(const array& w, const array& scales, const std::optional<array>& biases,
                 std::optional<int> group_size, std::optional<int> bits, const std::string& mode_name,
                 const std::optional<array>& global_scale, std::optional<Dtype> dtype, const StreamOrDevice& s) {
  const char* op = "dequantize";
  QuantMode mode = parse_mode(op, mode_name);
  auto [gs, b] = check_params(op, mode, mode_name, group_size, bits);
  const int64_t C = check_quantized(op, mode, gs, b, w, scales, biases);
  Dtype out = dtype.value_or(mode == QuantMode::Affine ? scales.dtype() : Dtype::bfloat16);
  if (out != Dtype::float32 && out != Dtype::float16 && out != Dtype::bfloat16)
    fail(op, "The output dtype must be float32, float16 or bfloat16 but is ", dtype_name(out), ".");
  std::vector<array> in{w, scales};
  if (biases) in.push_back(*biases);
  if (global_scale) in.push_back(checked_global(op, mode, *global_scale));
  Shape os = w.shape();
  os.back() = C;
  return make_node<Dequantize>(os, out, std::move(in), to_stream(s), gs, b, mode, global_scale.has_value(), out);
}

array quantized_matmul(const array& x_in, const array& w, const array& scales, const std::optional<array>& biases,
                       bool transpose, std::optional<int> group_size, std::optional<int> bits,
                       const std::string& mode_name, const StreamOrDevice& s) {
  const char* op = "quantized_matmul";
  QuantMode mode = parse_mode(op, mode_name);
  auto [gs, b] = check_params(op, mode, mode_name, group_size, bits);
  const int64_t C = check_quantized(op, mode, gs, b, w, scales, biases);
  if (x_in.ndim() < 1) fail(op, "x must have at least 1 dimension but is a scalar.");
  if (!is_floating(x_in.dtype()) || x_in.dtype() == Dtype::float64)
    fail(op, "x must be float32, float16 or bfloat16 but has dtype ", dtype_name(x_in.dtype()), ".");
  const int64_t R = w.shape(-2);
  const int64_t K = transpose ? C : R, N = transpose ? R : C;
  const bool vec = x_in.ndim() == 1;
  array x = vec ? reshape(x_in, {1, x_in.shape(0)}, s) : x_in;
  if (x.shape(-1) != K)
    fail(op, "The last dimension of x ", shp(x_in.shape()), " does not match the ", transpose ? "" : "non-",
         "transposed quantized matrix of shape ", shp(transpose ? Shape{N, K} : Shape{K, N}), " (quantized weights ",
         shp(w.shape()), ").");
  Dtype t = x.dtype();
  if (mode == QuantMode::Affine) t = promote_types(promote_types(t, scales.dtype()), biases->dtype());
  if (t == Dtype::float64) fail(op, "float64 is not supported.");
  x = astype(x, t, s);
  std::vector<array> in{x, w, scales};
  if (biases) in.push_back(*biases);
  if (w.ndim() > 2 || x.ndim() > 2) {
    // the batch dims broadcast; every input gets the full batch
    Shape xb(x.shape().begin(), x.shape().end() - 2), wb(w.shape().begin(), w.shape().end() - 2);
    Shape batch = w.ndim() > 2 ? broadcast_shapes(xb, wb, op) : xb;
    if (w.ndim() > 2) {
      for (size_t i = 0; i < in.size(); ++i) {
        Shape sh = batch;
        sh.push_back(in[i].shape(-2));
        sh.push_back(in[i].shape(-1));
        if (in[i].shape() != sh) in[i] = contiguous(broadcast_to(in[i], sh, s), false, s);
      }
    }
  }
  Shape os = in[0].shape();
  os.back() = N;
  array out = make_node<QuantizedMatmul>(os, t, std::move(in), to_stream(s), gs, b, mode, transpose);
  if (vec) {
    Shape vs(os.begin(), os.end() - 2);
    vs.push_back(N);
    out = reshape(out, vs, s);
  }
  return out;
}

array gather_qmm(const array& x, const array& w, const array& scales, const std::optional<array>& biases,
                 const std::optional<array>& lhs_indices, const std::optional<array>& rhs_indices, bool transpose,
                 std::optional<int> group_size, std::optional<int> bits, const std::string& mode_name,
                 const std::optional<array>& global_scale, bool sorted_indices, const StreamOrDevice& s) {
  const char* op = "gather_qmm";
  QuantMode mode = parse_mode(op, mode_name);
  auto [gs, b] = check_params(op, mode, mode_name, group_size, bits);
  check_quantized(op, mode, gs, b, w, scales, biases);
  if (x.ndim() < 2) fail(op, "x must have at least 2 dimensions but has shape ", shp(x.shape()), ".");
  if (!lhs_indices && !rhs_indices && !global_scale)
    return quantized_matmul(x, w, scales, biases, transpose, gs, b, mode_name, s);
  auto check_idx = [&](const array& idx, const char* what) {
    if (!issubdtype(idx.dtype(), DtypeCategory::integer))
      fail(op, what, " must be integers but have dtype ", dtype_name(idx.dtype()), ".");
  };
  // the batch of x and of w, each flattened to one axis, gathered by the indices
  Shape xb(x.shape().begin(), x.shape().end() - 2), wb(w.shape().begin(), w.shape().end() - 2);
  int64_t nx = 1, nw = 1;
  for (auto d : xb) nx *= d;
  for (auto d : wb) nw *= d;
  array li = lhs_indices ? *lhs_indices : array(int64_t(0), Dtype::uint32);
  array ri = rhs_indices ? *rhs_indices : array(int64_t(0), Dtype::uint32);
  if (lhs_indices) check_idx(li, "lhs_indices");
  if (rhs_indices) check_idx(ri, "rhs_indices");
  auto iota = [&](const Shape& b, int64_t n) {
    return b.empty() ? array(int64_t(0), Dtype::uint32) : reshape(arange(0.0, double(n), 1.0, Dtype::uint32, s), b, s);
  };
  if (!lhs_indices) li = iota(xb, nx);
  if (!rhs_indices) ri = iota(wb, nw);
  Shape ib = broadcast_shapes(li.shape(), ri.shape(), op);
  li = broadcast_to(li, ib, s);
  ri = broadcast_to(ri, ib, s);
  auto flat_batch = [&](const array& a, int64_t n) {
    Shape sh{n, a.shape(-2), a.shape(-1)};
    return reshape(a, sh, s);
  };
  array idx_l = flatten(li, 0, -1, s), idx_r = flatten(ri, 0, -1, s);
  array xg = take(flat_batch(x, nx), idx_l, 0, s);
  array wg = take(flat_batch(w, nw), idx_r, 0, s);
  array sg = take(flat_batch(scales, nw), idx_r, 0, s);
  std::optional<array> bg;
  if (biases) bg = take(flat_batch(*biases, nw), idx_r, 0, s);
  (void)sorted_indices;  // a hint for the kernel's order; the result does not depend on it
  array out = quantized_matmul(xg, wg, sg, bg, transpose, gs, b, mode_name, s);
  if (global_scale) out = multiply(out, astype(divide(checked_global(op, mode, *global_scale), array(2688.0f, Dtype::float32), s), out.dtype(), s), s);
  Shape os = ib;
  os.push_back(out.shape(-2));
  os.push_back(out.shape(-1));
  return reshape(out, os, s);
}

namespace {

// x quantized and dequantized (float32) in the mode, for qqmm
array fake_quant(const char* op, const array& x, QuantMode mode, const std::string& mode_name, int gs, int bits,
                 const std::optional<array>& global_scale, const StreamOrDevice& s) {
  if (x.shape(-1) % gs != 0)
    fail(op, "The last dimension of x ", shp(x.shape()), " is not divisible by the group size ", gs, ".");
  Shape orig = x.shape();
  array x2 = reshape(x, {-1, x.shape(-1)}, s);
  auto q = quantize(x2, gs, bits, mode_name, global_scale, s);
  std::optional<array> b;
  if (mode == QuantMode::Affine) b = q[2];
  return reshape(dequantize(q[0], q[1], b, gs, bits, mode_name, global_scale, Dtype::float32, s), orig, s);
}

}  // namespace

array qqmm(const array& x, const array& w, const std::optional<array>& scales, std::optional<int> group_size,
           std::optional<int> bits, const std::string& mode_name, const std::optional<array>& global_scale_x,
           const std::optional<array>& global_scale_w, const StreamOrDevice& s) {
  return gather_qqmm(x, w, scales, std::nullopt, std::nullopt, group_size, bits, mode_name, global_scale_x,
                     global_scale_w, false, s);
}

array gather_qqmm(const array& x, const array& w, const std::optional<array>& scales,
                  const std::optional<array>& lhs_indices, const std::optional<array>& rhs_indices,
                  std::optional<int> group_size, std::optional<int> bits, const std::string& mode_name,
                  const std::optional<array>& global_scale_x, const std::optional<array>& global_scale_w,
                  bool sorted_indices, const StreamOrDevice& s) {
  const char* op = lhs_indices || rhs_indices ? "gather_qqmm" : "qqmm";
  QuantMode mode = parse_mode(op, mode_name);
  if (mode == QuantMode::Affine) fail(op, "The affine mode is not supported; use nvfp4, mxfp4 or mxfp8.");
  auto [gs, b] = check_params(op, mode, mode_name, group_size, bits);
  if (x.ndim() < 1) fail(op, "x must have at least 1 dimension but is a scalar.");
  if (!is_floating(x.dtype()) || x.dtype() == Dtype::float64)
    fail(op, "x must be float32, float16 or bfloat16 but has dtype ", dtype_name(x.dtype()), ".");
  array wq = w, ws = scales ? *scales : w;
  if (!scales) {  // w given unquantized
    if (w.ndim() < 2) fail(op, "w must have at least 2 dimensions but has shape ", shp(w.shape()), ".");
    auto q = quantize(w, gs, b, mode_name, global_scale_w, s);
    wq = q[0];
    ws = q[1];
  }
  check_quantized(op, mode, gs, b, wq, ws, std::nullopt);
  array xh = astype(fake_quant(op, x, mode, mode_name, gs, b, global_scale_x, s), x.dtype(), s);
  array out = gather_qmm(xh, wq, ws, std::nullopt, lhs_indices, rhs_indices, true, gs, b, mode_name, global_scale_w,
                         sorted_indices, s);
  return out;
}

}  // namespace ember
