// Transform rules of the sorting, scan, searchsorted and unique primitives
// (kernels in backend/cpu/sort.cpp), written with public ops so they
// differentiate and vmap again.
//
// Sort, Partition and TopK move elements: their derivatives follow the
// permutation (argsort / argpartition of the input), gathered for jvp and
// scattered back for vjp. ArgSort, ArgPartition, SearchSorted and Unique's
// index outputs are integers: the transforms never ask for their
// derivatives. Unique's values are input elements (the first occurrence of
// each, or the fill value in padded slots), so they get rules through its
// index output (MLX has no unique; Ember differentiates it like a gather).
//
// Scans, with S(j) the positions scan output j combines (k <= j, k < j,
// k >= j or k > j by reverse/inclusive) and "the opposite scan" the one
// summing over {j : k in S(j)} (reverse flipped, inclusive kept):
//   Sum        jvp cumsum(t); vjp the opposite cumsum of ct.
//   Prod       jvp and vjp from y = cumprod(x) without dividing by zero:
//              positions before the first zero (in scan direction) use
//              y / x, the first zero uses the scan with that zero set to 1,
//              later positions get nothing (every product through them
//              holds the first zero).
//   Max/Min    the output at j comes from one input position (the latest
//              one where the running extreme was reached, NaN included):
//              jvp gathers from it, vjp adds ct back into it.
//   LogAddExp  dy_j/dx_k = exp(x_k - y_j): real types sum those weights in
//              log space (positive and negative parts of the tangent or
//              cotangent apart), so nothing overflows; complex ones use
//              exp(x) and exp(-y) directly.
#include "ember/primitives/sort.h"

#include <algorithm>
#include <limits>

#include "ember/ops.h"
#include "ember/transforms/transforms.h"

namespace ember {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// int32 1 where mask, else 0 (a select rather than a cast: the rules' own
// graphs then vmap through the elementwise rules alone)
array ones_where(const array& mask, Stream s) {
  return where(mask, array(1, Dtype::int32), array(0, Dtype::int32), s);
}

// arange(n) laid along `axis` of an ndim-d array (size 1 elsewhere).
array axis_positions(int64_t n, int axis, int ndim, Dtype t, Stream s) {
  Shape shape(ndim, 1);
  shape[axis] = n;
  return reshape(arange(0.0, static_cast<double>(n), 1.0, t, s), shape, s);
}

// Index arrays that address `idx` (positions along `axis`) in an array of
// idx's shape: idx itself on `axis`, aranges on the other dims.
std::vector<array> along(const array& idx, int axis, Stream s) {
  std::vector<array> out;
  for (int d = 0; d < idx.ndim(); ++d) {
    out.push_back(d == axis ? idx : axis_positions(idx.shape(d), d, idx.ndim(), index_dtype(idx.shape(d)), s));
  }
  return out;
}

std::vector<int> all_dims(int n) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i) v[i] = i;
  return v;
}

// base with vals added at positions idx along axis (idx, vals: one shape).
array add_along_axis(const array& base, const array& idx, const array& vals, int axis, Stream s) {
  return scatter(base, along(idx, axis, s), vals, all_dims(base.ndim()), ScatterKind::Add, s);
}

// The input positions (along axis) that a Sort / Partition / TopK output
// takes its elements from.
array source_positions(const Sorting& p, const array& x, Stream s) {
  int ax = p.axis();
  switch (p.kind()) {
    case Sorting::Partition:
      return argpartition(x, static_cast<int>(p.param()), ax, s);
    case Sorting::TopK: {
      // the k largest are the last k of the ascending order (NaN last, as TopK)
      array order = argsort(x, ax, s);
      Shape start(x.ndim(), 0), stop = x.shape(), step(x.ndim(), 1);
      start[ax] = x.shape(ax) - p.param();
      return slice(order, start, stop, step, s);
    }
    default:
      return argsort(x, ax, s);
  }
}

}  // namespace

// ---- Sorting ----

std::vector<array> Sorting::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                const std::vector<int>& argnums, const std::vector<array>&) {
  if (kind_ == ArgSort || kind_ == ArgPartition) no_rule("vjp");  // integer outputs
  Stream s = stream();
  const array& x = primals[0];
  array src = source_positions(*this, x, s);
  // distinct positions: the cotangent lands where each element came from
  return {add_along_axis(zeros_like(x, {}, s), src, cotangents[0], axis_, s)};
}

