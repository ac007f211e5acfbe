// Transform rules of ConvGeneral, written with conv_node and shape ops so
// that they differentiate and vmap again. With xp the dilated, padded input
// (extent P per dim), OS the output size and excess = P - ((OS-1)*stride +
// (K-1)*kdil + 1) the trailing input the windows never reach:
//   d/dinput   a convolution of the cotangent (input dilation = stride) with
//              the weight's in/out channels swapped per group, the flip
//              inverted, padding (K-1)*kdil - lo / (K-1)*kdil + excess - hi
//              and stride = input dilation (which lands on the real inputs).
//   d/dweight  a convolution whose batch is the input channel and whose
//              channels are (group, n): input x as (Cg, *S, G*N), kernel the
//              cotangent as (O, *OS, N), stride = kdil, kernel dilation =
//              stride, same input dilation, padding lo / hi - excess; the
//              result (Cg, *K, O) is transposed back (and flipped if flip).
//   jvp        conv(tx, w) + conv(x, tw) (bilinear).
//   vmap       a batched input folds into N, a batched weight into the
//              output channels (ordered group-major), both into groups.
#include "ember/primitives/conv.h"

#include "ember/ops.h"
#include "ember/ops/contract.h"
#include "ember/ops/conv.h"

namespace ember {

namespace {

Axes iota_axes(int from, int to) {
  Axes a;
  for (int i = from; i < to; ++i) a.push_back(i);
  return a;
}

int64_t excess(const ConvParams& p, int d, int64_t S, int64_t K, int64_t OS) {
  int64_t in_d = (S - 1) * p.input_dilation[d] + 1;
  int64_t P = in_d + p.pad_lo[d] + p.pad_hi[d];
  return P - ((OS - 1) * p.stride[d] + (K - 1) * p.kernel_dilation[d] + 1);
}

}  // namespace

bool ConvGeneral::is_equivalent(const Primitive& o) const {
  auto* c = dynamic_cast<const ConvGeneral*>(&o);
  return c && c->p_ == p_;
}

std::vector<array> ConvGeneral::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                    const std::vector<int>& argnums, const std::vector<array>& outputs) {
  const array &x = primals[0], &w = primals[1], &ct = cotangents[0];
  const int D = x.ndim() - 2;
  const int64_t N = x.shape(0), C = x.shape(-1), O = w.shape(0), G = p_.groups, Cg = C / G, Og = O / G;
  bool empty = x.size() == 0 || w.size() == 0 || ct.size() == 0;
  std::vector<array> grads;
  for (int arg : argnums) {
    const array& primal = primals[arg];
    if (empty) {
      grads.push_back(zeros_like(primal));
      continue;
    }
    if (arg == 0) {
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
      q.flip = !p_.flip;
      for (int d = 0; d < D; ++d) {
        int64_t K = w.shape(d + 1), span = (K - 1) * p_.kernel_dilation[d];
        int64_t ex = excess(p_, d, x.shape(d + 1), K, ct.shape(d + 1));
        q.stride.push_back(p_.input_dilation[d]);
        q.pad_lo.push_back(span - p_.pad_lo[d]);
        q.pad_hi.push_back(span + ex - p_.pad_hi[d]);
        q.kernel_dilation.push_back(p_.kernel_dilation[d]);
        q.input_dilation.push_back(p_.stride[d]);
      }
      grads.push_back(detail::conv_node(ct, wt, q, {}));
    } else {
      // x (N, *S, G, Cg) -> (Cg, *S, G, N) -> (Cg, *S, G*N)
      Shape xs{N};
      for (int d = 0; d < D; ++d) xs.push_back(x.shape(d + 1));
      xs.push_back(G);
      xs.push_back(Cg);
      Axes xperm{D + 2};
      for (int d = 0; d < D; ++d) xperm.push_back(d + 1);
      xperm.push_back(D + 1);
      xperm.push_back(0);
      Shape x2{Cg};
      for (int d = 0; d < D; ++d) x2.push_back(x.shape(d + 1));
      x2.push_back(G * N);
      array xi = reshape(transpose(reshape(x, xs), xperm), x2);
      // cotangent (N, *OS, O) -> (O, *OS, N)
      Axes cperm{D + 1};
      for (int d = 0; d < D; ++d) cperm.push_back(d + 1);
      cperm.push_back(0);
      array ck = transpose(ct, cperm);
      ConvParams q;
      q.groups = G;
      q.flip = false;
      for (int d = 0; d < D; ++d) {
        int64_t ex = excess(p_, d, x.shape(d + 1), w.shape(d + 1), ct.shape(d + 1));
        q.stride.push_back(p_.kernel_dilation[d]);
        q.pad_lo.push_back(p_.pad_lo[d]);
        q.pad_hi.push_back(p_.pad_hi[d] - ex);
        q.kernel_dilation.push_back(p_.stride[d]);
        q.input_dilation.push_back(p_.input_dilation[d]);
      }
      array y = detail::conv_node(xi, ck, q, {});  // (Cg, *K, O)
      Axes yperm{D + 1};
      for (int d = 0; d < D; ++d) yperm.push_back(d + 1);
      yperm.push_back(0);
      array gw = transpose(y, yperm);
      if (p_.flip) gw = flip(gw, iota_axes(1, D + 1));
      grads.push_back(gw);
    }
  }
  return grads;
}

std::vector<array> ConvGeneral::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                    const std::vector<int>& argnums, const std::vector<array>& outputs) {
  std::optional<array> out;
  for (size_t i = 0; i < argnums.size(); ++i) {
    array t = argnums[i] == 0 ? detail::conv_node(tangents[i], primals[1], p_, {})
                              : detail::conv_node(primals[0], tangents[i], p_, {});
    out = out ? add(*out, t) : t;
  }
  return {*out};
}

std::pair<std::vector<array>, std::vector<int>> ConvGeneral::vmap(const std::vector<array>& inputs,
                                                                  const std::vector<int>& axes) {
  array x = inputs[0], w = inputs[1];
  bool bx = axes[0] >= 0, bw = axes[1] >= 0;
  if (!bx && !bw) return {{detail::conv_node(x, w, p_, {})}, {-1}};
  if (bx) x = moveaxis(x, axes[0], 0);
  if (bw) w = moveaxis(w, axes[1], 0);
  const int64_t B = bx ? x.shape(0) : w.shape(0);
  const int D = (bx ? x.ndim() - 1 : x.ndim()) - 2;
  const int64_t G = p_.groups;
  auto tail = [](const array& a, int from) { return Shape(a.shape().begin() + from, a.shape().end()); };
  if (bx && !bw) {
    Shape s{B * x.shape(1)};
    for (int64_t v : tail(x, 2)) s.push_back(v);
    array y = detail::conv_node(reshape(x, s), w, p_, {});
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
    array y = detail::conv_node(x, wf, p_, {});  // (N, *OS, G*B*Og)
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
  array y = detail::conv_node(reshape(xm, xs), reshape(w, w2), q, {});
  Shape ys(y.shape().begin(), y.shape().end() - 1);
  ys.push_back(B);
  ys.push_back(O);
  return {{moveaxis(reshape(y, ys), -2, 0)}, {0}};
}

}  // namespace ember
