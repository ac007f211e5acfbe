// NumPy indexing for arrays: a[idx], a[idx] = v, a.at[idx].add(v) & co., and
// the bindings of the indexing ops (take, take_along_axis, put_along_axis,
// slice, slice_update, diag, diagonal, trace).
//
// An index expression is parsed into items, one per source dim consumed
// (ints, slices, integer arrays; boolean masks become one integer array per
// masked dim) plus inserted dims (None, boolean scalars). Basic items select
// a strided window of the array (a view); integer arrays then gather from the
// window. NumPy's placement rule: the broadcast index dims replace the indexed
// dims in place when all array indices are adjacent, else they go first.
// Python ints count as array indices when any array index is present.
#include "bindings.h"
#include <limits>

namespace ember::py_bind {

namespace {

enum class Kind { Int, Slice, NewAxis, Array };

struct Item {
  explicit Item(Kind k) : kind(k) {}
  Kind kind;
  int64_t value = 0;  // Int: the normalized index
  py::object slice;   // Slice
  array arr;          // Array: integer index array

  static Item integer(int64_t v) {
    Item it(Kind::Int);
    it.value = v;
    return it;
  }
  static Item slice_of(py::object sl) {
    Item it(Kind::Slice);
    it.slice = std::move(sl);
    return it;
  }
  static Item full_slice() { return slice_of(py::slice(py::none(), py::none(), py::none())); }
  static Item index_array(array a) {
    Item it(Kind::Array);
    it.arr = std::move(a);
    return it;
  }
};

// A parsed index: items in order (each Int/Slice/Array consumes one source
// dim), the source dim of each consuming item and the window it describes.
struct Parsed {
  std::vector<Item> items;
  std::vector<int> src_dim;  // per item: source dim, or -1 (NewAxis)
  bool has_array = false;
  // the array entries form one run in the index as written (an Ellipsis,
  // even one covering no dims, separates them, as in NumPy)
  bool adjacent = true;
};

bool is_int_like(py::handle h) {
  if (py::isinstance<py::bool_>(h) || is_array(h)) return false;
  if (py::isinstance<py::int_>(h)) return true;
  return PyIndex_Check(h.ptr()) && !py::isinstance<py::array>(h);
}

bool is_bool_scalar(py::handle h) {
  if (py::isinstance<py::bool_>(h)) return true;
  static py::object np_bool = []() -> py::object {
    try {
      return py::module_::import("numpy").attr("bool_");
    } catch (const py::error_already_set&) {
      return py::none();
    }
  }();
  return !np_bool.is_none() && py::isinstance(h, np_bool);
}

// Integer index arrays of a boolean mask's true positions (evaluates it).
std::vector<array> mask_to_indices(const array& mask) {
  array m = contiguous(astype(mask, Dtype::bool_));
  eval_nogil({m});
  int nd = m.ndim();
  const bool* p = m.data<bool>();
  std::vector<std::vector<int64_t>> coords(nd);
  Shape pos(nd, 0);
  for (int64_t i = 0; i < m.size(); ++i) {
    if (p[i]) {
      for (int d = 0; d < nd; ++d) coords[d].push_back(pos[d]);
    }
    for (int d = nd - 1; d >= 0; --d) {
      if (++pos[d] < m.shape()[d]) break;
      pos[d] = 0;
    }
  }
  std::vector<array> out;
  for (int d = 0; d < nd; ++d) {
    out.push_back(array(coords[d].data(), {static_cast<int64_t>(coords[d].size())}, Dtype::int64));
  }
  return out;
}

bool fits_int32(int64_t v) {
  return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
}

// MLX takes slice bounds as 32-bit ints and raises ValueError for larger
// ones; Ember does the same on an axis that int32 can address (a longer
// axis, which MLX cannot have, takes any bound).
void check_slice_bounds(py::handle slice, const array& a, int dim) {
  int64_t n = a.shape()[dim];
  if (!fits_int32(n)) return;
  for (const char* part : {"start", "stop", "step"}) {
    py::object v = slice.attr(part);
    if (v.is_none() || !PyIndex_Check(v.ptr())) continue;
    Py_ssize_t i = PyNumber_AsSsize_t(v.ptr(), nullptr);  // clipped
    if (i == -1 && PyErr_Occurred()) throw py::error_already_set();
    if (!fits_int32(i)) {
      throw std::invalid_argument(std::string("[getitem] Slice indices must be 32-bit integers: slice ") + part +
                                  std::string(" ") + std::string(py::str(v)) + " for axis " + std::to_string(dim) +
                                  " of size " + std::to_string(n) + ".");
    }
  }
}

array index_array(py::handle h) {
  if (is_array(h)) return h.cast<array>();
  array a = to_array(h);
  // empty lists index like NumPy's empty intp arrays
  bool seq = py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h);
  if (seq && a.size() == 0 && !is_integral(a.dtype())) return zeros(a.shape(), Dtype::int32);
  return a;
}

Parsed parse(const array& a, py::handle idx) {
  py::tuple raw = py::isinstance<py::tuple>(idx) ? py::reinterpret_borrow<py::tuple>(idx) : py::make_tuple(idx);
  // classify: each entry becomes items; boolean masks are expanded later
  enum class E { Int, Slice, NewAxis, Ellipsis, IntArray, Mask, BoolScalar };
  struct Entry {
    E kind;
    py::object obj;
    array arr;
    bool advanced() const { return kind == E::IntArray || kind == E::Mask || kind == E::BoolScalar; }
  };
  std::vector<Entry> entries;
  int consumed = 0, ellipses = 0;
  for (auto h : raw) {
    Entry e{E::Int, py::reinterpret_borrow<py::object>(h), array()};
    if (h.is_none()) {
      e.kind = E::NewAxis;
    } else if (h.ptr() == Py_Ellipsis) {
      e.kind = E::Ellipsis;
      ++ellipses;
    } else if (PySlice_Check(h.ptr())) {
      e.kind = E::Slice;
      ++consumed;
    } else if (is_int_like(h)) {
      e.kind = E::Int;
      ++consumed;
    } else if (is_bool_scalar(h)) {
      e.kind = E::BoolScalar;
      e.arr = array(h.cast<bool>(), Dtype::bool_);
    } else if (is_array(h) || py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h) ||
               py::isinstance<py::array>(h) || py::hasattr(h, "__mlx_array__")) {
      array arr = index_array(h);
      if (arr.dtype() == Dtype::bool_) {
        if (arr.ndim() == 0) {
          e.kind = E::BoolScalar;
        } else {
          e.kind = E::Mask;
          consumed += arr.ndim();
        }
      } else if (is_integral(arr.dtype())) {
        e.kind = E::IntArray;
        ++consumed;
      } else {
        throw std::invalid_argument(std::string("[getitem] Got indices with invalid dtype ") +
                                    dtype_name(arr.dtype()) + ". Indices must be integral.");
      }
      e.arr = arr;
    } else {
      throw std::invalid_argument("Cannot index an array using the given type (" +
                                  std::string(py::str(py::type::handle_of(h))) + ").");
    }
    entries.push_back(std::move(e));
  }
  if (ellipses > 1) throw std::invalid_argument("[getitem] An index can only have a single ellipsis ('...').");  // MLX: ValueError
  if (consumed > a.ndim()) {
    for (auto& e : entries) {
      if (e.kind == E::Mask) {  // MLX: ValueError
        throw std::invalid_argument("[getitem] The boolean mask of shape " + shape_str(e.arr.shape()) +
                                    " has more dimensions than the array of shape " + shape_str(a.shape()) +
                                    " has left to index.");
      }
    }
    throw std::invalid_argument("[getitem] Too many indices for array with " + std::to_string(a.ndim()) +
                                " dimensions.");  // MLX: ValueError
  }
  Parsed out;
  for (auto& e : entries) out.has_array |= e.advanced();
  int first = -1, last = -1, count = 0;
  for (int k = 0; k < static_cast<int>(entries.size()); ++k) {
    if (entries[k].advanced() || (entries[k].kind == E::Int && out.has_array)) {
      if (first < 0) first = k;
      last = k;
      ++count;
    }
  }
  out.adjacent = count == 0 || last - first + 1 == count;
  int dim = 0;
  auto push = [&](Item it, int src) {
    out.items.push_back(std::move(it));
    out.src_dim.push_back(src);
  };
  for (auto& e : entries) {
    switch (e.kind) {
      case E::Int: {
        Py_ssize_t i = PyNumber_AsSsize_t(e.obj.ptr(), nullptr);  // clipped: out of bounds below
        if (i == -1 && PyErr_Occurred()) throw py::error_already_set();
        int64_t n = a.shape()[dim];
        if (i < -n || i >= n) {
          // where MLX raises (an empty axis, an int beyond int32) Ember raises
          // the same ValueError; where MLX reads out of bounds, IndexError
          if (n == 0) {
            throw std::invalid_argument("[getitem] Cannot do a non-empty take from an empty axis (axis " +
                                        std::to_string(dim) + " of shape " + shape_str(a.shape()) + ").");
          }
          if (!fits_int32(i)) {
            throw std::invalid_argument("[getitem] Slice indices must be 32-bit integers: index " +
                                        std::string(py::str(e.obj)) + " for axis " + std::to_string(dim) +
                                        " of size " + std::to_string(n) + ".");
          }
          throw std::out_of_range("[getitem] Index " + std::to_string(i) + " is out of bounds for axis " +
                                  std::to_string(dim) + " with size " + std::to_string(n) + ".");
        }
        int64_t v = i < 0 ? i + n : i;
        push(out.has_array ? Item::index_array(array(v, Dtype::int64)) : Item::integer(v), dim++);
        break;
      }
      case E::Slice:
        check_slice_bounds(e.obj, a, dim);
        push(Item::slice_of(e.obj), dim++);
        break;
      case E::NewAxis:
        push(Item(Kind::NewAxis), -1);
        break;
      case E::Ellipsis:
        for (int k = 0; k < a.ndim() - consumed; ++k) push(Item::full_slice(), dim++);
        break;
      case E::IntArray:
        push(Item::index_array(e.arr), dim++);
        break;
      case E::Mask: {
        const Shape& ms = e.arr.shape();
        for (int k = 0; k < e.arr.ndim(); ++k) {
          if (ms[k] != a.shape()[dim + k]) {  // MLX: ValueError
            throw std::invalid_argument("[getitem] Boolean index of shape " + shape_str(ms) +
                                    " does not match the indexed dims of the array of shape " +
                                    shape_str(a.shape()) + " at axis " + std::to_string(dim + k) + ".");
          }
        }
        for (array& ix : mask_to_indices(e.arr)) push(Item::index_array(ix), dim++);
        break;
      }
      case E::BoolScalar: {
        // a 0-d mask: a new dim of size 1, kept (True) or emptied (False);
        // src -2 marks an inserted dim that is indexed
        push(Item::index_array(zeros({to_scalar(e.arr).cast<bool>() ? 1 : 0}, Dtype::int32)), -2);
        break;
      }
    }
  }
  for (; dim < a.ndim(); ++dim) push(Item::full_slice(), dim);
  return out;
}

