// Bindings of ember/ops/contract.h with MLX's argument names.
#include <cstdint>

#include "bindings.h"

namespace ember::py_bind {

namespace {

// An int or a sequence of ints.
Shape int_or_ints(py::handle v, const char* op, const char* what) {
  Shape out;
  if (!load_int64s(v, out)) throw type_error(std::string("[") + op + "] " + what + " must be an int or a sequence of ints.");
  return out;
}

Axes to_int_axes(const Shape& v, const char* op) {
  Axes r;
  for (int64_t a : v) {
    if (a < INT32_MIN || a > INT32_MAX) throw std::out_of_range(std::string("[") + op + "] Axis out of range.");
    r.push_back(static_cast<int>(a));
  }
  return r;
}
}  // namespace

void init_ops_contract(py::module_& m) {
  {  // *operands: the docstrings carry MLX's signatures
    py::options o;
    o.disable_function_signatures();
    m.def("einsum", [](const std::string& subscripts, py::args operands, StreamOrDevice s) {
          return einsum(subscripts, array_list(operands), s);
        }, "subscripts"_a, kStream,
        "einsum(subscripts: str, *operands, stream: StreamOrDevice = None) -> array\n\n"
        "Einstein summation of the operands. Operands are contracted pairwise in the order einsum_path\n"
        "reports; each contraction is a (batched) matmul.");
    m.def("einsum_path", [](const std::string& subscripts, py::args operands) {
          auto [path, info] = einsum_path(subscripts, array_list(operands));
          py::list steps;
          for (auto& step : path) {
            py::tuple t(step.size());
            for (size_t i = 0; i < step.size(); ++i) t[i] = py::int_(step[i]);
            steps.append(t);
          }
          return py::make_tuple(steps, info);
        }, "subscripts"_a,
        "einsum_path(subscripts: str, *operands)\n\n"
        "The contraction order einsum uses (a list of position tuples) and a string describing its cost.");
  }

  m.def("tensordot", [](const ArrayLike& a, const ArrayLike& b, py::handle axes, StreamOrDevice s) {
        const array &x = a, &y = b;
        if (py::isinstance<py::int_>(axes)) {
          int64_t n = axes.cast<int64_t>();
          if (n < INT32_MIN || n > INT32_MAX) throw std::invalid_argument("[tensordot] axes is out of range.");
          return tensordot(x, y, static_cast<int>(n), s);
        }
        if (!py::isinstance<py::sequence>(axes) || py::isinstance<py::str>(axes) || py::len(axes) != 2) {
          throw std::invalid_argument("[tensordot] axes must be an int or a list of two lists of axes.");
        }
        auto seq = py::reinterpret_borrow<py::sequence>(axes);
        Shape xa = int_or_ints(seq[0], "tensordot", "axes"), xb = int_or_ints(seq[1], "tensordot", "axes");
        return tensordot(x, y, to_int_axes(xa, "tensordot"), to_int_axes(xb, "tensordot"), s);
      }, "a"_a, "b"_a, py::pos_only(), "axes"_a = 2, py::kw_only(), kStream,
      "Tensor dot product: sum over the last ``axes`` dims of a and the first of b, or over the given pairs.");
  m.def("inner", [](const ArrayLike& a, const ArrayLike& b, StreamOrDevice s) {
        return inner(a, b, s);
      }, "a"_a, "b"_a, py::pos_only(), py::kw_only(), kStream,
      "Inner product of vectors; in higher dimensions a sum product over the last axes.");
  m.def("outer", [](const ArrayLike& a, const ArrayLike& b, StreamOrDevice s) {
        return outer(a, b, s);
      }, "a"_a, "b"_a, py::pos_only(), py::kw_only(), kStream,
      "Outer product of the flattened inputs.");
  m.def("kron", [](const ArrayLike& a, const ArrayLike& b, StreamOrDevice s) {
        return kron(a, b, s);
      }, "a"_a, "b"_a, py::kw_only(), kStream, "Kronecker product of a and b.");
  m.def("vecdot", [](const ArrayLike& a, const ArrayLike& b, int axis, StreamOrDevice s) {
        return vecdot(a, b, axis, s);
      }, "a"_a, "b"_a, py::pos_only(), py::kw_only(), "axis"_a = -1, kStream,
      "Vector dot product sum(conj(a) * b) along ``axis``.");
  m.def("matrix_transpose", [](const ArrayLike& a, StreamOrDevice s) {
        return matrix_transpose(a, s);
      }, "a"_a, py::pos_only(), py::kw_only(), kStream, "Swaps the last two dimensions.");
  m.def("unstack", [](const ArrayLike& x, int axis, StreamOrDevice s) {
        return as_tuple(unstack(x, axis, s));
      }, "x"_a, py::pos_only(), py::kw_only(), "axis"_a = 0, kStream,
      "Splits an array along ``axis`` into a tuple of arrays without that axis.");
  m.def("flip", [](const ArrayLike& a, const AxesArg& axis, StreamOrDevice s) {
        return flip(a, axis, s);
      }, "a"_a, py::pos_only(), "axis"_a = py::none(), py::kw_only(), kStream,
      "Reverses the order of elements along the given axes (all when None); a view.");
  m.def("diff", [](const ArrayLike& a, int n, int axis, StreamOrDevice s) {
        return diff(a, n, axis, s);
      }, "a"_a, py::pos_only(), "n"_a = 1, "axis"_a = -1, py::kw_only(), kStream,
      "The n-th discrete difference along ``axis``.");
  // MLX accepts shift and axis by keyword (its documented signature marks
  // them positional-only)
  m.def("roll", [](const ArrayLike& a, py::handle shift, py::handle axis, StreamOrDevice s) {
        const array& x = a;
        auto st = s;
        bool scalar_shift = py::isinstance<py::int_>(shift);
        Shape sh = int_or_ints(shift, "roll", "shift");
        int64_t total = 0;  // (wrapping: only absurd shifts overflow)
        for (int64_t v : sh) total = static_cast<int64_t>(static_cast<uint64_t>(total) + static_cast<uint64_t>(v));
        if (axis.is_none()) return roll(x, total, st);
        if (py::isinstance<py::int_>(axis)) return roll(x, total, axis.cast<int>(), st);
        Axes ax = to_int_axes(int_or_ints(axis, "roll", "axis"), "roll");
        if (scalar_shift) sh.assign(ax.size(), sh[0]);
        return roll(x, sh, ax, st);
      }, "a"_a, py::pos_only(), "shift"_a, "axis"_a = py::none(), py::kw_only(), kStream,
      "Rolls elements along the given axes (the flattened array when axis is None).");

  // window functions
  m.def("bartlett", [](int64_t M, StreamOrDevice s) { return bartlett(M, s); }, "M"_a, py::kw_only(),
        kStream, "The Bartlett (triangular) window of M points, float32.");
  m.def("blackman", [](int64_t M, StreamOrDevice s) { return blackman(M, s); }, "M"_a, py::kw_only(),
        kStream, "The Blackman window of M points, float32.");
  m.def("hamming", [](int64_t M, StreamOrDevice s) { return hamming(M, s); }, "M"_a, py::kw_only(),
        kStream, "The Hamming window of M points, float32.");
  m.def("hanning", [](int64_t M, StreamOrDevice s) { return hanning(M, s); }, "M"_a, py::kw_only(),
        kStream, "The Hann window of M points, float32.");
}

}  // namespace ember::py_bind