std::vector<array> Sorting::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                const std::vector<int>& argnums, const std::vector<array>&) {
  if (kind_ == ArgSort || kind_ == ArgPartition) no_rule("jvp");
  Stream s = stream();
  return {take_along_axis(tangents[0], source_positions(*this, primals[0], s), axis_, s)};
}

std::pair<std::vector<array>, std::vector<int>> Sorting::vmap(const std::vector<array>& inputs,
                                                              const std::vector<int>& axes) {
  Stream s = stream();
  int b = axes[0], ax = example_axis(axis_, b);
  const array& x = inputs[0];
  int k = static_cast<int>(param_);
  switch (kind_) {
    case Sort: return {{sort(x, ax, s)}, {b}};
    case ArgSort: return {{argsort(x, ax, s)}, {b}};
    case Partition: return {{partition(x, k, ax, s)}, {b}};
    case ArgPartition: return {{argpartition(x, k, ax, s)}, {b}};
    case TopK: return {{topk(x, k, ax, s)}, {b}};
  }
  return {};
}

// ---- Scan ----

namespace {

// The scan of `kind` with the given flags (the input's dtype is kept: the
// op layer casts before the node, and the rules only feed inexact arrays or
// int32 counts to Sum).
array scan_op(const array& x, Scan::Kind kind, int axis, bool reverse, bool inclusive, Stream s) {
  switch (kind) {
    case Scan::Sum: return cumsum(x, axis, reverse, inclusive, {}, s);
    case Scan::Prod: return cumprod(x, axis, reverse, inclusive, {}, s);
    case Scan::Max: return cummax(x, axis, reverse, inclusive, s);
    case Scan::Min: return cummin(x, axis, reverse, inclusive, s);
    case Scan::LogAddExp: return logcumsumexp(x, axis, reverse, inclusive, s);
  }
  return x;
}

// log(v) where v > 0, -inf elsewhere (no log of 0 or of negatives, so no
// NaN reaches a derivative either).
array log_positive(const array& v, Stream s) {
  array pos = greater(v, zeros_like(v, {}, s), s);
  array one = ones_like(v, {}, s);
  return where(pos, log(where(pos, v, one, s), s), array(-kInf, v.dtype()), s);
}

// sum over the scan set of v_k * exp(w_k), as exp(L+) - exp(L-) with L± the
// log-sum-exp scans of log(±v) + w, each shifted by `shift` before exp.
array signed_exp_scan(const array& v, const array& w, const array& shift, int axis, bool reverse, bool inclusive,
                      Stream s) {
  array lp = logcumsumexp(add(log_positive(v, s), w, s), axis, reverse, inclusive, s);
  array ln = logcumsumexp(add(log_positive(negative(v, s), s), w, s), axis, reverse, inclusive, s);
  return subtract(exp(add(lp, shift, s), s), exp(add(ln, shift, s), s), s);
}

// For Max/Min scans: the input position each output comes from, and
// whether it has one (an exclusive scan's first output has none).
std::pair<array, array> extreme_sources(const Scan& p, const array& x, const array& y_incl, Stream s) {
  int ax = p.axis();
  int64_t n = x.shape(ax);
  Dtype t = index_dtype(n + 1);
  array pos = axis_positions(n, ax, x.ndim(), t, s);
  array hit = equal(x, y_incl, s);
  if (is_inexact(x.dtype())) hit = logical_or(hit, logical_and(isnan(x, s), isnan(y_incl, s), s), s);
  // the nearest hit at or before j in scan direction: latest (forward) or
  // earliest (reverse) hit position among those the scan covers
  array src;
  array valid;
  if (!p.reverse()) {
    src = cummax(where(hit, pos, array(-1, t), s), ax, false, p.inclusive(), s);
    valid = greater_equal(src, array(0, t), s);
  } else {
    src = cummin(where(hit, pos, array(n, t), s), ax, true, p.inclusive(), s);
    valid = less(src, array(n, t), s);
  }
  return {where(valid, src, zeros_like(src, {}, s), s), valid};
}

// Zero bookkeeping of a Prod scan: which positions are zero, the first zero
// in scan direction, whether a zero came strictly before, the scan with the
// first zero set to one, and x with every zero set to one.
struct ProdZeros {
  array zero, first_zero, zero_before, y1, x_safe;
};

ProdZeros prod_zeros(const Scan& p, const array& x, Stream s) {
  int ax = p.axis();
  bool rev = p.reverse();
  array zero = equal(x, zeros_like(x, {}, s), s);
  array zi = ones_where(zero, s);
  array before = cumsum(zi, ax, rev, false, {}, s);  // zeros strictly before
  array none_before = equal(before, array(0, Dtype::int32), s);
  array first_zero = logical_and(zero, none_before, s);
  array one = ones_like(x, {}, s);
  array y1 = cumprod(where(first_zero, one, x, s), ax, rev, p.inclusive(), {}, s);
  return {zero, first_zero, logical_not(none_before, s), y1, where(zero, one, x, s)};
}

}  // namespace

