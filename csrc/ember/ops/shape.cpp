// Shape ops: views where the layout allows (reshape of dense data, transpose,
// broadcast, slice, as_strided), copies otherwise.
#include <algorithm>
#include <numeric>

#include "ember/ops/common.h"
#include "ember/primitives/shape.h"

namespace ember {

using detail::fail;
using detail::fail_index;

array reshape(const array& a, Shape shape, const StreamOrDevice& s) {
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) fail("reshape", "Can only infer one dimension; got shape ", shape_str(shape), ".");
      infer = static_cast<int>(i);
    } else if (shape[i] < 0) {
      fail("reshape", "Invalid negative dimension in shape ", shape_str(shape), ".");
    } else if (__builtin_mul_overflow(known, shape[i], &known)) {
      fail("reshape", "Shape ", shape_str(shape), " is too large.");
    }
  }
  if (infer >= 0 && known == 0 && a.size() == 0 && infer < a.ndim() && a.shape()[infer] != 0) {
    // an empty array keeps the size of the inferred dim where it has one (MLX)
    shape[infer] = a.shape()[infer];
    infer = -1;
  }
  if (infer >= 0) {
    if (known == 0 || a.size() % known != 0) {
      fail("reshape", "Cannot infer the shape of an array of size ", a.size(), " into shape ", shape_str(shape),
           ".");
    }
    shape[infer] = a.size() / known;
    known = a.size();
  }
  if (known != a.size()) {
    fail("reshape", "Cannot reshape array of size ", a.size(), " (shape ", shape_str(a.shape()),
         ") into shape ", shape_str(shape), ".");
  }
  if (shape == a.shape()) return a;
  Shape out = shape;
  return make_node<Reshape>(std::move(shape), a.dtype(), {a}, to_stream(s), std::move(out));
}

array flatten(const array& a, int start_axis, int end_axis, const StreamOrDevice& s) {
  if (a.ndim() == 0) return reshape(a, {1}, s);
  int st = normalize_axis(start_axis, a.ndim(), "flatten");
  int en = normalize_axis(end_axis, a.ndim(), "flatten");
  if (st > en) fail("flatten", "start_axis ", start_axis, " must not come after end_axis ", end_axis, ".");
  Shape out(a.shape().begin(), a.shape().begin() + st);
  int64_t n = 1;
  for (int i = st; i <= en; ++i) n *= a.shape()[i];
  out.push_back(n);
  out.insert(out.end(), a.shape().begin() + en + 1, a.shape().end());
  return reshape(a, out, s);
}

array unflatten(const array& a, int axis, const Shape& shape, const StreamOrDevice& s) {
  int ax = normalize_axis(axis, a.ndim(), "unflatten");
  if (shape.empty()) fail("unflatten", "The new shape must not be empty.");
  Shape out(a.shape().begin(), a.shape().begin() + ax);
  Shape mid = shape;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < mid.size(); ++i) {
    if (mid[i] == -1) {
      if (infer >= 0) fail("unflatten", "Can only infer one dimension in ", shape_str(shape), ".");
      infer = static_cast<int>(i);
    } else {
      known *= mid[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || a.shape()[ax] % known) {
      fail("unflatten", "Cannot unflatten axis ", axis, " of size ", a.shape()[ax], " into ", shape_str(shape), ".");
    }
    mid[infer] = a.shape()[ax] / known;
    known = a.shape()[ax];
  }
  if (known != a.shape()[ax]) {
    fail("unflatten", "Cannot unflatten axis ", axis, " of size ", a.shape()[ax], " into ", shape_str(shape), ".");
  }
  out.insert(out.end(), mid.begin(), mid.end());
  out.insert(out.end(), a.shape().begin() + ax + 1, a.shape().end());
  return reshape(a, out, s);
}

array squeeze(const array& a, std::optional<Axes> axes, const StreamOrDevice& s) {
  Axes ax;
  if (!axes) {
    for (int i = 0; i < a.ndim(); ++i) {
      if (a.shape()[i] == 1) ax.push_back(i);
    }
  } else {
    for (int v : *axes) ax.push_back(normalize_axis(v, a.ndim(), "squeeze"));
    std::sort(ax.begin(), ax.end());
    if (std::adjacent_find(ax.begin(), ax.end()) != ax.end()) fail("squeeze", "Received duplicate axes.");
    for (int v : ax) {
      if (a.shape()[v] != 1) {
        fail("squeeze", "Cannot squeeze axis ", v, " of size ", a.shape()[v], " in array of shape ",
             shape_str(a.shape()), ".");
      }
    }
  }
  return reshape(a, detail::squeeze_shape(a.shape(), ax), s);
}

