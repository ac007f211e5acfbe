// The `fft` submodule (ember/ops/fft.h) with MLX's argument names: every
// argument may be passed by position or keyword, as in mlx.core.fft.
#include "bindings.h"
#include "ember/ops/fft.h"

namespace ember::py_bind {

namespace {

using OneFn = array (*)(const array&, std::optional<int64_t>, int, const std::string&, const StreamOrDevice&);
using NdFn = array (*)(const array&, const std::optional<Shape>&, const std::optional<std::vector<int>>&,
                       const std::string&, const StreamOrDevice&);

void def_one(py::module_& m, const char* name, OneFn f, const char* doc) {
  // n is an int32 as in MLX: a larger one does not match (TypeError)
  m.def(name, [f](const ArrayLike& a, std::optional<int> n, int axis, const std::string& norm, StreamOrDevice s) {
        return f(a, n, axis, norm, s);
      }, "a"_a, "n"_a = py::none(), "axis"_a = -1, "norm"_a = "backward", kStream, doc);
}

void def_nd(py::module_& m, const char* name, NdFn f, py::object default_axes, const char* doc) {
  m.def(name, [f](const ArrayLike& a, const std::optional<ShapeArg>& sz, const AxesArg& axes, const std::string& norm, StreamOrDevice s) {
        return f(a, opt(sz), axes, norm, s);
      }, "a"_a, "s"_a = py::none(), "axes"_a = default_axes, "norm"_a = "backward", kStream, doc);
}

}  // namespace

void init_fft(py::module_& m) {
  auto f = m.def_submodule("fft", "Discrete Fourier transforms (NumPy's semantics, complex64 results).");
  def_one(f, "fft", fft::fft,
          "One-dimensional discrete Fourier transform along ``axis``.\n\n"
          "``n`` crops or zero-pads the axis to that length first (default: its length). ``norm`` is\n"
          "'backward' (no scaling), 'ortho' (1/sqrt(n)) or 'forward' (1/n). Returns complex64.");
  def_one(f, "ifft", fft::ifft,
          "One-dimensional inverse discrete Fourier transform along ``axis`` (1/n scaling with the\n"
          "default ``norm='backward'``); ``n`` crops or zero-pads first. Returns complex64.");
  def_one(f, "rfft", fft::rfft,
          "Discrete Fourier transform of a real signal along ``axis``: the n//2 + 1 non-negative\n"
          "frequency bins (complex64). Complex input uses its real part; ``n`` crops or zero-pads.");
  def_one(f, "irfft", fft::irfft,
          "Inverse of ``rfft``: the real signal (float32) of length ``n`` (default 2 * (m - 1)) whose\n"
          "half spectrum is ``a`` along ``axis`` (cropped or zero-padded to n//2 + 1 bins).");
  py::object last2 = py::cast(std::vector<int>{-2, -1});
  def_nd(f, "fft2", fft::fftn, last2,
         "Two-dimensional discrete Fourier transform over ``axes`` (default the last two); ``s``\n"
         "gives each axis's length (crop or zero-pad). Returns complex64.");
  def_nd(f, "ifft2", fft::ifftn, last2, "Two-dimensional inverse discrete Fourier transform over ``axes``.");
  def_nd(f, "rfft2", fft::rfftn, last2,
         "Two-dimensional real discrete Fourier transform: rfft over the last of ``axes``, fft over\n"
         "the other.");
  def_nd(f, "irfft2", fft::irfftn, last2,
         "Inverse of ``rfft2``: ifft over the first of ``axes``, irfft over the last (float32).");
  def_nd(f, "fftn", fft::fftn, py::none(),
         "N-dimensional discrete Fourier transform over ``axes`` (default all; ``s`` needs ``axes``).");
  def_nd(f, "ifftn", fft::ifftn, py::none(), "N-dimensional inverse discrete Fourier transform over ``axes``.");
  def_nd(f, "rfftn", fft::rfftn, py::none(),
         "N-dimensional real discrete Fourier transform: rfft over the last of ``axes``, fft over\n"
         "the others.");
  def_nd(f, "irfftn", fft::irfftn, py::none(),
         "Inverse of ``rfftn`` (float32): ifft over all but the last of ``axes``, irfft over the last\n"
         "(default length 2 * (m - 1)).");
  f.def("fftfreq", [](int64_t n, double d, StreamOrDevice s) { return fft::fftfreq(n, d, s); },
        "n"_a, "d"_a = 1.0, kStream,
        "Sample frequencies of an n-point fft with sample spacing ``d``: [0, 1, ..., -1] / (d n) (float32).");
  f.def("rfftfreq", [](int64_t n, double d, StreamOrDevice s) { return fft::rfftfreq(n, d, s); },
        "n"_a, "d"_a = 1.0, kStream,
        "Sample frequencies of an n-point rfft: [0, 1, ..., n//2] / (d n) (float32).");
  f.def("stft", [](const ArrayLike& x, int64_t n_fft, std::optional<int64_t> hop, std::optional<int64_t> wl,
                   const std::optional<ArrayLike>& window, bool center, const std::string& pad_mode, const std::string& norm,
                   std::optional<bool> onesided, StreamOrDevice s) {
        return fft::stft(x, n_fft, hop, wl, opt(window), center, pad_mode, norm, onesided, s);
      }, "x"_a, "n_fft"_a = 2048, "hop_length"_a = py::none(), "win_length"_a = py::none(), "window"_a = py::none(),
      "center"_a = true, "pad_mode"_a = "reflect", "norm"_a = "backward", "onesided"_a = py::none(),
      kStream,
      "Short-time Fourier transform of the last axis: frames of ``n_fft`` samples every ``hop_length``\n"
      "(default n_fft // 4), each multiplied by ``window`` (default ones of ``win_length``, default n_fft;\n"
      "centered and zero-padded to n_fft). ``center`` pads n_fft // 2 on both sides first (``pad_mode``\n"
      "'reflect', 'constant' or 'edge'). ``onesided`` (default: real input) keeps n_fft // 2 + 1\n"
      "frequencies. Returns complex64 of shape (..., n_freq, n_frames).");
  f.def("istft", [](const ArrayLike& m, std::optional<int64_t> n_fft, std::optional<int64_t> hop, std::optional<int64_t> wl,
                    const std::optional<ArrayLike>& window, bool center, const std::string& norm, std::optional<bool> onesided,
                    std::optional<int64_t> length, StreamOrDevice s) {
        return fft::istft(m, n_fft, hop, wl, opt(window), center, norm, onesided, length, s);
      }, "stft_matrix"_a, "n_fft"_a = py::none(), "hop_length"_a = py::none(), "win_length"_a = py::none(),
      "window"_a = py::none(), "center"_a = true, "norm"_a = "backward", "onesided"_a = py::none(),
      "length"_a = py::none(), kStream,
      "Inverse of ``stft``: overlap-add of each frame's inverse transform times ``window``, divided by\n"
      "the overlap-added squared window. ``n_fft`` defaults to 2 * (n_freq - 1) when ``onesided``\n"
      "(default True), else n_freq; ``center`` drops the n_fft // 2 padding; ``length`` crops or\n"
      "zero-pads the result. Input (..., n_freq, n_frames); returns float32 (..., length).");
  f.def("fftshift", [](const ArrayLike& a, const AxesArg& axes, StreamOrDevice s) {
        return fft::fftshift(a, axes, s);
      }, "a"_a, "axes"_a = py::none(), kStream,
      "Move the zero-frequency bin to the center: roll each of ``axes`` (default all) by n//2.");
  f.def("ifftshift", [](const ArrayLike& a, const AxesArg& axes, StreamOrDevice s) {
        return fft::ifftshift(a, axes, s);
      }, "a"_a, "axes"_a = py::none(), kStream,
      "Inverse of ``fftshift``: roll each of ``axes`` (default all) by -(n//2).");
}

}  // namespace ember::py_bind
