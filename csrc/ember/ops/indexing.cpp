// Indexing ops: gather/scatter and what is built on them (take, the
// along-axis pair, dynamic slices, diagonals). Index values are checked when
// the result is evaluated (IndexError); shapes and dtypes are checked here.
#include <algorithm>
#include <numeric>

#include "ember/ops/common.h"
#include "ember/primitives/indexing.h"

namespace ember {

using detail::fail;
using detail::fail_index;

namespace {

void check_index_dtype(const array& idx, const char* op) {
  if (!is_integral(idx.dtype()) || idx.dtype() == Dtype::bool_) {
    fail(op, "Got indices with invalid dtype ", dtype_name(idx.dtype()), ". Indices must be integral.");
  }
}

// Normalized, distinct axes.
std::vector<int> index_axes(const std::vector<int>& axes, int ndim, const char* op) {
  std::vector<int> out;
  for (int ax : axes) {
    int a = normalize_axis(ax, ndim, op);
    if (std::find(out.begin(), out.end(), a) != out.end()) fail(op, "Repeated axis ", ax, " in the indexed axes.");
    out.push_back(a);
  }
  return out;
}

// The index arrays broadcast to their common shape.
std::vector<array> broadcast_indices(const std::vector<array>& indices, const char* op, const StreamOrDevice& s,
                                     Shape& common) {
  common = {};
  for (const array& idx : indices) {
    check_index_dtype(idx, op);
    common = broadcast_shapes(common, idx.shape(), op);
  }
  std::vector<array> out;
  for (const array& idx : indices) out.push_back(broadcast_to(idx, common, s));
  return out;
}

bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 1; i <= from.size(); ++i) {
    int64_t f = from[from.size() - i];
    if (f != 1 && f != to[to.size() - i]) return false;
  }
  return true;
}

// arange(n) shaped to broadcast along dim `dim` of an `ndim`-d index space.
array axis_range(int64_t n, int dim, int ndim, const StreamOrDevice& s) {
  Shape shape(ndim, 1);
  shape[dim] = n;
  Dtype t = index_dtype(n);
  return reshape(arange(0.0, static_cast<double>(n), 1.0, t, s), shape, s);
}

// Start values of dynamic slices made safe for gather/scatter: negative
// starts count from the end, and a start still outside [0, dim) maps to dim,
// an index the kernel rejects (IndexError) instead of wrapping.
array dynamic_start(const array& start_j, int64_t dim, const StreamOrDevice& s) {
  array st = astype(start_j, Dtype::int64, s);
  array d = array(dim, Dtype::int64);
  array ns = where(less(st, array(int64_t(0), Dtype::int64), s), add(st, d, s), st, s);
  return where(less(ns, array(int64_t(0), Dtype::int64), s), d, ns, s);
}

// For dynamic slices: index arrays start[j] + arange(size[axes[j]]) laid out
// as an outer product over the axes (in order).
std::vector<array> window_indices(const array& start, const std::vector<int>& axes, const Shape& dims,
                                  const Shape& sizes, const char* op, const StreamOrDevice& s) {
  check_index_dtype(start, op);
  if (start.size() != static_cast<int64_t>(axes.size()) || start.ndim() > 1) {
    fail(op, "Expected one start index per axis (", axes.size(), "), got start indices of shape ",
         shape_str(start.shape()), ".");
  }
  array flat = reshape(start, {static_cast<int64_t>(axes.size())}, s);
  std::vector<array> idx;
  int k = static_cast<int>(axes.size());
  for (int j = 0; j < k; ++j) {
    array st = dynamic_start(slice(flat, {j}, {j + 1}, {1}, s), dims[axes[j]], s);
    Shape one(k, 1);
    idx.push_back(add(reshape(st, one, s), axis_range(sizes[axes[j]], j, k, s), s));
  }
  return idx;
}

// Moves the first `lead` dims of x (the index dims of a gather) back to the
// positions of `axes` in an array of the original rank: used when the index
// arrays are one window per axis (dynamic slices).
array restore_axes(const array& g, const std::vector<int>& axes, int ndim, const StreamOrDevice& s) {
  // g's dims: axes (in order) then the other dims in order.
  std::vector<int> src_of(ndim);  // dim of g that becomes output dim d
  int k = static_cast<int>(axes.size()), next_rest = k;
  for (int d = 0; d < ndim; ++d) {
    auto it = std::find(axes.begin(), axes.end(), d);
    src_of[d] = it != axes.end() ? static_cast<int>(it - axes.begin()) : next_rest++;
  }
  return transpose(g, std::vector<int>(src_of.begin(), src_of.end()), s);
}

}  // namespace