array expand_dims(const array& a, const Axes& axes, const StreamOrDevice& s) {
  int nd = a.ndim() + static_cast<int>(axes.size());
  Axes ax;
  for (int v : axes) {
    if (v < -nd || v >= nd) {
      detail::fail_index("expand_dims", "Invalid axis ", v, " for output with ", nd, " dimensions.");
    }
    ax.push_back(v < 0 ? v + nd : v);
  }
  std::sort(ax.begin(), ax.end());
  if (std::adjacent_find(ax.begin(), ax.end()) != ax.end()) fail("expand_dims", "Received duplicate axes.");
  Shape out;
  size_t j = 0, k = 0;
  for (int i = 0; i < nd; ++i) {
    if (j < ax.size() && ax[j] == i) {
      out.push_back(1);
      ++j;
    } else {
      out.push_back(a.shape()[k++]);
    }
  }
  return reshape(a, out, s);
}

array transpose(const array& a, std::optional<Axes> axes, const StreamOrDevice& s) {
  Axes ax;
  if (!axes) {
    for (int i = a.ndim() - 1; i >= 0; --i) ax.push_back(i);
  } else {
    if (static_cast<int>(axes->size()) != a.ndim()) {
      fail("transpose", "Received ", axes->size(), " axes for array with ", a.ndim(), " dimensions.");
    }
    std::vector<bool> seen(a.ndim(), false);
    for (int v : *axes) {
      int n = v < 0 ? v + a.ndim() : v;
      if (n < 0 || n >= a.ndim()) {
        detail::fail_index("transpose", "Invalid axis ", v, " for array with ", a.ndim(), " dimensions.");
      }
      if (seen[n]) fail("transpose", "Repeated axis ", v, " in transpose.");
      seen[n] = true;
      ax.push_back(n);
    }
  }
  bool identity = true;
  for (int i = 0; i < a.ndim(); ++i) identity = identity && ax[i] == i;
  if (identity) return a;
  Shape shape(ax.size());
  for (size_t i = 0; i < ax.size(); ++i) shape[i] = a.shape()[ax[i]];
  return make_node<Transpose>(std::move(shape), a.dtype(), {a}, to_stream(s), ax);
}

array swapaxes(const array& a, int axis1, int axis2, const StreamOrDevice& s) {
  int x = normalize_axis(axis1, a.ndim(), "swapaxes"), y = normalize_axis(axis2, a.ndim(), "swapaxes");
  Axes ax(a.ndim());
  std::iota(ax.begin(), ax.end(), 0);
  std::swap(ax[x], ax[y]);
  return transpose(a, ax, s);
}

array moveaxis(const array& a, int source, int destination, const StreamOrDevice& s) {
  int src = normalize_axis(source, a.ndim(), "moveaxis"), dst = normalize_axis(destination, a.ndim(), "moveaxis");
  Axes ax;
  for (int i = 0; i < a.ndim(); ++i) {
    if (i != src) ax.push_back(i);
  }
  ax.insert(ax.begin() + dst, src);
  return transpose(a, ax, s);
}

array broadcast_to(const array& a, const Shape& shape, const StreamOrDevice& s) {
  if (a.shape() == shape) return a;
  checked_size(shape, "broadcast_to");
  Shape out = broadcast_shapes(a.shape(), shape, "broadcast_to");
  if (out != shape) {
    fail("broadcast_to", "Cannot broadcast array of shape ", shape_str(a.shape()), " to shape ", shape_str(shape),
         ".");
  }
  return make_node<Broadcast>(out, a.dtype(), {a}, to_stream(s), out);
}

std::vector<array> broadcast_arrays(const std::vector<array>& arrays, const StreamOrDevice& s) {
  Shape shape;
  for (auto& a : arrays) shape = broadcast_shapes(shape, a.shape(), "broadcast_arrays");
  std::vector<array> out;
  for (auto& a : arrays) out.push_back(broadcast_to(a, shape, s));
  return out;
}

