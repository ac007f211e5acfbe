// Transform rules of ConvGeneral, written with conv_node and shape ops so
// that they differentiate and vmap again. With xp the dilated, padded input
// (extent P per dim), OS the output size and excess = P - ((OS-1)*stride +
// (K-1)*kdil + 1) the trailing input the windows never reach:
//   d/dinput   a convolution of the cotangent (input dilation = stride) with
//              the weight's in/out channels swapped per group, the flip
//              inverted, padding (K-1)*kdil - lo / (K-1)*kdil + excess - hi
//              and stride = input dilation (which lands on the real inputs).
//   d/dweight  ConvWeightGrad(x, ct): the kernel reuses the forward
//              im2col blocks (dW_g += ct_g^T col_g). It is bilinear, and
//              <dWbar, F(x, ct)> = <ct, conv(x, dWbar)>: its vjp is the
//              input gradient above with dWbar as weight (for x) and
//              conv(x, dWbar) (for ct); its vmap folds the batch into groups.
//   jvp        conv(tx, w) + conv(x, tw) (bilinear).
//   vmap       a batched input folds into N, a batched weight into the
//              output channels (ordered group-major), both into groups.
#include "ember/primitives/conv.h"

#include "ember/ops.h"
#include "ember/transforms/transforms.h"

namespace ember {

namespace {

// Spatial extent of the dilated, padded input and the output size.
int64_t out_size(int64_t S, int64_t K, int64_t stride, int64_t lo, int64_t hi, int64_t kd, int64_t id) {
  int64_t in_d = S > 0 ? (S - 1) * id + 1 : 0;
  int64_t padded = in_d + lo + hi;
  int64_t ke = K > 0 ? (K - 1) * kd + 1 : 0;
  return padded >= ke ? (padded - ke) / stride + 1 : 0;
}

int64_t excess(const ConvParams& p, int d, int64_t S, int64_t K, int64_t OS) {
  int64_t in_d = (S - 1) * p.input_dilation[d] + 1;
  int64_t P = in_d + p.pad_lo[d] + p.pad_hi[d];
  return P - ((OS - 1) * p.stride[d] + (K - 1) * p.kernel_dilation[d] + 1);
}

}  // namespace

array conv_node(const array& input, const array& weight, const ConvParams& p, Stream s) {
  int D = input.ndim() - 2;
  Shape out_shape{input.shape(0)};
  for (int d = 0; d < D; ++d) {
    out_shape.push_back(out_size(input.shape(d + 1), weight.shape(d + 1), p.stride[d], p.pad_lo[d], p.pad_hi[d],
                                 p.kernel_dilation[d], p.input_dilation[d]));
  }
  out_shape.push_back(weight.shape(0));
  return make_node<ConvGeneral>(std::move(out_shape), input.dtype(), {input, weight}, s, p);
}

bool ConvGeneral::is_equivalent(const Primitive& o) const {
  auto* c = dynamic_cast<const ConvGeneral*>(&o);
  return c && c->p_ == p_;
}

namespace {

// d/dinput of conv(x, w) for the output cotangent ct.
array input_grad(const array& ct, const array& w, const Shape& x_shape, const ConvParams& p) {
  const int D = static_cast<int>(x_shape.size()) - 2;
  const int64_t C = x_shape.back(), O = w.shape(0), G = p.groups, Cg = C / G, Og = O / G;
  // weight (G, Og, *K, Cg) -> (G, Cg, *K, Og) -> (C, *K, Og)
  Shape ws{G, Og};
  for (int d = 0; d < D; ++d) ws.push_back(w.shape(d + 1));
  ws.push_back(Cg);
  Axes perm{0, D + 2};
  for (int d = 0; d < D; ++d) perm.push_back(d + 2);
  perm.push_back(1);
  Shape wt_shape{C};
  for (int d = 0; d < D; ++d) wt_shape.push_back(w.shape(d + 1));
  wt_shape.push_back(Og);
  array wt = reshape(transpose(reshape(w, ws), perm), wt_shape);
  ConvParams q;
  q.groups = G;
  q.flip = !p.flip;
  for (int d = 0; d < D; ++d) {
    int64_t K = w.shape(d + 1), span = (K - 1) * p.kernel_dilation[d];
    int64_t ex = excess(p, d, x_shape[d + 1], K, ct.shape(d + 1));
    q.stride.push_back(p.input_dilation[d]);
    q.pad_lo.push_back(span - p.pad_lo[d]);
    q.pad_hi.push_back(span + ex - p.pad_hi[d]);
    q.kernel_dilation.push_back(p.kernel_dilation[d]);
    q.input_dilation.push_back(p.stride[d]);
  }
  return conv_node(ct, wt, q, to_stream({}));
}

// d/dweight of conv(x, w) for the output cotangent ct.
array weight_grad(const array& x, const array& ct, const Shape& w_shape, const ConvParams& p) {
  return make_node<ConvWeightGrad>(w_shape, x.dtype(), {x, ct}, to_stream({}), p, w_shape);
}

bool has_empty(const std::vector<array>& v) {
  for (auto& a : v) {
    if (a.size() == 0) return true;
  }
  return false;
}

}  // namespace

std::vector<array> ConvGeneral::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                    const std::vector<int>& argnums, const std::vector<array>& outputs) {
  const array &x = primals[0], &w = primals[1], &ct = cotangents[0];
  bool empty = has_empty({x, w, ct});
  std::vector<array> grads;
  for (int arg : argnums) {
    if (empty) {
      grads.push_back(zeros_like(primals[arg]));
    } else if (arg == 0) {
      grads.push_back(input_grad(ct, w, x.shape(), p_));
    } else {
      grads.push_back(weight_grad(x, ct, w.shape(), p_));
    }
  }
  return grads;
}