array gather(const array& a, const std::vector<array>& indices, const std::vector<int>& axes_in,
             const StreamOrDevice& s) {
  if (indices.size() != axes_in.size()) {
    fail("gather", "Got ", indices.size(), " index arrays for ", axes_in.size(), " axes.");
  }
  if (indices.empty()) return a;
  std::vector<int> axes = index_axes(axes_in, a.ndim(), "gather");
  Shape common;
  std::vector<array> idx = broadcast_indices(indices, "gather", s, common);
  int64_t n_idx = 1;
  for (int64_t d : common) n_idx *= d;
  Shape out = common;
  for (int d = 0; d < a.ndim(); ++d) {
    if (std::find(axes.begin(), axes.end(), d) != axes.end()) {
      if (a.shape()[d] == 0 && n_idx > 0) {
        fail("gather", "Cannot do a non-empty take from an empty axis (axis ", d, " of shape ",
             shape_str(a.shape()), ").");
      }
    } else {
      out.push_back(a.shape()[d]);
    }
  }
  std::vector<array> inputs{a};
  inputs.insert(inputs.end(), idx.begin(), idx.end());
  return make_node<Gather>(std::move(out), a.dtype(), std::move(inputs), to_stream(s), axes);
}

array scatter(const array& a, const IndexView& view, const std::vector<array>& indices, const array& updates,
              const std::vector<int>& axes_in, ScatterKind kind, const StreamOrDevice& s) {
  const char* op = "scatter";
  int vn = static_cast<int>(view.dims.size());
  if (static_cast<int>(view.start.size()) != vn || static_cast<int>(view.step.size()) != vn ||
      static_cast<int>(view.size.size()) != vn) {
    fail(op, "Malformed index view.");
  }
  for (int i = 0; i < vn; ++i) {
    int d = view.dims[i];
    if (d < -1 || d >= a.ndim()) fail(op, "Index view dim ", d, " is out of range for ", a.ndim(), " dims.");
    if (view.size[i] < 0) fail(op, "Negative window size ", view.size[i], ".");
    if (d == -1) {
      if (view.size[i] != 1) fail(op, "An inserted window dim must have size 1.");
      continue;
    }
    if (view.size[i] > 0) {
      int64_t first = view.start[i], last = view.start[i] + view.step[i] * (view.size[i] - 1);
      if (first < 0 || first >= a.shape()[d] || last < 0 || last >= a.shape()[d]) {
        fail_index(op, "Window [", first, ", ", last, "] is out of bounds for axis ", d, " with size ",
                   a.shape()[d], ".");
      }
    }
  }
  if (indices.size() != axes_in.size()) fail(op, "Got ", indices.size(), " index arrays for ", axes_in.size(), " axes.");
  std::vector<int> axes = index_axes(axes_in, vn, op);
  Shape common;
  std::vector<array> idx = broadcast_indices(indices, op, s, common);
  int64_t n_idx = 1;
  for (int64_t d : common) n_idx *= d;
  Shape upd_shape = common;
  for (int i = 0; i < vn; ++i) {
    if (std::find(axes.begin(), axes.end(), i) != axes.end()) {
      if (view.size[i] == 0 && n_idx > 0) {
        fail(op, "Cannot do a non-empty scatter into an empty axis (axis ", view.dims[i], " of shape ",
             shape_str(a.shape()), ").");
      }
    } else {
      upd_shape.push_back(view.size[i]);
    }
  }
  array upd = astype(updates, a.dtype(), s);
  if (!broadcasts_to(upd.shape(), upd_shape)) {
    fail(op, "Cannot broadcast updates of shape ", shape_str(updates.shape()), " to the indexed shape ",
         shape_str(upd_shape), ".");
  }
  upd = broadcast_to(upd, upd_shape, s);
  std::vector<array> inputs{a};
  inputs.insert(inputs.end(), idx.begin(), idx.end());
  inputs.push_back(upd);
  return make_node<Scatter>(a.shape(), a.dtype(), std::move(inputs), to_stream(s), view, axes, kind);
}

array scatter(const array& a, const std::vector<array>& indices, const array& updates, const std::vector<int>& axes,
              ScatterKind kind, const StreamOrDevice& s) {
  return scatter(a, full_view(a.shape()), indices, updates, axes, kind, s);
}

array take(const array& a_in, const array& indices, std::optional<int> axis_in, const StreamOrDevice& s) {
  array a = axis_in ? a_in : reshape(a_in, {a_in.size()}, s);
  int axis = normalize_axis(axis_in.value_or(0), a.ndim(), "take");
  array g = gather(a, {indices}, {axis}, s);
  // g: indices' dims, then a's other dims; put the index dims at `axis`
  int ni = indices.ndim(), nr = a.ndim() - 1;
  std::vector<int> perm;
  for (int d = 0; d < axis; ++d) perm.push_back(ni + d);
  for (int d = 0; d < ni; ++d) perm.push_back(d);
  for (int d = axis; d < nr; ++d) perm.push_back(ni + d);
  return transpose(g, perm, s);
}