array concatenate(const std::vector<array>& arrays, std::optional<int> axis, const StreamOrDevice& s) {
  if (arrays.empty()) fail("concatenate", "No arrays to concatenate.");
  if (!axis) {
    std::vector<array> flat;
    for (auto& a : arrays) flat.push_back(reshape(a, {a.size()}, s));
    return concatenate(flat, 0, s);
  }
  const array& first = arrays[0];
  if (first.ndim() == 0) detail::fail_index("concatenate", "Zero-dimensional arrays cannot be concatenated.");
  int ax = normalize_axis(*axis, first.ndim(), "concatenate");
  Shape shape = first.shape();
  Dtype t = first.dtype();
  shape[ax] = 0;
  for (auto& a : arrays) {
    bool ok = a.ndim() == first.ndim();
    for (int i = 0; ok && i < a.ndim(); ++i) ok = i == ax || a.shape()[i] == first.shape()[i];
    if (!ok) {
      fail("concatenate", "All the input array dimensions must match exactly except for the concatenation axis; got ",
           shape_str(first.shape()), " and ", shape_str(a.shape()), " on axis ", *axis, ".");
    }
    shape[ax] += a.shape()[ax];
    t = promote_types(t, a.dtype());
  }
  if (arrays.size() == 1) return astype(first, t, s);
  std::vector<array> ins;
  for (auto& a : arrays) ins.push_back(astype(a, t, s));
  return make_node<Concatenate>(std::move(shape), t, std::move(ins), to_stream(s), ax);
}

array stack(const std::vector<array>& arrays, int axis, const StreamOrDevice& s) {
  if (arrays.empty()) fail("stack", "No arrays to stack.");
  for (auto& a : arrays) {
    if (a.shape() != arrays[0].shape()) {
      fail("stack", "All arrays must have the same shape; got ", shape_str(arrays[0].shape()), " and ",
           shape_str(a.shape()), ".");
    }
  }
  int nd = arrays[0].ndim() + 1;
  if (axis < -nd || axis >= nd) detail::fail_index("stack", "Invalid axis ", axis, " for output with ", nd, " dimensions.");
  std::vector<array> ex;
  for (auto& a : arrays) ex.push_back(expand_dims(a, {axis}, s));
  return concatenate(ex, axis, s);
}

array slice(const array& a, Shape start, Shape stop, Shape step, const StreamOrDevice& s) {
  Shape shape(a.ndim());
  bool identity = true;
  for (int i = 0; i < a.ndim(); ++i) {
    int64_t st = step[i];
    if (st == 0) fail("slice", "Slice step cannot be zero.");
    int64_t n = st > 0 ? (stop[i] - start[i] + st - 1) / st : (start[i] - stop[i] - st - 1) / (-st);
    shape[i] = std::max<int64_t>(n, 0);
    if (shape[i] > 0 && (start[i] < 0 || start[i] >= a.shape()[i] || start[i] + (shape[i] - 1) * st < 0 ||
                         start[i] + (shape[i] - 1) * st >= a.shape()[i])) {
      throw std::out_of_range(detail::msg("slice", "Slice out of range for axis ", i, " of shape ",
                                          shape_str(a.shape()), "."));
    }
    identity = identity && start[i] == 0 && st == 1 && shape[i] == a.shape()[i];
  }
  if (identity) return a;
  return make_node<Slice>(std::move(shape), a.dtype(), {a}, to_stream(s), std::move(start), std::move(stop),
                          std::move(step));
}

namespace {
array slice_axis(const array& a, int axis, int64_t b, int64_t e, int64_t step, const StreamOrDevice& s) {
  Shape st(a.ndim(), 0), sp = a.shape(), stp(a.ndim(), 1);
  st[axis] = b;
  sp[axis] = e;
  stp[axis] = step;
  return slice(a, st, sp, stp, s);
}
}  // namespace

std::vector<array> split(const array& a, const Shape& indices, int axis, const StreamOrDevice& s) {
  int ax = normalize_axis(axis, a.ndim(), "split");
  int64_t n = a.shape()[ax];
  auto clamp_index = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
  std::vector<array> out;
  // piece k is a[indices[k-1]:indices[k]] with Python slice semantics
  int64_t prev = 0;
  for (size_t i = 0; i <= indices.size(); ++i) {
    int64_t e = i < indices.size() ? clamp_index(indices[i]) : n;
    out.push_back(slice_axis(a, ax, prev, std::max(prev, e), 1, s));
    prev = e;
  }
  return out;
}

std::vector<array> split(const array& a, int64_t sections, int axis, const StreamOrDevice& s) {
  int ax = normalize_axis(axis, a.ndim(), "split");
  if (sections <= 0) fail("split", "Number of sections must be positive; got ", sections, ".");
  if (a.shape()[ax] % sections) {
    fail("split", "Array of shape ", shape_str(a.shape()), " cannot be split into ", sections,
         " equal sections along axis ", axis, ".");
  }
  int64_t w = a.shape()[ax] / sections;
  Shape idx;
  for (int64_t i = 1; i < sections; ++i) idx.push_back(i * w);
  return split(a, idx, ax, s);
}