std::vector<array> ConvGeneral::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                    const std::vector<int>& argnums, const std::vector<array>& outputs) {
  std::optional<array> out;
  for (size_t i = 0; i < argnums.size(); ++i) {
    array t = argnums[i] == 0 ? conv_node(tangents[i], primals[1], p_, to_stream({}))
                              : conv_node(primals[0], tangents[i], p_, to_stream({}));
    out = out ? add(*out, t) : t;
  }
  return {*out};
}

std::pair<std::vector<array>, std::vector<int>> ConvGeneral::vmap(const std::vector<array>& inputs,
                                                                  const std::vector<int>& axes) {
  array x = inputs[0], w = inputs[1];
  bool bx = axes[0] >= 0, bw = axes[1] >= 0;
  if (!bx && !bw) return {{conv_node(x, w, p_, to_stream({}))}, {-1}};
  const int64_t B = batch_size(inputs, axes, name());
  if (bx) x = batch_axis_to(x, axes[0], 0, B);
  if (bw) w = batch_axis_to(w, axes[1], 0, B);
  const int D = (bx ? x.ndim() - 1 : x.ndim()) - 2;
  const int64_t G = p_.groups;
  auto tail = [](const array& a, int from) { return Shape(a.shape().begin() + from, a.shape().end()); };
  if (bx && !bw) {
    Shape s{B * x.shape(1)};
    for (int64_t v : tail(x, 2)) s.push_back(v);
    array y = conv_node(reshape(x, s), w, p_, to_stream({}));
    Shape ys{B, x.shape(1)};
    for (int64_t v : tail(y, 1)) ys.push_back(v);
    return {{reshape(y, ys)}, {0}};
  }
  const int64_t O = w.shape(1), Og = O / G;
  if (!bx) {
    // w (B, G, Og, *K, Cg) -> (G, B, Og, *K, Cg) -> (G*B*Og, *K, Cg)
    Shape ws{B, G, Og};
    for (int64_t v : tail(w, 2)) ws.push_back(v);
    Axes perm{1, 0};
    for (int i = 2; i < static_cast<int>(ws.size()); ++i) perm.push_back(i);
    Shape w2{G * B * Og};
    for (int64_t v : tail(w, 2)) w2.push_back(v);
    array wf = reshape(transpose(reshape(w, ws), perm), w2);
    array y = conv_node(x, wf, p_, to_stream({}));  // (N, *OS, G*B*Og)
    Shape ys(y.shape().begin(), y.shape().end() - 1);
    ys.push_back(G);
    ys.push_back(B);
    ys.push_back(Og);
    Axes yperm{D + 2};
    for (int i = 0; i < D + 2; ++i) yperm.push_back(i);
    yperm.push_back(D + 3);
    Shape out_shape{B};
    for (int64_t v : y.shape()) out_shape.push_back(v);
    out_shape.back() = O;
    return {{reshape(transpose(reshape(y, ys), yperm), out_shape)}, {0}};
  }
  // both batched: (N, *S, B*C) against (B*O, *K, Cg) with B*G groups
  array xm = moveaxis(x, 0, -2);
  Shape xs(xm.shape().begin(), xm.shape().end() - 2);
  xs.push_back(B * x.shape(-1));
  Shape w2{B * O};
  for (int64_t v : tail(w, 2)) w2.push_back(v);
  ConvParams q = p_;
  q.groups = B * G;
  array y = conv_node(reshape(xm, xs), reshape(w, w2), q, to_stream({}));
  Shape ys(y.shape().begin(), y.shape().end() - 1);
  ys.push_back(B);
  ys.push_back(O);
  return {{moveaxis(reshape(y, ys), -2, 0)}, {0}};
}

}  // namespace ember

