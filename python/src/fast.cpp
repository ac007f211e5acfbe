// The `fast` submodule (ember/ops/fast.h): fused norms, rope, attention,
// cross entropy and the gated delta rule with MLX's argument names.
#include "bindings.h"
#include "ember/ops/fast.h"

namespace ember::py_bind {

void init_fast(py::module_& parent) {
  auto m = parent.def_submodule("fast", "Fused kernels: RMS and layer norm, rotary embeddings, attention, cross entropy, gated delta rule.");

  m.def("rms_norm", [](const ArrayLike& x, const std::optional<ArrayLike>& weight, double eps, StreamOrDevice s) {
        return fast::rms_norm(x, opt(weight), eps, s);
      }, "x"_a, "weight"_a.none(true), "eps"_a, py::kw_only(), kStream, "Root-mean-square normalisation.");
  m.def("layer_norm", [](const ArrayLike& x, const std::optional<ArrayLike>& weight,
                         const std::optional<ArrayLike>& bias, double eps, StreamOrDevice s) {
        return fast::layer_norm(x, opt(weight), opt(bias), eps, s);
      }, "x"_a, "weight"_a.none(true), "bias"_a.none(true), "eps"_a, py::kw_only(), kStream,
      "Layer normalisation.");
  m.def("rope", [](const ArrayLike& a, int dims, bool traditional, std::optional<double> base, double scale,
                   py::handle offset, const std::optional<ArrayLike>& freqs, StreamOrDevice s) {
        array off = (py::isinstance<py::int_>(offset) && !py::isinstance<py::bool_>(offset))
                        ? array(offset.cast<int64_t>(), Dtype::int64)
                        : ArrayLike::from(offset).get();
        return fast::rope(a, dims, traditional, base, scale, off, opt(freqs), s);
      }, "a"_a, "dims"_a, py::kw_only(), "traditional"_a, "base"_a.none(true), "scale"_a, "offset"_a,
      "freqs"_a = py::none(), kStream, "Rotary position embedding.");
  m.def("scaled_dot_product_attention",
        [](const ArrayLike& q, const ArrayLike& k, const ArrayLike& v, double scale, py::handle mask,
           const std::optional<ArrayLike>& sinks, bool force_fused, StreamOrDevice s) {
          std::optional<std::string> mode;
          std::optional<array> m;
          if (py::isinstance<py::str>(mask)) {
            mode = mask.cast<std::string>();
          } else if (!mask.is_none()) {
            m = ArrayLike::from(mask).get();
          }
          (void)force_fused;  // always fused on the CPU
          return fast::scaled_dot_product_attention(q, k, v, scale, mode, m,
                                                    opt(sinks), s);
        },
        "q"_a, "k"_a, "v"_a, py::kw_only(), "scale"_a, "mask"_a = py::none(), "sinks"_a = py::none(),
        "force_fused"_a = false, kStream, "Scaled dot-product attention.");
  m.def("cross_entropy", [](const ArrayLike& logits, const ArrayLike& targets, StreamOrDevice s) {
        return fast::cross_entropy(logits, targets, s);
      }, "logits"_a, "targets"_a, py::kw_only(), kStream, "Cross entropy over class indices.");
  m.def("gated_delta_update",
        [](const ArrayLike& q, const ArrayLike& k, const ArrayLike& v, const ArrayLike& gamma, const ArrayLike& beta,
           const std::optional<ArrayLike>& initial_state, const std::optional<ArrayLike>& mask, StreamOrDevice s) {
          return fast::gated_delta_update(q, k, v, gamma, beta, opt(initial_state), opt(mask), s);
        },
        "q"_a, "k"_a, "v"_a, "gamma"_a, "beta"_a, "initial_state"_a = py::none(), "mask"_a = py::none(), kStream,
        "The gated delta rule.");
}

}  // namespace ember::py_bind