array repeat(const array& a, int64_t repeats, std::optional<int> axis, const StreamOrDevice& s) {
  if (repeats < 0) fail("repeat", "Number of repeats cannot be negative; got ", repeats, ".");
  if (!axis) return repeat(reshape(a, {a.size()}, s), repeats, 0, s);
  int ax = normalize_axis(*axis, a.ndim(), "repeat");
  Shape ex = a.shape();
  ex.insert(ex.begin() + ax + 1, 1);
  Shape bc = ex;
  bc[ax + 1] = repeats;
  Shape out = a.shape();
  out[ax] *= repeats;
  return reshape(broadcast_to(reshape(a, ex, s), bc, s), out, s);
}

array tile(const array& a, const Shape& reps, const StreamOrDevice& s) {
  int nd = std::max<int>(a.ndim(), static_cast<int>(reps.size()));
  Shape shape(nd - a.ndim(), 1), r(nd - reps.size(), 1);
  shape.insert(shape.end(), a.shape().begin(), a.shape().end());
  r.insert(r.end(), reps.begin(), reps.end());
  Shape ex, bc, out;
  for (int i = 0; i < nd; ++i) {
    if (r[i] < 0) fail("tile", "Repetitions cannot be negative; got ", shape_str(reps), ".");
    ex.push_back(1);
    ex.push_back(shape[i]);
    bc.push_back(r[i]);
    bc.push_back(shape[i]);
    out.push_back(r[i] * shape[i]);
  }
  return reshape(broadcast_to(reshape(a, ex, s), bc, s), out, s);
}

array pad(const array& a, const std::vector<std::pair<int64_t, int64_t>>& widths, const std::string& mode,
          const array& value, const StreamOrDevice& s) {
  if (static_cast<int>(widths.size()) != a.ndim()) {
    fail("pad", "Expected ", a.ndim(), " (low, high) pairs for array of shape ", shape_str(a.shape()), "; got ",
         widths.size(), ".");
  }
  for (auto& [lo, hi] : widths) {
    if (lo < 0 || hi < 0) fail("pad", "Pad widths must be non-negative.");
  }
  if (mode == "constant") {
    if (value.size() != 1) fail("pad", "The constant value must be a scalar; got shape ", shape_str(value.shape()), ".");
    Shape out = a.shape(), low, high;
    for (int i = 0; i < a.ndim(); ++i) {
      out[i] += widths[i].first + widths[i].second;
      low.push_back(widths[i].first);
      high.push_back(widths[i].second);
    }
    array v = astype(reshape(value, {}, s), a.dtype(), s);
    return make_node<Pad>(std::move(out), a.dtype(), {a, v}, to_stream(s), std::move(low), std::move(high));
  }
  if (mode != "edge" && mode != "reflect" && mode != "symmetric") {
    fail("pad", "Invalid pad mode '", mode, "'; expected constant, edge, reflect or symmetric.");
  }
  array out = a;
  for (int ax = 0; ax < a.ndim(); ++ax) {
    auto [lo, hi] = widths[ax];
    if (lo == 0 && hi == 0) continue;
    int64_t n = out.shape()[ax];
    if (n == 0) fail("pad", "Cannot pad an empty axis with mode '", mode, "'.");
    std::vector<array> parts;
    if (mode == "edge") {
      Shape bl = out.shape(), bh = out.shape();
      bl[ax] = lo;
      bh[ax] = hi;
      parts = {broadcast_to(slice_axis(out, ax, 0, 1, 1, s), bl, s), out,
               broadcast_to(slice_axis(out, ax, n - 1, n, 1, s), bh, s)};
    } else {
      // reflect excludes the edge element, symmetric includes it; widths
      // beyond one period repeat the pattern (NumPy's behaviour).
      bool sym = mode == "symmetric";
      if (!sym && n == 1) {
        Shape bl = out.shape(), bh = out.shape();
        bl[ax] = lo;
        bh[ax] = hi;
        parts = {broadcast_to(out, bl, s), out, broadcast_to(out, bh, s)};
      } else {
        int64_t period = sym ? n : n - 1;
        auto take = [&](int64_t count, bool left) {
          // one period at a time, each reflecting what is already there
          std::vector<array> built;
          array src = out;
          while (count > 0) {
            int64_t m = std::min(period, count), len = src.shape()[ax];
            array piece = left ? (sym ? slice_axis(src, ax, m - 1, -1, -1, s) : slice_axis(src, ax, m, 0, -1, s))
                               : (sym ? slice_axis(src, ax, len - 1, len - 1 - m, -1, s)
                                      : slice_axis(src, ax, len - 2, len - 2 - m, -1, s));
            built.push_back(piece);
            count -= m;
            if (count > 0) src = left ? concatenate({piece, src}, ax, s) : concatenate({src, piece}, ax, s);
          }
          if (left) std::reverse(built.begin(), built.end());
          return built;
        };
        auto lp = take(lo, true), hp = take(hi, false);
        parts.insert(parts.end(), lp.begin(), lp.end());
        parts.push_back(out);
        parts.insert(parts.end(), hp.begin(), hp.end());
      }
    }
    out = concatenate(parts, ax, s);
  }
  return out;
}