// The window (view) of the parsed index on `a`, and which of its dims the
// array items index. Int items (no array present) are window dims of size 1
// that the result drops.
struct Window {
  IndexView view;
  std::vector<int> array_dims;  // window dims indexed by arrays
  std::vector<array> arrays;
  std::vector<int> int_dims;    // window dims from Int items (squeezed)
  bool adjacent = true;         // array items consecutive in the index
};


Window make_window(const array& a, const Parsed& p) {
  Window w;
  w.adjacent = p.adjacent;
  for (size_t k = 0; k < p.items.size(); ++k) {
    const Item& it = p.items[k];
    int src = p.src_dim[k];
    int wd = static_cast<int>(w.view.dims.size());
    switch (it.kind) {
      case Kind::NewAxis:
        w.view.dims.push_back(-1);
        w.view.start.push_back(0);
        w.view.step.push_back(1);
        w.view.size.push_back(1);
        break;
      case Kind::Int:
        w.view.dims.push_back(src);
        w.view.start.push_back(it.value);
        w.view.step.push_back(1);
        w.view.size.push_back(1);
        w.int_dims.push_back(wd);
        break;
      case Kind::Slice: {
        Py_ssize_t b, e, st;
        if (PySlice_Unpack(it.slice.ptr(), &b, &e, &st) < 0) throw py::error_already_set();
        Py_ssize_t n = PySlice_AdjustIndices(a.shape()[src], &b, &e, st);
        w.view.dims.push_back(src);
        w.view.start.push_back(n > 0 ? b : 0);
        w.view.step.push_back(n > 0 ? st : 1);
        w.view.size.push_back(n);
        break;
      }
      case Kind::Array:
        w.view.dims.push_back(src >= 0 ? src : -1);
        w.view.start.push_back(0);
        w.view.step.push_back(1);
        w.view.size.push_back(src >= 0 ? a.shape()[src] : 1);
        w.array_dims.push_back(wd);
        w.arrays.push_back(it.arr);
        break;
    }
  }
  return w;
}

