// Transform rules of Gather and Scatter (their kernels are in
// backend/cpu/indexing.cpp). Everything is written with gather/scatter
// themselves, so the rules differentiate and vmap again.
//
// vmap turns the batch into one more indexed axis: the batch axis of the
// source goes first and an arange over the batch joins the index arrays (on
// that axis), broadcast against them; an unbatched index array or update
// gets a size-1 batch axis that broadcasts, an unbatched source or
// destination B copies (the helpers in transforms/transforms.h).
// When only the source is batched the batch rides along as a non-indexed
// axis instead (no extra index array).
//
// Scatter's derivatives (kind by kind; MLX has Assign, Add, Max and Min,
// Ember adds Prod):
//   Assign  dst: the cotangent with the written positions zeroed; updates:
//           the cotangent gathered at their positions, but only for the
//           update that survives a repeated index (the last one): the others
//           never reach the output, so their cotangent is zero. (MLX gives
//           every update of a repeated index the gathered cotangent.)
//   Add     dst: the cotangent; updates: the gathered cotangent.
//   Max/Min as MLX: the cotangent reaches every input equal to the result at
//           its position (ties all get it).
//   Prod    out = dst * P with P the product of the updates at a position:
//           dst gets ct * conj(P); an update gets ct * conj(dst * product of
//           the other updates there), computed without dividing by zero
//           (MLX has no rule).
#include "ember/primitives/indexing.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "ember/ops.h"
#include "ember/primitives/shape.h"
#include "ember/transforms/transforms.h"

namespace ember {

namespace {

// arange(n) shaped [n, 1, ..., 1] with `trailing` size-1 dims: the batch
// index, broadcast against index arrays of rank `trailing`.
array batch_range(int64_t n, int trailing, Stream s) {
  Shape shape(trailing + 1, 1);
  shape[0] = n;
  return reshape(arange(0.0, static_cast<double>(n), 1.0, index_dtype(n), s), shape, s);
}

// The window of x (an array of the scattered array's shape) that `v`
// describes, as an array of shape v.size: window dim i is x's dim v.dims[i]
// sliced by start/step/size, or an inserted size-1 dim (-1). Dims of x that
// the window does not name are taken at 0 (as the kernel does).
array window_of(const array& x, const IndexView& v, Stream s) {
  int nd = x.ndim(), vn = static_cast<int>(v.dims.size());
  Shape start(nd, 0), stop(nd, 1), step(nd, 1);
  std::vector<bool> named(nd, false);
  std::vector<int> perm;  // x's dims in window order, then the unnamed ones
  for (int i = 0; i < vn; ++i) {
    int d = v.dims[i];
    if (d < 0) continue;
    if (named[d]) throw std::invalid_argument("[Scatter] A window naming a dim twice has no transform rules.");
    named[d] = true;
    perm.push_back(d);
    if (v.size[i] == 0) {
      stop[d] = 0;
    } else {
      start[d] = v.start[i];
      step[d] = v.step[i];
      stop[d] = v.start[i] + (v.size[i] - 1) * v.step[i] + (v.step[i] > 0 ? 1 : -1);
    }
  }
  for (int d = 0; d < nd; ++d) {
    if (!named[d]) perm.push_back(d);
  }
  array w = slice(x, start, stop, step, s);
  return reshape(transpose(w, perm, s), v.size, s);
}

// The pieces of a Scatter node the rules share.
struct ScatterParts {
  const IndexView& view;
  const std::vector<int>& axes;
  std::vector<array> idx;
  Stream s;

  ScatterParts(const Scatter& p, const std::vector<array>& inputs)
      : view(p.view()), axes(p.axes()), idx(inputs.begin() + 1, inputs.end() - 1), s(p.stream()) {}

  // x (the scattered array's shape) read where the updates go: the
  // updates' shape.
  array gat(const array& x) const {
    array w = window_of(x, view, s);
    return idx.empty() ? w : gather(w, idx, axes, s);
  }
  // base with u (the updates' shape) combined in at the same positions.
  array sct(const array& base, const array& u, ScatterKind kind) const {
    return scatter(base, view, idx, u, axes, kind, s);
  }