std::vector<array> Scan::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                             const std::vector<int>& argnums, const std::vector<array>& outputs) {
  Stream s = stream();
  const array& x = primals[0];
  const array& ct = cotangents[0];
  const array& y = outputs[0];
  const bool opp = !reverse_;  // direction of the opposite scan
  switch (kind_) {
    case Sum:
      return {cumsum(ct, axis_, opp, inclusive_, {}, s)};
    case Prod: {
      ProdZeros z = prod_zeros(*this, x, s);
      array regular = divide(cumsum(multiply(ct, conjugate(y, s), s), axis_, opp, inclusive_, {}, s),
                             conjugate(z.x_safe, s), s);
      array at_zero = cumsum(multiply(ct, conjugate(z.y1, s), s), axis_, opp, inclusive_, {}, s);
      // after the first zero: 0, written as (first zero) * (the rest) for a
      // nonzero x, so the second derivatives are exact with one zero too
      array first = sum(where(z.first_zero, x, zeros_like(x, {}, s), s), Axes{axis_}, true, s);
      array after = where(z.zero, zeros_like(x, {}, s),
                          multiply(conjugate(first, s), divide(at_zero, conjugate(z.x_safe, s), s), s), s);
      return {where(z.first_zero, at_zero, where(z.zero_before, after, regular, s), s)};
    }
    case Max:
    case Min: {
      array y_incl = inclusive_ ? y : scan_op(x, kind_, axis_, reverse_, true, s);
      auto [src, valid] = extreme_sources(*this, x, y_incl, s);
      return {add_along_axis(zeros_like(x, {}, s), src, where(valid, ct, zeros_like(ct, {}, s), s), axis_, s)};
    }
    case LogAddExp: {
      if (is_complex(x.dtype())) {
        array w = exp(negative(y, s), s);
        array masked = where(isneginf(real(y, s), s), zeros_like(w, {}, s), w, s);  // empty sets
        array r = cumsum(multiply(ct, conjugate(masked, s), s), axis_, opp, inclusive_, {}, s);
        return {multiply(conjugate(exp(x, s), s), r, s)};
      }
      // ct_x[k] = sum_{j : k in S(j)} ct[j] exp(x[k] - y[j]); an empty S(j) (y = -inf) adds nothing
      array w = where(isneginf(y, s), array(-kInf, y.dtype()), negative(y, s), s);
      return {signed_exp_scan(ct, w, x, axis_, opp, inclusive_, s)};
    }
  }
  return {};
}

std::vector<array> Scan::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                             const std::vector<int>& argnums, const std::vector<array>& outputs) {
  Stream s = stream();
  const array& x = primals[0];
  const array& t = tangents[0];
  const array& y = outputs[0];
  switch (kind_) {
    case Sum:
      return {cumsum(t, axis_, reverse_, inclusive_, {}, s)};
    case Prod: {
      ProdZeros z = prod_zeros(*this, x, s);
      // zeros in S(j): none -> y * scan(t / x); exactly one (the first
      // zero) -> only its own term survives; more -> 0
      array zs = cumsum(ones_where(z.zero, s), axis_, reverse_, inclusive_, {}, s);
      array none = multiply(y, cumsum(divide(t, z.x_safe, s), axis_, reverse_, inclusive_, {}, s), s);
      array one = multiply(z.y1, cumsum(where(z.first_zero, t, zeros_like(t, {}, s), s), axis_, reverse_, inclusive_, {}, s), s);
      return {where(equal(zs, array(0, Dtype::int32), s), none,
                    where(equal(zs, array(1, Dtype::int32), s), one, zeros_like(y, {}, s), s), s)};
    }
    case Max:
    case Min: {
      array y_incl = inclusive_ ? y : scan_op(x, kind_, axis_, reverse_, true, s);
      auto [src, valid] = extreme_sources(*this, x, y_incl, s);
      array g = take_along_axis(t, src, axis_, s);
      return {where(valid, g, zeros_like(g, {}, s), s)};
    }
    case LogAddExp: {
      array empty = isneginf(is_complex(y.dtype()) ? real(y, s) : y, s);
      array ty;
      if (is_complex(x.dtype())) {
        ty = multiply(exp(negative(y, s), s), cumsum(multiply(t, exp(x, s), s), axis_, reverse_, inclusive_, {}, s), s);
      } else {
        ty = signed_exp_scan(t, x, negative(y, s), axis_, reverse_, inclusive_, s);
      }
      return {where(empty, zeros_like(ty, {}, s), ty, s)};
    }
  }
  return {};
}