array as_strided(const array& a, std::optional<Shape> shape, std::optional<Strides> strides, int64_t offset,
                 const StreamOrDevice& s) {
  Shape shp = shape.value_or(a.shape());
  Strides st = strides.value_or(row_strides(shp));
  if (st.size() != shp.size()) {
    fail("as_strided", "Shape ", shape_str(shp), " and strides ", shape_str(st), " must have the same length.");
  }
  int64_t n = checked_size(shp, "as_strided");
  if (n > 0) {
    // every reachable element must lie inside the input (Ember never reads out of bounds)
    __int128 lo = offset, hi = offset;
    for (size_t i = 0; i < shp.size(); ++i) {
      __int128 span = static_cast<__int128>(shp[i] - 1) * st[i];
      (span < 0 ? lo : hi) += span;
    }
    if (lo < 0 || hi >= a.size()) {
      throw std::invalid_argument(detail::msg("as_strided", "Shape ", shape_str(shp), ", strides ", shape_str(st),
                                          " and offset ", offset, " reach outside the input of size ", a.size(),
                                          "."));
    }
  }
  Shape out = shp;
  return make_node<AsStrided>(std::move(shp), a.dtype(), {a}, to_stream(s), std::move(out), std::move(st), offset);
}

array contiguous(const array& a, bool allow_col_major, const StreamOrDevice& s) {
  return make_node<Contiguous>(a.shape(), a.dtype(), {a}, to_stream(s), allow_col_major);
}

array atleast_nd(const array& a, int n, const StreamOrDevice& s) {
  if (a.ndim() >= n) return a;
  Shape shape = a.shape();
  if (n == 3 && a.ndim() == 1) return reshape(a, {1, shape[0], 1}, s);
  if (n == 3 && a.ndim() == 2) return reshape(a, {shape[0], shape[1], 1}, s);
  while (static_cast<int>(shape.size()) < n) shape.insert(shape.begin(), 1);
  return reshape(a, shape, s);
}

array view(const array& a, Dtype dtype, const StreamOrDevice& s) {
  if (dtype == a.dtype()) return a;
  int from = a.itemsize(), to = size_of(dtype);
  Shape shape = a.shape();
  if (from != to) {
    if (a.ndim() == 0) {
      fail("view", "Cannot view a 0-d array of ", dtype_name(a.dtype()), " as ", dtype_name(dtype),
           " (different itemsize).");
    }
    int64_t bytes = shape.back() * from;
    if (bytes % to) {
      fail("view", "The last dimension of shape ", shape_str(a.shape()), " (", dtype_name(a.dtype()),
           ") does not divide into ", dtype_name(dtype), " elements.");
    }
    shape.back() = bytes / to;
  }
  return make_node<View>(std::move(shape), dtype, {a}, to_stream(s), dtype);
}

// ===========================================================================
// composites of the views above: flip, roll (negative-step slices / slices
// + concatenate), unstack, diff, ...
// ===========================================================================

array matrix_transpose(const array& a, const StreamOrDevice& s) {
  if (a.ndim() < 2) {
    fail("matrix_transpose", "Input array must have at least 2 dimensions; got shape ", shape_str(a.shape()), ".");
  }
  return swapaxes(a, -1, -2, s);
}

array permute_dims(const array& a, std::optional<Axes> axes, const StreamOrDevice& s) {
  return transpose(a, std::move(axes), s);
}