  // Whether each update survives to the output: with a repeated index only
  // the last write does. Found by scattering each update's own number and
  // reading back which number won.
  // (Done on an array of the window's shape, not dst's.)
  array survives(const array& upd) const {
    if (idx.empty()) return ones_like(upd, Dtype::bool_, s);  // one write per position
    Dtype t = index_dtype(upd.size());
    array ids = reshape(arange(0.0, static_cast<double>(upd.size()), 1.0, t, s), upd.shape(), s);
    array won = scatter(full(view.size, array(-1, t), t, s), idx, ids, axes, ScatterKind::Assign, s);
    return equal(gather(won, idx, axes, s), ids, s);
  }

  // For kind Prod: P (dst's shape), the product of the updates at each
  // position, and E (the updates' shape), d out / d update: dst times the
  // product of the other updates at that position. E never divides by
  // zero. Per position, with N the product of the nonzero updates, Zp the
  // product of the zero ones (0, or 1 when there are none), Z their number
  // and Zs their sum (0): a nonzero update's others multiply to N / u * Zp,
  // a zero update's to N times 1 (Z == 1), the other zero (Z == 2: Zs - u)
  // or 0. Written so, E is exact and so are its own first derivatives (the
  // second derivatives of the scatter) at any number of zeros.
  std::pair<array, array> prod_factors(const array& dst, const array& upd) const {
    array one = ones_like(dst, {}, s);
    array p = sct(one, upd, ScatterKind::Prod);
    array u0 = zeros_like(upd, {}, s), u1 = ones_like(upd, {}, s);
    array zero = equal(upd, u0, s);
    array u_safe = where(zero, u1, upd, s);
    array n_zero = gat(sct(zeros(dst.shape(), Dtype::int32, s), where(zero, array(1, Dtype::int32), array(0, Dtype::int32), s), ScatterKind::Add));
    array nz_prod = gat(sct(one, u_safe, ScatterKind::Prod));
    array z_prod = gat(sct(one, where(zero, upd, u1, s), ScatterKind::Prod));
    array z_sum = gat(sct(zeros_like(dst, {}, s), where(zero, upd, u0, s), ScatterKind::Add));
    auto count_is = [&](int c) { return equal(n_zero, array(c, Dtype::int32), s); };
    array other_zeros = where(count_is(1), u1, where(count_is(2), subtract(z_sum, upd, s), u0, s), s);
    array others = where(zero, multiply(nz_prod, other_zeros, s), multiply(divide(nz_prod, u_safe, s), z_prod, s), s);
    return {p, multiply(gat(dst), others, s)};
  }
};

}  // namespace

// ---- Gather ----

std::vector<array> Gather::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                               const std::vector<int>& argnums, const std::vector<array>&) {
  std::vector<array> idx(primals.begin() + 1, primals.end());
  std::vector<array> out;
  for (int a : argnums) {
    if (a != 0) {
      out.push_back(zeros_like(primals[a], {}, stream()));
      continue;
    }
    // every read adds its cotangent to the element it read
    out.push_back(scatter(zeros_like(primals[0], {}, stream()), idx, cotangents[0], axes_, ScatterKind::Add, stream()));
  }
  return out;
}

std::vector<array> Gather::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                               const std::vector<int>& argnums, const std::vector<array>& outputs) {
  std::vector<array> idx(primals.begin() + 1, primals.end());
  for (size_t i = 0; i < argnums.size(); ++i) {
    if (argnums[i] == 0) return {gather(tangents[i], idx, axes_, stream())};
  }
  return {zeros_like(outputs[0], {}, stream())};
}