std::pair<std::vector<array>, std::vector<int>> Scan::vmap(const std::vector<array>& inputs,
                                                           const std::vector<int>& axes) {
  int b = axes[0];
  return {{scan_op(inputs[0], kind_, example_axis(axis_, b), reverse_, inclusive_, stream())}, {b}};
}

// ---- SearchSorted ----

std::pair<std::vector<array>, std::vector<int>> SearchSorted::vmap(const std::vector<array>& inputs,
                                                                   const std::vector<int>& axes) {
  Stream s = stream();
  const std::string side = right_ ? "right" : "left";
  const array& sorted = inputs[0];
  const array& values = inputs[1];
  if (axes[0] < 0) return {{searchsorted(sorted, values, side, s)}, {axes[1]}};
  const int64_t b = batch_size(inputs, axes, name());
  // A batch of sorted rows: merge each row with its values in one stable
  // sort. Values placed before (left) or after (right) the sorted elements
  // land before / after equal ones; a value's insertion index is then its
  // merged rank minus the number of values ranked before it.
  array rows = batch_axis_to(sorted, axes[0], 0, b, s);
  const int64_t n = rows.shape(1);
  array vals = batch_axis_to(values, axes[1], 0, b, s);
  const Shape full_shape = vals.shape();
  int64_t m = 1;
  for (size_t d = 1; d < full_shape.size(); ++d) m *= full_shape[d];
  vals = reshape(vals, {b, m}, s);
  array merged = right_ ? concatenate({rows, vals}, 1, s) : concatenate({vals, rows}, 1, s);
  array rank = argsort(argsort(merged, 1, s), 1, s);  // the inverse permutation
  int64_t off = right_ ? n : 0;
  array vrank = slice(rank, {0, off}, {b, off + m}, {1, 1}, s);
  array among_values = argsort(argsort(vals, 1, s), 1, s);
  return {{reshape(subtract(vrank, among_values, s), full_shape, s)}, {0}};
}

// ---- Unique ----

namespace {
// Unique's index and counts outputs; recomputed when nobody holds them any
// more (the transforms pass dead siblings as empty handles).
std::pair<array, array> index_and_counts(const std::vector<array>& primals, const std::vector<array>& outputs,
                                         int64_t size, Stream s) {
  if (outputs[1].valid() && outputs[3].valid()) return {outputs[1], outputs[3]};
  std::optional<array> fill;
  if (primals.size() > 1) fill = primals[1];
  auto r = unique(primals[0], size, true, false, true, fill, s);
  return {r[1], r[2]};
}
}  // namespace

std::vector<array> Unique::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                               const std::vector<int>& argnums, const std::vector<array>& outputs) {
  Stream s = stream();
  const array& x = primals[0];
  const array& ct = cotangents[0];
  auto [index, counts] = index_and_counts(primals, outputs, size_, s);
  bool has_fill = primals.size() > 1;
  // real slots (count > 0) hold x[index]; padded ones the fill value, or
  // without one x[index] too (index then names the first unique value)
  array real_slot = greater(counts, array(0, Dtype::int32), s);
  array ct_x = has_fill ? where(real_slot, ct, zeros_like(ct, {}, s), s) : ct;
  std::vector<array> res;
  for (int a : argnums) {
    if (a == 0) {
      res.push_back(x.size() == 0 ? zeros_like(x, {}, s)
                                  : scatter(zeros_like(x, {}, s), {index}, ct_x, {0}, ScatterKind::Add, s));
    } else {
      res.push_back(reshape(sum(where(real_slot, zeros_like(ct, {}, s), ct, s), std::nullopt, false, s), {1}, s));
    }
  }
  return res;
}

std::vector<array> Unique::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                               const std::vector<int>& argnums, const std::vector<array>& outputs) {
  Stream s = stream();
  const array& x = primals[0];
  auto [index, counts] = index_and_counts(primals, outputs, size_, s);
  std::optional<array> tx, tf;
  for (size_t i = 0; i < argnums.size(); ++i) (argnums[i] == 0 ? tx : tf) = tangents[i];
  array tv = zeros({size_}, x.dtype(), s);
  if (tx && x.size() > 0) tv = gather(*tx, {index}, {0}, s);
  if (primals.size() > 1) {
    array fill_t = tf ? broadcast_to(*tf, {size_}, s) : zeros({size_}, x.dtype(), s);
    tv = where(greater(counts, array(0, Dtype::int32), s), tv, fill_t, s);
  }
  // the integer outputs' tangents are zeros (none for outputs nobody holds)
  std::vector<array> res{tv};
  for (size_t k = 1; k < 4; ++k) res.push_back(outputs[k].valid() ? zeros_like(outputs[k], {}, s) : array());
  return res;
}

