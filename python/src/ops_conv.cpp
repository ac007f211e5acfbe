// Bindings of ember/ops/conv.h with MLX's argument names: ints or tuples
// for the per-dimension options, conv_general's padding also as a pair
// (low list, high list).
#include "bindings.h"
#include "ember/ops/conv.h"

namespace ember::py_bind {

namespace {
// int -> {v}; sequence of ints -> vector (a bool is not an int here).
ConvDims dims(py::handle v, const char* what) {
  ConvDims out;
  if (py::isinstance<py::bool_>(v) || !load_shape(v, out)) {
    throw py::type_error(std::string("[conv] ") + what + " must be int or a sequence of ints.");
  }
  return out;
}
}  // namespace

void init_ops_conv(py::module_& m) {
  m.def("conv1d", [](const ArrayLike& x, const ArrayLike& w, int64_t stride, int64_t padding, int64_t dilation,
                     int64_t groups, StreamOrDevice s) {
        return conv1d(x, w, stride, padding, dilation, groups, s);
      }, "input"_a, "weight"_a, py::pos_only(), "stride"_a = 1, "padding"_a = 0, "dilation"_a = 1, "groups"_a = 1,
      py::kw_only(), kStream,
      "1-D convolution (cross-correlation) of input (N, L, C_in) with weight (C_out, K, C_in / groups); "
      "returns (N, L_out, C_out).");
  auto nd = [&m](const char* name, int D, const char* doc) {
    m.def(name, [D](const ArrayLike& x, const ArrayLike& w, py::handle stride, py::handle padding, py::handle dilation,
                    int64_t groups, StreamOrDevice s) {
            auto st = dims(stride, "stride"), pd = dims(padding, "padding"), dl = dims(dilation, "dilation");
          return D == 2 ? conv2d(x, w, st, pd, dl, groups, s)
                        : conv3d(x, w, st, pd, dl, groups, s);
        }, "input"_a, "weight"_a, py::pos_only(), "stride"_a = 1, "padding"_a = 0, "dilation"_a = 1,
        "groups"_a = 1, py::kw_only(), kStream, doc);
  };
  nd("conv2d", 2,
     "2-D convolution (cross-correlation) of input (N, H, W, C_in) with weight (C_out, KH, KW, C_in / groups); "
     "stride, padding and dilation are ints or pairs.");
  nd("conv3d", 3,
     "3-D convolution (cross-correlation) of input (N, D, H, W, C_in) with weight "
     "(C_out, KD, KH, KW, C_in / groups); stride, padding and dilation are ints or triples.");
  m.def("conv_general", [](const ArrayLike& x, const ArrayLike& w, py::handle stride, py::handle padding,
                           py::handle kernel_dilation, py::handle input_dilation, int64_t groups, bool flip,
                           StreamOrDevice s) {
        ConvDims lo, hi;
        bool pair = false;
        if (py::isinstance<py::sequence>(padding) && !py::isinstance<py::str>(padding)) {
          auto seq = padding.cast<py::sequence>();
          if (seq.size() == 2 && py::isinstance<py::sequence>(seq[0]) && py::isinstance<py::sequence>(seq[1])) {
            lo = dims(seq[0], "padding");
            hi = dims(seq[1], "padding");
            pair = true;
          }
        }
        if (!pair) lo = hi = dims(padding, "padding");
        return conv_general(x, w, dims(stride, "stride"), lo, hi, dims(kernel_dilation, "kernel_dilation"),
                            dims(input_dilation, "input_dilation"), groups, flip, s);
      }, "input"_a, "weight"_a, py::pos_only(), "stride"_a = 1, "padding"_a = 0, "kernel_dilation"_a = 1,
      "input_dilation"_a = 1, "groups"_a = 1, "flip"_a = false, py::kw_only(), kStream,
      "General convolution over 1-3 spatial dims: input (N, *spatial, C_in), weight "
      "(C_out, *kernel, C_in / groups). padding is an int, a sequence, or a pair (low, high) of sequences "
      "(negative crops); input_dilation inserts zeros between input elements; flip convolves instead of "
      "correlating.");
  m.def("conv_transpose1d", [](const ArrayLike& x, const ArrayLike& w, int64_t stride, int64_t padding,
                               int64_t dilation, int64_t output_padding, int64_t groups, StreamOrDevice s) {
        return conv_transpose1d(x, w, stride, padding, dilation, output_padding, groups, s);
      }, "input"_a, "weight"_a, py::pos_only(), "stride"_a = 1, "padding"_a = 0, "dilation"_a = 1,
      "output_padding"_a = 0, "groups"_a = 1, py::kw_only(), kStream,
      "1-D transposed convolution of input (N, L, C_in) with weight (C_out, K, C_in / groups).");
  auto tnd = [&m](const char* name, int D, const char* doc) {
    m.def(name, [D](const ArrayLike& x, const ArrayLike& w, py::handle stride, py::handle padding, py::handle dilation,
                    py::handle output_padding, int64_t groups, StreamOrDevice s) {
            auto st = dims(stride, "stride"), pd = dims(padding, "padding"), dl = dims(dilation, "dilation"),
               op = dims(output_padding, "output_padding");
          return D == 2 ? conv_transpose2d(x, w, st, pd, dl, op, groups, s)
                        : conv_transpose3d(x, w, st, pd, dl, op, groups, s);
        }, "input"_a, "weight"_a, py::pos_only(), "stride"_a = 1, "padding"_a = 0, "dilation"_a = 1,
        "output_padding"_a = 0, "groups"_a = 1, py::kw_only(), kStream, doc);
  };
  tnd("conv_transpose2d", 2,
      "2-D transposed convolution of input (N, H, W, C_in) with weight (C_out, KH, KW, C_in / groups).");
  tnd("conv_transpose3d", 3,
      "3-D transposed convolution of input (N, D, H, W, C_in) with weight (C_out, KD, KH, KW, C_in / groups).");
  m.def("convolve", [](const ArrayLike& a, const ArrayLike& v, const std::string& mode, StreamOrDevice s) {
        auto [x, k] = promote(a, v);
        return convolve(x, k, mode, s);
      }, "a"_a, "v"_a, py::pos_only(), "mode"_a = "full", py::kw_only(), kStream,
      "Discrete 1-D convolution of two vectors, with NumPy's modes 'full', 'same' and 'valid'.");
}

}  // namespace ember::py_bind
