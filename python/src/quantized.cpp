// The quantization ops (ember/ops/quantized.h) with MLX's argument names:
// quantize, dequantize, quantized_matmul, gather_qmm, qqmm, gather_qqmm.
#include "bindings.h"
#include "casters.h"
#include "ember/backend/cpu/qmm_config.h"
#include "ember/ops/quantized.h"

namespace ember::py_bind {

void init_quantized(py::module_& m) {
  m.def("_set_qmm_int8", [](int level) { return cpu::set_qmm_int8(level); }, "level"_a,
        "Set how the quantized matrix product computes for affine 4- and 8-bit weights (0 float "
        "arithmetic, 1 int8 activations with pmaddubsw, 2 int8 with VNNI where the CPU has it, the "
        "default); returns the previous setting. For tests and benchmarks: call it while nothing is "
        "evaluating.");
  m.def("quantize", [](const ArrayLike& w, std::optional<int> group_size, std::optional<int> bits,
                       const std::string& mode, const std::optional<ArrayLike>& global_scale, StreamOrDevice s) {
        auto r = quantize(w, group_size, bits, mode, opt(global_scale), s);
        return r.size() == 3 ? py::tuple(py::make_tuple(r[0], r[1], r[2])) : py::tuple(py::make_tuple(r[0], r[1]));
      }, "w"_a, py::pos_only(), "group_size"_a = py::none(), "bits"_a = py::none(), "mode"_a = "affine",
      py::kw_only(), "global_scale"_a = py::none(), kStream);
  m.def("dequantize", [](const ArrayLike& w, const ArrayLike& scales, const std::optional<ArrayLike>& biases,
                         std::optional<int> group_size, std::optional<int> bits, const std::string& mode,
                         const std::optional<ArrayLike>& global_scale, std::optional<Dtype> dtype, StreamOrDevice s) {
        return dequantize(w, scales, opt(biases), group_size, bits, mode, opt(global_scale), dtype, s);
      }, "w"_a, py::pos_only(), "scales"_a, "biases"_a = py::none(), "group_size"_a = py::none(),
      "bits"_a = py::none(), "mode"_a = "affine", "global_scale"_a = py::none(), "dtype"_a = py::none(),
      py::kw_only(), kStream);
  m.def("quantized_matmul", [](const ArrayLike& x, const ArrayLike& w, const ArrayLike& scales,
                               const std::optional<ArrayLike>& biases, bool transpose, std::optional<int> group_size,
                               std::optional<int> bits, const std::string& mode, StreamOrDevice s) {
        return quantized_matmul(x, w, scales, opt(biases), transpose, group_size, bits, mode, s);
      }, "x"_a, "w"_a, py::pos_only(), "scales"_a, "biases"_a = py::none(), "transpose"_a = true,
      "group_size"_a = py::none(), "bits"_a = py::none(), "mode"_a = "affine", py::kw_only(), kStream);
  m.def("gather_qmm", [](const ArrayLike& x, const ArrayLike& w, const ArrayLike& scales,
                         const std::optional<ArrayLike>& biases, const std::optional<ArrayLike>& lhs_indices,
                         const std::optional<ArrayLike>& rhs_indices, bool transpose, std::optional<int> group_size,
                         std::optional<int> bits, const std::string& mode,
                         const std::optional<ArrayLike>& global_scale, bool sorted_indices, StreamOrDevice s) {
        return gather_qmm(x, w, scales, opt(biases), opt(lhs_indices), opt(rhs_indices), transpose, group_size, bits,
                          mode, opt(global_scale), sorted_indices, s);
      }, "x"_a, "w"_a, py::pos_only(), "scales"_a, "biases"_a = py::none(), "lhs_indices"_a = py::none(),
      "rhs_indices"_a = py::none(), "transpose"_a = true, "group_size"_a = py::none(), "bits"_a = py::none(),
      "mode"_a = "affine", "global_scale"_a = py::none(), py::kw_only(), "sorted_indices"_a = false, kStream);
  m.def("qqmm", [](const ArrayLike& x, const ArrayLike& w, const std::optional<ArrayLike>& scales,
                   std::optional<int> group_size, std::optional<int> bits, const std::string& mode,
                   const std::optional<ArrayLike>& gx, const std::optional<ArrayLike>& gw, StreamOrDevice s) {
        return qqmm(x, w, opt(scales), group_size, bits, mode, opt(gx), opt(gw), s);
      }, "x"_a, "w"_a, "scales"_a = py::none(), "group_size"_a = py::none(), "bits"_a = py::none(),
      "mode"_a = "nvfp4", "global_scale_x"_a = py::none(), "global_scale_w"_a = py::none(), py::kw_only(), kStream);
  m.def("gather_qqmm", [](const ArrayLike& x, const ArrayLike& w, const std::optional<ArrayLike>& scales,
                          const std::optional<ArrayLike>& lhs_indices, const std::optional<ArrayLike>& rhs_indices,
                          std::optional<int> group_size, std::optional<int> bits, const std::string& mode,
                          const std::optional<ArrayLike>& gx, const std::optional<ArrayLike>& gw, bool sorted_indices,
                          StreamOrDevice s) {
        return gather_qqmm(x, w, opt(scales), opt(lhs_indices), opt(rhs_indices), group_size, bits, mode, opt(gx),
                           opt(gw), sorted_indices, s);
      }, "x"_a, "w"_a, py::pos_only(), "scales"_a = py::none(), "lhs_indices"_a = py::none(),
      "rhs_indices"_a = py::none(), "group_size"_a = py::none(), "bits"_a = py::none(), "mode"_a = "nvfp4",
      "global_scale_x"_a = py::none(), "global_scale_w"_a = py::none(), py::kw_only(), "sorted_indices"_a = false,
      kStream);
}

}  // namespace ember::py_bind