namespace ember {

bool ConvWeightGrad::is_equivalent(const Primitive& o) const {
  auto* c = dynamic_cast<const ConvWeightGrad*>(&o);
  return c && c->p_ == p_ && c->w_shape_ == w_shape_;
}

// dW = F(x, ct) with <dWbar, F(x, ct)> = <ct, conv(x, dWbar)>.
std::vector<array> ConvWeightGrad::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                       const std::vector<int>& argnums, const std::vector<array>& outputs) {
  const array &x = primals[0], &ct = primals[1], &wbar = cotangents[0];
  bool empty = has_empty({x, ct, wbar});
  std::vector<array> grads;
  for (int arg : argnums) {
    if (empty) {
      grads.push_back(zeros_like(primals[arg]));
    } else if (arg == 0) {
      grads.push_back(input_grad(ct, wbar, x.shape(), p_));
    } else {
      grads.push_back(conv_node(x, wbar, p_, to_stream({})));
    }
  }
  return grads;
}

std::vector<array> ConvWeightGrad::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                       const std::vector<int>& argnums, const std::vector<array>& outputs) {
  const Shape& ws = outputs[0].shape();
  std::optional<array> out;
  for (size_t i = 0; i < argnums.size(); ++i) {
    array t = argnums[i] == 0 ? weight_grad(tangents[i], primals[1], ws, p_)
                              : weight_grad(primals[0], tangents[i], ws, p_);
    out = out ? add(*out, t) : t;
  }
  return {*out};
}

// Both operands batched (an unbatched one is broadcast): the batch folds
// into the groups, (N, *S, B*C) and (N, *OS, B*O) give (B*O, *K, Cg).
std::pair<std::vector<array>, std::vector<int>> ConvWeightGrad::vmap(const std::vector<array>& inputs,
                                                                     const std::vector<int>& axes) {
  array x = inputs[0], ct = inputs[1];
  const Shape& ws = w_shape_;
  if (axes[0] < 0 && axes[1] < 0) return {{weight_grad(x, ct, ws, p_)}, {-1}};
  const int64_t B = batch_size(inputs, axes, name());
  auto fold = [B](const array& a) {  // (B, N, ..., C) -> (N, ..., B*C)
    array m = moveaxis(a, 0, -2);
    Shape s(m.shape().begin(), m.shape().end() - 2);
    s.push_back(B * a.shape(-1));
    return reshape(m, s);
  };
  ConvParams q = p_;
  q.groups = B * p_.groups;
  Shape fs = ws;
  fs[0] *= B;
  array y = weight_grad(fold(batch_axis_to(x, axes[0], 0, B)), fold(batch_axis_to(ct, axes[1], 0, B)), fs, q);
  Shape out{B};
  for (int64_t v : ws) out.push_back(v);
  return {{reshape(y, out)}, {0}};
}

}  // namespace ember