std::pair<std::vector<array>, std::vector<int>> Gather::vmap(const std::vector<array>& inputs,
                                                             const std::vector<int>& axes) {
  Stream s = stream();
  const array& src = inputs[0];
  const int sa = axes[0];
  std::vector<array> idx(inputs.begin() + 1, inputs.end());
  bool idx_batched = std::any_of(axes.begin() + 1, axes.end(), [](int a) { return a >= 0; });
  if (!idx_batched) {
    if (sa < 0) return {{gather(src, idx, axes_, s)}, {-1}};
    // the batch is one more non-indexed dim of the source
    std::vector<int> g_axes;
    for (int a : axes_) g_axes.push_back(example_axis(a, sa));
    int before = 0;  // non-indexed source dims before the batch dim
    for (int d = 0; d < sa; ++d) before += std::find(g_axes.begin(), g_axes.end(), d) == g_axes.end();
    return {{gather(src, idx, g_axes, s)}, {idx[0].ndim() + before}};
  }
  int64_t b = batch_size(inputs, axes, name());
  std::vector<array> bidx;
  int n_index_dims = 0;
  for (size_t j = 0; j < idx.size(); ++j) {
    bidx.push_back(batch_axis_or_1_to(idx[j], axes[j + 1], 0, s));
    n_index_dims = bidx.back().ndim() - 1;
  }
  if (sa < 0) return {{gather(src, bidx, axes_, s)}, {0}};
  // batch of sources and of indices: index the source's batch dim by arange
  bidx.insert(bidx.begin(), batch_range(b, n_index_dims, s));
  std::vector<int> g_axes{0};
  for (int a : axes_) g_axes.push_back(a + 1);
  return {{gather(batch_axis_to(src, sa, 0, b, s), bidx, g_axes, s)}, {0}};
}

// ---- Scatter ----

// zeros.at[idx].add(u) + other is other.at[idx].add(u): a gather's cotangent
// (a scatter into zeros) summed with its source's other cotangents (a cross
// entropy's picked logits beside its logsumexp, tied embeddings) is one
// scatter into that sum, not an array of zeros, a scatter and an add over
// the whole source.
std::optional<array> Scatter::sum_with(const array& mine, const array& other) const {
  if (kind_ != ScatterKind::Add || mine.shape() != other.shape() || mine.dtype() != other.dtype()) return std::nullopt;
  const Node& n = *mine.desc()->node;
  if (n.inputs.size() < 2 || !known_zeros(n.inputs[0])) return std::nullopt;
  std::vector<array> idx(n.inputs.begin() + 1, n.inputs.end() - 1);
  return scatter(other, view_, idx, n.inputs.back(), axes_, ScatterKind::Add, stream());
}

std::vector<array> Scatter::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                const std::vector<int>& argnums, const std::vector<array>& outputs) {
  Stream s = stream();
  ScatterParts p(*this, primals);
  const array& ct = cotangents[0];
  const array& dst = primals[0];
  const array& upd = primals.back();
  const array& out = outputs[0];
  const int u_arg = static_cast<int>(primals.size()) - 1;
  std::vector<array> res;
  for (int a : argnums) {
    if (a != 0 && a != u_arg) {
      res.push_back(zeros_like(primals[a], {}, s));
      continue;
    }
    bool is_dst = a == 0;
    switch (kind_) {
      case ScatterKind::Assign:
        if (is_dst) {
          res.push_back(p.sct(ct, zeros_like(upd, {}, s), ScatterKind::Assign));
        } else {
          res.push_back(where(p.survives(upd), p.gat(ct), zeros_like(upd, {}, s), s));
        }
        break;
      case ScatterKind::Add:
        res.push_back(is_dst ? ct : p.gat(ct));
        break;
      case ScatterKind::Max:
      case ScatterKind::Min:
        // the cotangent goes to whatever equals the result there
        if (is_dst) {
          res.push_back(where(equal(out, dst, s), ct, zeros_like(ct, {}, s), s));
        } else {
          res.push_back(where(equal(p.gat(out), upd, s), p.gat(ct), zeros_like(upd, {}, s), s));
        }
        break;
      case ScatterKind::Prod: {
        auto [pr, e] = p.prod_factors(dst, upd);
        res.push_back(is_dst ? multiply(ct, conjugate(pr, s), s)
                             : multiply(p.gat(ct), conjugate(e, s), s));
        break;
      }
    }
  }
  return res;
}