std::pair<std::vector<array>, std::vector<int>> Unique::vmap(const std::vector<array>& inputs,
                                                             const std::vector<int>& axes) {
  Stream s = stream();
  bool has_fill = inputs.size() > 1;
  if (axes[0] < 0 && !(has_fill && axes[1] >= 0)) {
    std::optional<array> fill;
    if (has_fill) fill = inputs[1];
    auto r = unique(inputs[0], size_, true, true, true, fill, s);
    return {r, {-1, -1, -1, -1}};
  }
  const int64_t b = batch_size(inputs, axes, name());
  array x = batch_axis_to(inputs[0], axes[0], 0, b, s);
  const int64_t n = x.shape(1);
  // the fill value as [B, 1] or [1, 1]
  std::optional<array> fill;
  if (has_fill) fill = reshape(batch_axis_or_1_to(inputs[1], axes[1], 0, s), {axes[1] >= 0 ? b : 1, 1}, s);
  const int64_t size = size_;
  const Dtype it = index_dtype(std::max(n, size) + 1);
  if (n == 0) {
    // every slot padded: the fill value (required by the op when size > 0)
    array values = fill ? broadcast_to(*fill, {b, size}, s) : zeros({b, size}, x.dtype(), s);
    return {{values, zeros({b, size}, Dtype::uint32, s), zeros({b, 0}, Dtype::uint32, s),
             zeros({b, size}, Dtype::int32, s)},
            {0, 0, 0, 0}};
  }
  // sort each row; an element starts a new value unless it equals the one
  // before it (NaNs never do), g numbers the values
  array order = argsort(x, 1, s);
  array srt = take_along_axis(x, order, 1, s);
  array tail = slice(srt, {0, 1}, {b, n}, {1, 1}, s);
  array head = slice(srt, {0, 0}, {b, n - 1}, {1, 1}, s);
  array differs = not_equal(tail, head, s);
  if (is_inexact(x.dtype())) differs = logical_or(differs, isnan(tail, s), s);
  array is_new = concatenate({ones({b, 1}, Dtype::bool_, s), differs}, 1, s);
  array g = subtract(cumsum(astype(is_new, it, s), 1, false, true, {}, s), array(1, it), s);
  array n_values = add(slice(g, {0, n - 1}, {b, n}, {1, 1}, s), array(1, it), s);  // [B, 1]
  // inverse: the value number of each element (clipped to the last slot)
  array last = array(std::max<int64_t>(size - 1, 0), it);
  array inverse = put_along_axis(zeros({b, n}, Dtype::uint32, s), order, astype(minimum(g, last, s), Dtype::uint32, s),
                                 1, s);
  // slots: value j < size goes to column j, the rest to a spare column
  array rows = reshape(arange(0.0, static_cast<double>(b), 1.0, index_dtype(b), s), {b, 1}, s);
  array slot = minimum(g, array(size, it), s);
  array sorted_pos = reshape(arange(0.0, static_cast<double>(n), 1.0, it, s), {1, n}, s);
  array first = scatter(zeros({b, size + 1}, it, s), {rows, where(is_new, slot, array(size, it), s)}, sorted_pos, {0, 1},
                        ScatterKind::Assign, s);
  array counts = scatter(zeros({b, size + 1}, Dtype::int32, s), {rows, slot}, ones({1, 1}, Dtype::int32, s), {0, 1},
                         ScatterKind::Add, s);
  first = slice(first, {0, 0}, {b, size}, {1, 1}, s);
  counts = slice(counts, {0, 0}, {b, size}, {1, 1}, s);
  // padded slots point at the first unique value (sorted position 0)
  array real_slot = less(reshape(arange(0.0, static_cast<double>(size), 1.0, it, s), {1, size}, s), n_values, s);
  array index = take_along_axis(order, where(real_slot, first, zeros_like(first, {}, s), s), 1, s);
  array values = take_along_axis(x, index, 1, s);
  if (fill) values = where(real_slot, values, *fill, s);
  return {{values, index, inverse, counts}, {0, 0, 0, 0}};
}

}  // namespace ember