namespace {
// Index arrays addressing every element of the along-axis index space.
std::vector<array> along_axis_indices(const array& idx, int axis, const Shape& space, const StreamOrDevice& s) {
  std::vector<array> out;
  int nd = static_cast<int>(space.size());
  for (int d = 0; d < nd; ++d) out.push_back(d == axis ? idx : axis_range(space[d], d, nd, s));
  return out;
}

std::vector<int> all_axes(int n) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// The along-axis index space: idx broadcast against a in every dim but axis.
Shape along_axis_space(const array& a, const array& idx, int axis, const char* op) {
  check_index_dtype(idx, op);
  if (idx.ndim() != a.ndim()) {
    fail(op, "Indices of dimension ", idx.ndim(), " does not match array of dimension ", a.ndim(), ".");
  }
  Shape space(a.ndim());
  for (int d = 0; d < a.ndim(); ++d) {
    if (d == axis) {
      space[d] = idx.shape()[d];
    } else if (idx.shape()[d] == a.shape()[d] || idx.shape()[d] == 1 || a.shape()[d] == 1) {
      space[d] = idx.shape()[d] == 1 ? a.shape()[d] : idx.shape()[d];
    } else {
      fail(op, "Indices of shape ", shape_str(idx.shape()), " do not broadcast with the array of shape ",
           shape_str(a.shape()), " along axis ", d, ".");
    }
  }
  return space;
}
}  // namespace

array take_along_axis(const array& a_in, const array& indices, std::optional<int> axis_in, const StreamOrDevice& s) {
  const char* op = "take_along_axis";
  array a = axis_in ? a_in : reshape(a_in, {a_in.size()}, s);
  int axis = normalize_axis(axis_in.value_or(0), a.ndim(), op);
  Shape space = along_axis_space(a, indices, axis, op);
  Shape src_shape = space;
  src_shape[axis] = a.shape()[axis];
  array src = broadcast_to(a, src_shape, s);
  array idx = broadcast_to(indices, space, s);
  return gather(src, along_axis_indices(idx, axis, space, s), all_axes(a.ndim()), s);
}

array put_along_axis(const array& a_in, const array& indices, const array& values, std::optional<int> axis_in,
                     const StreamOrDevice& s) {
  const char* op = "put_along_axis";
  array a = axis_in ? a_in : reshape(a_in, {a_in.size()}, s);
  int axis = normalize_axis(axis_in.value_or(0), a.ndim(), op);
  Shape space = along_axis_space(a, indices, axis, op);
  for (int d = 0; d < a.ndim(); ++d) {
    if (d != axis && space[d] != a.shape()[d]) {
      fail(op, "Indices of shape ", shape_str(indices.shape()), " are larger than the array of shape ",
           shape_str(a.shape()), " along axis ", d, ".");
    }
  }
  array idx = broadcast_to(indices, space, s);
  array r = scatter(a, along_axis_indices(idx, axis, space, s), values, all_axes(a.ndim()), ScatterKind::Assign, s);
  return axis_in ? r : reshape(r, a_in.shape(), s);
}

array slice(const array& a, const array& start, const std::vector<int>& axes_in, const Shape& sizes,
            const StreamOrDevice& s) {
  const char* op = "slice";
  // MLX's order: the axes and the start indices first, then the sizes
  std::vector<int> axes = index_axes(axes_in, a.ndim(), op);
  check_index_dtype(start, op);
  if (static_cast<int>(sizes.size()) != a.ndim()) {
    fail(op, "Invalid slice size ", shape_str(sizes), " for array with ", a.ndim(), " dimensions.");
  }
  for (int d = 0; d < a.ndim(); ++d) {
    if (sizes[d] < 0 || sizes[d] > a.shape()[d]) {
      fail(op, "Slice size ", sizes[d], " is out of range for axis ", d, " of size ", a.shape()[d], ".");
    }
  }
  // the static dims: a leading window of the given size
  Shape st(a.ndim(), 0), stop = a.shape(), step(a.ndim(), 1);
  for (int d = 0; d < a.ndim(); ++d) {
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) stop[d] = sizes[d];
  }
  array base = slice(a, st, stop, step, s);
  if (axes.empty()) return base;
  std::vector<array> idx = window_indices(start, axes, a.shape(), sizes, op, s);
  return restore_axes(gather(base, idx, axes, s), axes, a.ndim(), s);
}