// The window as an array (a strided view of `a`).
array window_view(const array& a, const Window& w) {
  int n = a.ndim();
  Shape start(n, 0), stop = a.shape(), step(n, 1);
  Shape shape;
  for (size_t i = 0; i < w.view.dims.size(); ++i) {
    int d = w.view.dims[i];
    shape.push_back(w.view.size[i]);
    if (d < 0) continue;
    int64_t sz = w.view.size[i];
    if (sz == 0) {
      start[d] = 0;
      stop[d] = 0;
      step[d] = 1;
    } else {
      start[d] = w.view.start[i];
      step[d] = w.view.step[i];
      stop[d] = start[d] + (sz - 1) * step[d] + (step[d] > 0 ? 1 : -1);
    }
  }
  return reshape(slice(a, start, stop, step), shape);
}

// Where the `nb` index dims go among the `n_rest` remaining window dims:
// the permutation from gather order (index dims, then the rest) to the
// result's order. In place (after the `before` remaining dims that precede
// them) when the array indices are adjacent, else first.
std::vector<int> placement(bool adjacent, int before, int nb, int n_rest) {
  std::vector<int> perm;
  if (!adjacent) before = 0;
  for (int i = 0; i < before; ++i) perm.push_back(nb + i);
  for (int i = 0; i < nb; ++i) perm.push_back(i);
  for (int i = before; i < n_rest; ++i) perm.push_back(nb + i);
  return perm;
}