std::vector<array> Scatter::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                const std::vector<int>& argnums, const std::vector<array>& outputs) {
  Stream s = stream();
  ScatterParts p(*this, primals);
  const array& dst = primals[0];
  const array& upd = primals.back();
  const int u_arg = static_cast<int>(primals.size()) - 1;
  std::optional<array> td, tu;
  for (size_t i = 0; i < argnums.size(); ++i) {
    if (argnums[i] == 0) td = tangents[i];
    if (argnums[i] == u_arg) tu = tangents[i];
  }
  if (!td && !tu) return {zeros_like(outputs[0], {}, s)};
  array t_dst = td ? *td : zeros_like(dst, {}, s);
  array t_upd = tu ? *tu : zeros_like(upd, {}, s);
  switch (kind_) {
    case ScatterKind::Assign:
    case ScatterKind::Add:
      return {p.sct(t_dst, t_upd, kind_)};
    case ScatterKind::Max:
    case ScatterKind::Min: {
      // the transpose of the vjp: each input equal to the result passes its tangent
      const array& out = outputs[0];
      array keep_dst = where(equal(out, dst, s), t_dst, zeros_like(t_dst, {}, s), s);
      array keep_upd = where(equal(p.gat(out), upd, s), t_upd, zeros_like(t_upd, {}, s), s);
      return {p.sct(keep_dst, keep_upd, ScatterKind::Add)};
    }
    case ScatterKind::Prod: {
      auto [pr, e] = p.prod_factors(dst, upd);
      return {p.sct(multiply(t_dst, pr, s), multiply(e, t_upd, s), ScatterKind::Add)};
    }
  }
  return {};
}

std::pair<std::vector<array>, std::vector<int>> Scatter::vmap(const std::vector<array>& inputs,
                                                              const std::vector<int>& axes) {
  Stream s = stream();
  const array& dst = inputs[0];
  const int da = axes[0];
  const array& upd = inputs.back();
  const int ua = axes.back();
  std::vector<array> idx(inputs.begin() + 1, inputs.end() - 1);
  const int n_index_dims = idx.empty() ? 0 : idx[0].ndim() - (axes[1] >= 0);
  bool others_batched = std::any_of(axes.begin() + 1, axes.end(), [](int a) { return a >= 0; });
  if (da < 0 && !others_batched) return {{scatter(dst, view_, idx, upd, axes_, kind_, s)}, {-1}};
  int64_t b = batch_size(inputs, axes, name());
  // the batch becomes window dim 0 (dst's dim 0)
  IndexView v;
  v.dims.push_back(0);
  v.start.push_back(0);
  v.step.push_back(1);
  v.size.push_back(b);
  for (size_t i = 0; i < view_.dims.size(); ++i) {
    v.dims.push_back(view_.dims[i] < 0 ? -1 : view_.dims[i] + 1);
    v.start.push_back(view_.start[i]);
    v.step.push_back(view_.step[i]);
    v.size.push_back(view_.size[i]);
  }
  std::vector<int> s_axes;
  for (int a : axes_) s_axes.push_back(a + 1);
  if (!others_batched) {
    // only dst is batched: the batch is a non-indexed window dim, the first
    // of the updates' trailing dims (where the same updates broadcast)
    array u = batch_axis_or_1_to(upd, ua, n_index_dims, s);  // ua == -1
    return {{scatter(batch_axis_to(dst, da, 0, b, s), v, idx, u, s_axes, kind_, s)}, {0}};
  }
  // every example writes its own copy of dst
  array bdst = batch_axis_to(dst, da, 0, b, s);
  std::vector<array> bidx{batch_range(b, n_index_dims, s)};
  for (size_t j = 0; j < idx.size(); ++j) bidx.push_back(batch_axis_or_1_to(idx[j], axes[j + 1], 0, s));
  s_axes.insert(s_axes.begin(), 0);
  return {{scatter(bdst, v, bidx, batch_axis_or_1_to(upd, ua, 0, s), s_axes, kind_, s)}, {0}};
}

}  // namespace ember