array slice_update(const array& a, const array& update, const array& start, const std::vector<int>& axes_in,
                   const StreamOrDevice& s) {
  const char* op = "slice_update";
  std::vector<int> axes = index_axes(axes_in, a.ndim(), op);
  if (update.ndim() > a.ndim()) {
    fail(op, "The update of shape ", shape_str(update.shape()), " has more dims than the array of shape ",
         shape_str(a.shape()), ".");
  }
  // The window has the update's shape (MLX's rule): the update's dims line
  // up with the trailing dims of a; a leading dim the update lacks is whole
  // (size 1 if it is one of axes). It starts at start_indices along axes and
  // at 0 elsewhere; the update is broadcast to it, never beyond it.
  Shape win = a.shape();
  int lead = a.ndim() - update.ndim();
  for (int d = lead; d < a.ndim(); ++d) {
    int64_t u = update.shape()[d - lead];
    if (u > a.shape()[d]) {
      fail(op, "The update of shape ", shape_str(update.shape()), " does not fit the array of shape ",
           shape_str(a.shape()), " along axis ", d, ".");
    }
    win[d] = u;
  }
  for (int ax : axes) {
    if (ax < lead) win[ax] = 1;
  }
  array upd = broadcast_to(update, win, s);
  // the unlisted dims: a window [0, win[d]); the listed ones are indexed
  IndexView view = full_view(a.shape());
  for (int d = 0; d < a.ndim(); ++d) {
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) view.size[d] = win[d];
  }
  if (axes.empty()) return scatter(a, view, {}, upd, {}, ScatterKind::Assign, s);
  std::vector<array> idx = window_indices(start, axes, a.shape(), win, op, s);
  // updates in scatter order: the sliced axes first (in order), then the rest
  std::vector<int> perm(axes.begin(), axes.end());
  for (int d = 0; d < a.ndim(); ++d) {
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) perm.push_back(d);
  }
  return scatter(a, view, idx, transpose(upd, perm, s), axes, ScatterKind::Assign, s);
}

array diagonal(const array& a, int64_t offset, int axis1_in, int axis2_in, const StreamOrDevice& s) {
  const char* op = "diagonal";
  if (a.ndim() < 2) fail(op, "Array must have at least two dimensions, got shape ", shape_str(a.shape()), ".");
  int ax1 = normalize_axis(axis1_in, a.ndim(), op), ax2 = normalize_axis(axis2_in, a.ndim(), op);
  if (ax1 == ax2) fail(op, "axis1 and axis2 cannot be the same axis (", axis1_in, ", ", axis2_in, ").");
  int64_t m = a.shape()[ax1], n = a.shape()[ax2];
  int64_t r0 = offset < 0 ? -offset : 0, c0 = offset > 0 ? offset : 0;
  int64_t len = std::max<int64_t>(0, std::min(m - r0, n - c0));
  if (len == 0) {
    Shape out;
    for (int d = 0; d < a.ndim(); ++d) {
      if (d != ax1 && d != ax2) out.push_back(a.shape()[d]);
    }
    out.push_back(0);
    return zeros(out, a.dtype(), s);
  }
  Dtype t = index_dtype(std::max(r0, c0) + len);
  array rows = arange(static_cast<double>(r0), static_cast<double>(r0 + len), 1.0, t, s);
  array cols = arange(static_cast<double>(c0), static_cast<double>(c0 + len), 1.0, t, s);
  return moveaxis(gather(a, {rows, cols}, {ax1, ax2}, s), 0, -1, s);
}

array diag(const array& a, int64_t k, const StreamOrDevice& s) {
  if (a.ndim() == 2) return diagonal(a, k, 0, 1, s);
  if (a.ndim() != 1) fail("diag", "Input must be 1- or 2-dimensional, got shape ", shape_str(a.shape()), ".");
  int64_t n = a.shape()[0], size = n + (k < 0 ? -k : k);
  array z = zeros({size, size}, a.dtype(), s);
  if (n == 0) return z;
  Dtype t = index_dtype(size);
  int64_t r0 = k < 0 ? -k : 0, c0 = k > 0 ? k : 0;
  array rows = arange(static_cast<double>(r0), static_cast<double>(r0 + n), 1.0, t, s);
  array cols = arange(static_cast<double>(c0), static_cast<double>(c0 + n), 1.0, t, s);
  return scatter(z, {rows, cols}, a, {0, 1}, ScatterKind::Assign, s);
}

array trace(const array& a, int64_t offset, int axis1, int axis2, std::optional<Dtype> dtype,
            const StreamOrDevice& s) {
  array d = diagonal(a, offset, axis1, axis2, s);
  if (dtype) d = astype(d, *dtype, s);
  array r = sum(d, Axes{-1}, false, s);
  return dtype ? astype(r, *dtype, s) : r;
}

}  // namespace ember