Shape broadcast_index_shape(const std::vector<array>& arrays) {
  Shape s;
  for (const array& x : arrays) s = broadcast_shapes(s, x.shape(), "getitem");
  return s;
}

// Updates `v` arranged for scatter on the window: broadcast to the shape
// a[idx] has, then reordered to (index dims, remaining window dims) with
// size-1 dims for the Int items.
array arrange_updates(const array& v_in, const Shape& result_shape, const std::vector<int>& perm) {
  array v = v_in;
  // NumPy allows leading size-1 dims beyond the result's rank
  while (v.ndim() > static_cast<int>(result_shape.size()) && v.shape()[0] == 1) v = squeeze(v, Axes{0});
  try {
    v = broadcast_to(v, result_shape);
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument("[setitem] Cannot broadcast the value of shape " + shape_str(v_in.shape()) +
                                " to the indexed shape " + shape_str(result_shape) + ".");
  }
  // undo the placement: result order -> gather order
  std::vector<int> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int>(i);
  v = transpose(v, inv);
  return v;
}

struct Plan {
  Window w;
  Shape result;            // shape of a[idx]
  std::vector<int> perm;   // gather order -> result order
  Shape gather_shape;      // index dims ++ remaining window dims (ints dropped)
};

Plan plan(const array& a, py::handle idx) {
  Parsed p = parse(a, idx);
  Plan pl{make_window(a, p), {}, {}, {}};
  const Window& w = pl.w;
  Shape b = broadcast_index_shape(w.arrays);
  Shape rest;
  for (size_t i = 0; i < w.view.dims.size(); ++i) {
    int wd = static_cast<int>(i);
    bool indexed = std::find(w.array_dims.begin(), w.array_dims.end(), wd) != w.array_dims.end();
    bool is_int = std::find(w.int_dims.begin(), w.int_dims.end(), wd) != w.int_dims.end();
    if (!indexed && !is_int) rest.push_back(w.view.size[i]);
  }
  // with array indices there are no Int items: the window dims before the
  // first indexed one all remain
  int nb = static_cast<int>(b.size());
  if (!w.arrays.empty()) pl.perm = placement(w.adjacent, w.array_dims[0], nb, static_cast<int>(rest.size()));
  pl.gather_shape = b;
  pl.gather_shape.insert(pl.gather_shape.end(), rest.begin(), rest.end());
  if (w.arrays.empty()) {
    pl.result = rest;
  } else {
    for (int i : pl.perm) pl.result.push_back(pl.gather_shape[i]);
  }
  return pl;
}