std::vector<array> unstack(const array& a, int axis, const StreamOrDevice& s) {
  int ax = normalize_axis(axis, a.ndim(), "unstack");
  std::vector<array> out;
  Shape start(a.ndim(), 0), stop = a.shape(), step(a.ndim(), 1);
  Shape squeezed = detail::squeeze_shape(a.shape(), {ax});
  for (int64_t i = 0; i < a.shape()[ax]; ++i) {
    start[ax] = i;
    stop[ax] = i + 1;
    out.push_back(reshape(slice(a, start, stop, step, s), squeezed, s));
  }
  return out;
}

array flip(const array& a, std::optional<Axes> axes, const StreamOrDevice& s) {
  std::vector<bool> rev(a.ndim(), !axes.has_value());
  if (axes) {
    for (int v : *axes) rev[normalize_axis(v, a.ndim(), "flip")] = true;  // a repeated axis flips once (MLX)
  }
  Shape start(a.ndim(), 0), stop = a.shape(), step(a.ndim(), 1);
  bool any = false;
  for (int i = 0; i < a.ndim(); ++i) {
    if (!rev[i] || a.shape()[i] <= 1) continue;
    start[i] = a.shape()[i] - 1;
    stop[i] = -1;
    step[i] = -1;
    any = true;
  }
  return any ? slice(a, start, stop, step, s) : a;
}

array diff(const array& a, int n, int axis, const StreamOrDevice& s) {
  if (n < 0) fail("diff", "Order `n` must be non-negative; got ", n, ".");
  int ax = normalize_axis(axis, a.ndim(), "diff");
  if (n == 0) return a;
  Shape start(a.ndim(), 0), stop = a.shape(), step(a.ndim(), 1);
  if (n >= a.shape()[ax]) {
    stop[ax] = 0;
    return slice(a, start, stop, step, s);
  }
  array r = a;
  for (int k = 0; k < n; ++k) {
    int64_t len = r.shape()[ax];
    Shape hi_start = start, lo_stop = r.shape();
    hi_start[ax] = 1;
    lo_stop[ax] = len - 1;
    array hi = slice(r, hi_start, r.shape(), step, s), lo = slice(r, start, lo_stop, step, s);
    r = r.dtype() == Dtype::bool_ ? not_equal(hi, lo, s) : subtract(hi, lo, s);
  }
  return r;
}

namespace {
// a rolled by `shift` along axis `ax` (already normalized): the last `k`
// elements move to the front.
array roll_axis(const array& a, int64_t shift, int ax, const StreamOrDevice& s) {
  int64_t n = a.shape()[ax];
  if (n == 0) return a;
  int64_t k = shift % n;
  if (k < 0) k += n;
  if (k == 0) return a;
  Shape start(a.ndim(), 0), stop = a.shape(), step(a.ndim(), 1);
  start[ax] = n - k;
  array tail = slice(a, start, stop, step, s);
  start[ax] = 0;
  stop[ax] = n - k;
  array head = slice(a, start, stop, step, s);
  return concatenate({tail, head}, ax, s);
}
}  // namespace

array roll(const array& a, int64_t shift, const StreamOrDevice& s) {
  if (a.ndim() == 0) return a;
  return reshape(roll_axis(reshape(a, {a.size()}, s), shift, 0, s), a.shape(), s);
}

array roll(const array& a, int64_t shift, int axis, const StreamOrDevice& s) {
  if (axis < -a.ndim() || axis >= a.ndim()) {
    fail_index("roll", "Invalid axis ", axis, " for array with ", a.ndim(), " dimensions.");
  }
  return roll_axis(a, shift, axis < 0 ? axis + a.ndim() : axis, s);
}

array roll(const array& a, const Shape& shift, const Axes& axes, const StreamOrDevice& s) {
  if (shift.size() < axes.size()) {
    fail("roll", "At least one shift value per axis is required, ", shift.size(), " provided for ", axes.size(),
         " axes.");
  }
  Shape total(a.ndim(), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    int v = axes[i];
    if (v < -a.ndim() || v >= a.ndim()) {
      fail_index("roll", "Invalid axis ", v, " for array with ", a.ndim(), " dimensions.");
    }
    int ax = v < 0 ? v + a.ndim() : v;
    // repeated axes add up (modulo the length, so no overflow)
    int64_t n = std::max<int64_t>(a.shape()[ax], 1);
    total[ax] = (total[ax] + shift[i] % n) % n;
  }
  array r = a;
  for (int ax = 0; ax < a.ndim(); ++ax) r = roll_axis(r, total[ax], ax, s);
  return r;
}

}  // namespace ember