array do_getitem(const array& a, py::handle idx) {
  Plan pl = plan(a, idx);
  const Window& w = pl.w;
  array view = window_view(a, w);
  if (w.arrays.empty()) return reshape(view, pl.result);
  if (!w.int_dims.empty()) throw std::logic_error("[getitem] ints must be index arrays here");
  array g = gather(view, w.arrays, w.array_dims);
  return transpose(g, pl.perm);
}

array do_scatter(const array& a, py::handle idx, const array& v, ScatterKind kind) {
  Plan pl = plan(a, idx);
  const Window& w = pl.w;
  if (w.arrays.empty()) {
    // basic window: v broadcast to a[idx]'s shape, with the Int dims back
    std::vector<int> identity(pl.result.size());
    for (size_t i = 0; i < identity.size(); ++i) identity[i] = static_cast<int>(i);
    array u = reshape(arrange_updates(v, pl.result, identity), w.view.size);
    return scatter(a, w.view, {}, u, {}, kind);
  }
  array u = arrange_updates(v, pl.result, pl.perm);
  return scatter(a, w.view, w.arrays, u, w.array_dims, kind);
}

// a[mask] = scalar without evaluating the mask: where(mask, v, a).
// a[mask] = v for a boolean array mask (the only index) matching the first
// mask.ndim dims of a, without evaluating anything: the j-th true position
// (in row-major order) takes row j of v broadcast to (count, *rest), where
// rest = a.shape[mask.ndim:], so v may be a scalar, broadcast against rest
// alone, or carry one row per true position (more rows than true positions
// are ignored, as MLX's masked scatter reads only what it needs). The count
// is not known while tracing (vmap over the mask); outside a transform a v
// with too few rows is a ValueError here, inside one take's bounds check
// raises at evaluation.
bool try_mask_assign(array& a, py::handle idx, const array& v) {
  if (py::isinstance<py::tuple>(idx)) return false;
  array m;
  if (is_array(idx)) {
    m = idx.cast<array>();
  } else if (py::isinstance<py::array>(idx)) {
    m = to_array(idx);
  } else {
    return false;
  }
  if (m.dtype() != Dtype::bool_ || m.ndim() == 0 || m.ndim() > a.ndim()) return false;
  for (int d = 0; d < m.ndim(); ++d) {
    if (m.shape()[d] != a.shape()[d]) return false;
  }
  const int k = m.ndim();
  Shape rest(a.shape().begin() + k, a.shape().end());
  Shape ms = m.shape();
  ms.insert(ms.end(), rest.size(), 1);
  array val = astype(v, a.dtype());
  array mb = reshape(m, ms);
  auto broadcast_value = [&](const Shape& to) {
    try {
      return broadcast_to(val, to);
    } catch (const std::invalid_argument&) {
      throw std::invalid_argument("[setitem] Cannot broadcast the value of shape " + shape_str(v.shape()) +
                                  " to the masked positions of an array of shape " + shape_str(a.shape()) + ".");
    }
  };
  if (val.ndim() <= static_cast<int>(rest.size()) || (val.ndim() == static_cast<int>(rest.size()) + 1 && val.shape()[0] == 1)) {
    if (val.ndim() == static_cast<int>(rest.size()) + 1) val = reshape(val, Shape(val.shape().begin() + 1, val.shape().end()));
    val = broadcast_value(rest);
    a = where(mb, val, a);
    return true;
  }
  if (val.ndim() != static_cast<int>(rest.size()) + 1) {
    throw std::invalid_argument("[setitem] A value of shape " + shape_str(v.shape()) + " has too many dims for the " +
                                std::to_string(rest.size() + 1) + "-d masked positions of an array of shape " +
                                shape_str(a.shape()) + ".");
  }
  Shape rows = rest;
  rows.insert(rows.begin(), val.shape()[0]);
  val = broadcast_value(rows);
  if (!m.is_tracer()) {
    array count = sum(astype(m, Dtype::int64));
    eval_nogil({count});
    int64_t n = count.item<int64_t>();
    if (n > val.shape()[0]) {
      throw std::invalid_argument("[setitem] The mask selects " + std::to_string(n) + " positions but the value of shape " +
                                  shape_str(v.shape()) + " has " + std::to_string(val.shape()[0]) + " rows.");
    }
    if (n == 0) return true;   // nothing selected: a is unchanged (v may be empty)
  } else if (val.shape()[0] == 0) {
    throw std::invalid_argument("[setitem] The value of shape " + shape_str(v.shape()) +
                                " has no rows for the masked positions.");
  }
  // row index of each mask position: the number of true positions before it
  // (0 at the false positions, so that only a true position beyond the
  // value's rows is out of range)
  array j = cumsum(flatten(astype(m, Dtype::int32)), 0, false, false);
  j = where(flatten(m), j, array(0, Dtype::int32));
  array rows_at = take(val, reshape(j, m.shape()), 0);   // shape m.shape + rest = a.shape
  a = where(mb, rows_at, a);
  return true;
}

struct ArrayAt {
  array a;
  py::object idx;
};

struct AtIndexer {
  array a;
};

}  // namespace

array index_get(const array& a, py::handle idx) { return do_getitem(a, idx); }

void init_indexing(py::module_& m) {
  auto at = py::class_<ArrayAt>(m, "ArrayAt", "Accumulating updates at an index: a.at[idx].add(v) and friends.");
  // subtract adds -v and divide multiplies by 1/v (cast to a's dtype), as MLX
  struct AtOp {
    const char* name;
    ScatterKind kind;
    array (*prepare)(const array&, const StreamOrDevice&);
  };
  for (AtOp op : {AtOp{"add", ScatterKind::Add, nullptr}, AtOp{"subtract", ScatterKind::Add, &negative},
                  AtOp{"multiply", ScatterKind::Prod, nullptr}, AtOp{"divide", ScatterKind::Prod, &reciprocal},
                  AtOp{"maximum", ScatterKind::Max, nullptr}, AtOp{"minimum", ScatterKind::Min, nullptr}}) {
    at.def(op.name, [op](const ArrayAt& x, const ArrayLike& v) {
      array u = v.next_to(x.a.dtype());
      return do_scatter(x.a, x.idx, op.prepare ? op.prepare(u, {}) : u, op.kind);
    }, "value"_a);
  }
  py::class_<AtIndexer>(m, "_ArrayAtIndexer")
      .def("__getitem__", [](const AtIndexer& x, py::object idx) { return ArrayAt{x.a, idx}; });

  auto cls = py::reinterpret_borrow<py::object>(py::type::of<array>());
  cls.attr("__getitem__") = py::cpp_function(&do_getitem, py::name("__getitem__"), py::is_method(cls));
  cls.attr("__setitem__") = py::cpp_function(
      [](array& a, py::handle idx, const ArrayLike& v) {
        array val = v.next_to(a.dtype());
        if (try_mask_assign(a, idx, val)) return;
        a.overwrite_descriptor(do_scatter(a, idx, val, ScatterKind::Assign));
      },
      py::name("__setitem__"), py::is_method(cls));
  cls.attr("at") = py::cpp_function([](const array& a) { return AtIndexer{a}; }, py::is_method(cls));
  cls.attr("at") = py::module_::import("builtins").attr("property")(cls.attr("at"), py::none(), py::none(),
      "Indexed updates that accumulate: a.at[idx].add(v), .subtract, .multiply, .divide, .maximum, .minimum.");
  cls.attr("diag") = py::cpp_function(
      [](const array& a, int64_t k, StreamOrDevice s) { return diag(a, k, s); }, py::name("diag"),
      py::is_method(cls), "k"_a = 0, py::kw_only(), kStream);
  cls.attr("diagonal") = py::cpp_function(
      [](const array& a, int64_t offset, int axis1, int axis2, StreamOrDevice s) {
        return diagonal(a, offset, axis1, axis2, s);
      },
      py::name("diagonal"), py::is_method(cls), "offset"_a = 0, "axis1"_a = 0, "axis2"_a = 1,
      kStream);

  m.def("take", [](const ArrayLike& a, const ArrayLike& indices, std::optional<int> axis, StreamOrDevice s) {
        return take(a, indices, axis, s);
      }, "a"_a, py::pos_only(), "indices"_a, "axis"_a = py::none(), py::kw_only(), kStream,
        "Elements of a at indices along axis (the flattened array when axis is None); the index dims take the "
        "axis' place. Out-of-range indices raise IndexError on evaluation.");
  m.def("take_along_axis", [](const ArrayLike& a, const ArrayLike& indices, std::optional<int> axis,
                              StreamOrDevice s) {
        return take_along_axis(a, indices, axis, s);
      }, "a"_a, py::pos_only(), "indices"_a, "axis"_a = -1, py::kw_only(), kStream,
        "Values of a at indices along axis; indices has a's rank and broadcasts with it on the other axes.");
  m.def("put_along_axis", [](const ArrayLike& a, const ArrayLike& indices, const ArrayLike& values,
                             std::optional<int> axis, StreamOrDevice s) {
        const array& x = a;
        return put_along_axis(x, indices, values.next_to(x.dtype()), axis, s);
      }, "a"_a, py::pos_only(), "indices"_a, "values"_a, "axis"_a = py::none(), py::kw_only(),
        kStream, "A copy of a with values written at indices along axis.");
  m.def("slice", [](const ArrayLike& a, const ArrayLike& start, std::vector<int> axes, Shape sizes,
                    StreamOrDevice s) {
        return slice(a, start, axes, sizes, s);
      }, "a"_a, "start_indices"_a, "axes"_a, "slice_size"_a, py::kw_only(), kStream,
        "A slice of shape slice_size (one size per dim) whose start along each of axes is given by the array "
        "start_indices (negative counts from the end; a window past the end raises IndexError on evaluation).");
  m.def("slice_update", [](const ArrayLike& a, const ArrayLike& update, const ArrayLike& start,
                           std::vector<int> axes, StreamOrDevice s) {
        const array& x = a;
        return slice_update(x, update.next_to(x.dtype()), start, axes, s);
      }, "a"_a, "update"_a, "start_indices"_a, "axes"_a, py::kw_only(), kStream,
        "A copy of a with update written at the window starting at start_indices along axes.");
  m.def("diag", [](const ArrayLike& a, int64_t k, StreamOrDevice s) { return diag(a, k, s); },
        "a"_a, py::pos_only(), "k"_a = 0, py::kw_only(), kStream,
        "The k-th diagonal of a 2-d array, or a 2-d array with a 1-d array on its k-th diagonal.");
  m.def("diagonal", [](const ArrayLike& a, int64_t offset, int axis1, int axis2, StreamOrDevice s) {
        return diagonal(a, offset, axis1, axis2, s);
      }, "a"_a, "offset"_a = 0, "axis1"_a = 0, "axis2"_a = 1, kStream,
        "The diagonal of the (axis1, axis2) planes, as the last dim of the result.");
  m.def("trace", [](const ArrayLike& a, int64_t offset, int axis1, int axis2, std::optional<Dtype> dtype, StreamOrDevice s) {
        return trace(a, offset, axis1, axis2, dtype, s);
      }, "a"_a, py::pos_only(), "offset"_a = 0, "axis1"_a = 0, "axis2"_a = 1, "dtype"_a = py::none(),
        py::kw_only(), kStream, "Sum along the diagonal of the (axis1, axis2) planes.");
}

}  // namespace ember::py_bind
