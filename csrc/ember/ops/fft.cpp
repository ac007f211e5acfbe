// Discrete Fourier transform ops (ops/fft.h): argument checks, dtype rules,
// cropping / zero-padding, and one FFT node per transformed axis.
#include "ember/ops/fft.h"

#include <cmath>

#include "ember/ops/common.h"
#include "ember/primitives/fft.h"

namespace ember::fft {

using ember::detail::fail;

namespace {

array resize_axis(const array& x, int axis, int64_t len, const StreamOrDevice& s) {
  const int64_t cur = x.shape(axis);
  if (len == cur) return x;
  if (len < cur) {
    Shape start(x.ndim(), 0), stop = x.shape(), step(x.ndim(), 1);
    stop[axis] = len;
    return slice(x, start, stop, step, s);
  }
  std::vector<std::pair<int64_t, int64_t>> w(x.ndim(), {0, 0});
  w[axis].second = len - cur;
  return pad(x, w, "constant", array(0.0, x.dtype()), s);
}

double norm_scale(const char* op, const std::string& norm, bool inverse, int64_t n) {
  if (norm == "backward") return inverse ? 1.0 / static_cast<double>(n) : 1.0;
  if (norm == "ortho") return 1.0 / std::sqrt(static_cast<double>(n));
  if (norm == "forward") return inverse ? 1.0 : 1.0 / static_cast<double>(n);
  fail(op, "Invalid norm '", norm, "'. Expected one of {'backward', 'ortho', 'forward'}.");
}

array general(const char* op, const array& a, const std::optional<Shape>& sz, const std::vector<int>& axes_in,
              bool inverse, FFT::Kind mode, const std::string& norm, const StreamOrDevice& s) {
  norm_scale(op, norm, inverse, 1);  // validates norm
  const int nd = a.ndim();
  std::vector<int> axes;
  for (int ax : axes_in) {
    if (ax < -nd || ax >= nd) {
      ember::detail::fail_index(op, "Axis ", ax, " is out of bounds for array of shape ", shape_str(a.shape()), ".");
    }
    axes.push_back(ax < 0 ? ax + nd : ax);
  }
  for (size_t i = 0; i < axes.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (axes[i] == axes[j]) fail(op, "Duplicated axis ", axes_in[i], " in the axes of shape ", shape_str(a.shape()), ".");
  if (sz && sz->size() != axes.size()) {
    fail(op, "Shape and axes have different sizes (", sz->size(), " and ", axes.size(), ").");
  }
  if (axes.empty()) return a;
  const int k = static_cast<int>(axes.size());
  Shape n(k);
  for (int i = 0; i < k; ++i) {
    if (sz) {
      n[i] = (*sz)[i];
    } else if (mode == FFT::C2R && i == k - 1) {
      n[i] = 2 * (a.shape(axes[i]) - 1);
    } else {
      n[i] = a.shape(axes[i]);
    }
    if (n[i] <= 0) {
      fail(op, "Invalid FFT output size ", n[i], " requested for axis ", axes_in[i], " of input shape ",
           shape_str(a.shape()), ".");
    }
  }
  const int last = axes[k - 1];
  if (mode == FFT::C2C) {
    array x = a.dtype() == Dtype::complex64 ? a : astype(a, Dtype::complex64, s);
    for (int i = k - 1; i >= 0; --i) {
      x = resize_axis(x, axes[i], n[i], s);
      x = fft_node(x, FFT::C2C, axes[i], inverse, n[i], norm_scale(op, norm, inverse, n[i]), to_stream(s));
    }
    return x;
  }
  if (mode == FFT::R2C) {
    array x = is_complex(a.dtype()) ? real(a, s) : a;
    if (x.dtype() != Dtype::float32) x = astype(x, Dtype::float32, s);
    x = resize_axis(x, last, n[k - 1], s);
    x = fft_node(x, FFT::R2C, last, false, n[k - 1], norm_scale(op, norm, false, n[k - 1]), to_stream(s));
    for (int i = k - 2; i >= 0; --i) {
      x = resize_axis(x, axes[i], n[i], s);
      x = fft_node(x, FFT::C2C, axes[i], false, n[i], norm_scale(op, norm, false, n[i]), to_stream(s));
    }
    return x;
  }
  array x = a.dtype() == Dtype::complex64 ? a : astype(a, Dtype::complex64, s);
  for (int i = 0; i < k - 1; ++i) {
    x = resize_axis(x, axes[i], n[i], s);
    x = fft_node(x, FFT::C2C, axes[i], true, n[i], norm_scale(op, norm, true, n[i]), to_stream(s));
  }
  x = resize_axis(x, last, n[k - 1] / 2 + 1, s);
  return fft_node(x, FFT::C2R, last, true, n[k - 1], norm_scale(op, norm, true, n[k - 1]), to_stream(s));
}

std::vector<int> all_axes(int nd) {
  std::vector<int> v(nd);
  for (int i = 0; i < nd; ++i) v[i] = i;
  return v;
}

array nd_op(const char* op, const array& a, const std::optional<Shape>& sz, const std::optional<std::vector<int>>& axes,
            bool inverse, FFT::Kind mode, const std::string& norm, const StreamOrDevice& s) {
  if (!axes && sz) fail(op, "`axes` should not be `None` if `s` is not `None`.");
  return general(op, a, sz, axes ? *axes : all_axes(a.ndim()), inverse, mode, norm, s);
}

std::optional<Shape> one(std::optional<int64_t> n) {
  if (!n) return std::nullopt;
  return Shape{*n};
}

}  // namespace

array fft(const array& a, std::optional<int64_t> n, int axis, const std::string& norm, const StreamOrDevice& s) {
  return general("fft", a, one(n), {axis}, false, FFT::C2C, norm, s);
}
array ifft(const array& a, std::optional<int64_t> n, int axis, const std::string& norm, const StreamOrDevice& s) {
  return general("ifft", a, one(n), {axis}, true, FFT::C2C, norm, s);
}
array rfft(const array& a, std::optional<int64_t> n, int axis, const std::string& norm, const StreamOrDevice& s) {
  return general("rfft", a, one(n), {axis}, false, FFT::R2C, norm, s);
}
array irfft(const array& a, std::optional<int64_t> n, int axis, const std::string& norm, const StreamOrDevice& s) {
  return general("irfft", a, one(n), {axis}, true, FFT::C2R, norm, s);
}
array fftn(const array& a, const std::optional<Shape>& sz, const std::optional<std::vector<int>>& axes,
           const std::string& norm, const StreamOrDevice& s) {
  return nd_op("fftn", a, sz, axes, false, FFT::C2C, norm, s);
}
array ifftn(const array& a, const std::optional<Shape>& sz, const std::optional<std::vector<int>>& axes,
            const std::string& norm, const StreamOrDevice& s) {
  return nd_op("ifftn", a, sz, axes, true, FFT::C2C, norm, s);
}
array rfftn(const array& a, const std::optional<Shape>& sz, const std::optional<std::vector<int>>& axes,
            const std::string& norm, const StreamOrDevice& s) {
  return nd_op("rfftn", a, sz, axes, false, FFT::R2C, norm, s);
}
array irfftn(const array& a, const std::optional<Shape>& sz, const std::optional<std::vector<int>>& axes,
             const std::string& norm, const StreamOrDevice& s) {
  return nd_op("irfftn", a, sz, axes, true, FFT::C2R, norm, s);
}

namespace {
array freqs(const char* op, int64_t n, double d, bool half, const StreamOrDevice& s) {
  if (n <= 0) fail(op, "`n` must be greater than 0; got ", n, ".");
  const int64_t len = half ? n / 2 + 1 : n;
  std::vector<float> v(len);
  const double scale = 1.0 / (d * static_cast<double>(n));
  for (int64_t k = 0; k < len; ++k) {
    int64_t f = (half || k <= (n - 1) / 2) ? k : k - n;
    v[k] = static_cast<float>(static_cast<double>(f) * scale);
  }
  return array(v.data(), Shape{len}, Dtype::float32);
}

array shift(const char* op, const array& a, const std::optional<std::vector<int>>& axes, bool inverse,
            const StreamOrDevice& s) {
  std::vector<int> ax = axes ? *axes : all_axes(a.ndim());
  if (ax.empty()) return a;
  Shape sh;
  Axes norm_axes;
  for (int v : ax) {
    int d = normalize_axis(v, a.ndim(), op);
    int64_t h = a.shape(d) / 2;
    sh.push_back(inverse ? -h : h);
    norm_axes.push_back(d);
  }
  return roll(a, sh, norm_axes, s);
}
}  // namespace

array fftfreq(int64_t n, double d, const StreamOrDevice& s) { return freqs("fftfreq", n, d, false, s); }
array rfftfreq(int64_t n, double d, const StreamOrDevice& s) { return freqs("rfftfreq", n, d, true, s); }
array fftshift(const array& a, const std::optional<std::vector<int>>& axes, const StreamOrDevice& s) {
  return shift("fftshift", a, axes, false, s);
}
array ifftshift(const array& a, const std::optional<std::vector<int>>& axes, const StreamOrDevice& s) {
  return shift("ifftshift", a, axes, true, s);
}

namespace {
// The window (given, or ones of win_length) centered and zero-padded to n_fft.
array stft_window(const char* op, int64_t n_fft, std::optional<int64_t> win_length, const std::optional<array>& window,
                  const StreamOrDevice& s) {
  array win = ones({1});
  if (window) {
    if (window->ndim() != 1) {
      fail(op, "window must be a one-dimensional array; got shape ", shape_str(window->shape()), ".");
    }
    win = astype(*window, Dtype::float32, s);
  } else {
    const int64_t wl = win_length ? *win_length : n_fft;
    if (wl <= 0) fail(op, "win_length must be positive; got ", wl, ".");
    if (wl > n_fft) fail(op, "window length must not exceed n_fft (", wl, " > ", n_fft, ").");
    win = ones({wl}, Dtype::float32, s);
  }
  const int64_t wl = win.shape(0);
  if (wl > n_fft) fail(op, "window length must not exceed n_fft (", wl, " > ", n_fft, ").");
  if (wl < n_fft) {
    const int64_t left = (n_fft - wl) / 2;
    win = pad(win, {{left, n_fft - wl - left}}, "constant", array(0.0f, Dtype::float32), s);
  }
  return win;
}
}  // namespace

array stft(const array& x, int64_t n_fft, std::optional<int64_t> hop_length, std::optional<int64_t> win_length,
           const std::optional<array>& window, bool center, const std::string& pad_mode, const std::string& norm,
           std::optional<bool> onesided, const StreamOrDevice& s) {
  const char* op = "stft";
  if (x.ndim() < 1) fail(op, "Input must have at least one dimension; got shape ", shape_str(x.shape()), ".");
  if (n_fft <= 0) fail(op, "n_fft must be positive; got ", n_fft, ".");
  const int64_t hop = hop_length ? *hop_length : n_fft / 4;
  if (hop <= 0) fail(op, "hop_length must be positive; got ", hop, ".");
  norm_scale(op, norm, false, 1);
  array win = stft_window(op, n_fft, win_length, window, s);
  const bool cplx = is_complex(x.dtype());
  const bool one_sided = onesided ? *onesided : !cplx;
  array sig = (is_inexact(x.dtype()) && x.dtype() != Dtype::float64) ? x : astype(x, cplx ? Dtype::complex64 : Dtype::float32, s);
  const int last = sig.ndim() - 1;
  if (center) {
    if (pad_mode != "reflect" && pad_mode != "constant" && pad_mode != "edge") {
      fail(op, "Invalid pad_mode '", pad_mode, "'. Expected one of {'reflect', 'constant', 'edge'}.");
    }
    std::vector<std::pair<int64_t, int64_t>> w(sig.ndim(), {0, 0});
    w[last] = {n_fft / 2, n_fft / 2};
    sig = pad(sig, w, pad_mode, array(0.0, sig.dtype()), s);
  }
  const int64_t L = sig.shape(last);
  if (L < n_fft) {
    fail(op, "Input is too short for the given n_fft (", L, center ? " samples after centering" : " samples",
         " < ", n_fft, ").");
  }
  const int64_t frames = 1 + (L - n_fft) / hop;
  const Dtype it = frames * hop + n_fft <= (int64_t(1) << 31) ? Dtype::int32 : Dtype::int64;
  array idx = add(reshape(arange(0.0, static_cast<double>(frames * hop), static_cast<double>(hop), it, s), {frames, 1}, s),
                  reshape(arange(0.0, static_cast<double>(n_fft), 1.0, it, s), {1, n_fft}, s), s);
  array fr = multiply(take(sig, idx, last, s), win, s);  // (..., frames, n_fft)
  array spec = one_sided ? rfft(fr, n_fft, -1, norm, s) : fft(fr, n_fft, -1, norm, s);
  return swapaxes(spec, -1, -2, s);
}

array istft(const array& stft_matrix, std::optional<int64_t> n_fft_opt, std::optional<int64_t> hop_length,
            std::optional<int64_t> win_length, const std::optional<array>& window, bool center, const std::string& norm,
            std::optional<bool> onesided, std::optional<int64_t> length, const StreamOrDevice& s) {
  const char* op = "istft";
  const array& S = stft_matrix;
  if (S.ndim() < 2) {
    fail(op, "Input must have at least two dimensions (freq, frames); got shape ", shape_str(S.shape()), ".");
  }
  const bool one_sided = onesided.value_or(true);
  const int64_t n_freq = S.shape(-2), F = S.shape(-1);
  const int64_t n_fft = n_fft_opt ? *n_fft_opt : (one_sided ? 2 * (n_freq - 1) : n_freq);
  if (n_fft <= 0) fail(op, "n_fft must be positive; got ", n_fft, " (input shape ", shape_str(S.shape()), ").");
  const int64_t hop = hop_length ? *hop_length : n_fft / 4;
  if (hop <= 0) fail(op, "hop_length must be positive; got ", hop, ".");
  if (length && *length < 0) fail(op, "length must be non-negative; got ", *length, ".");
  if (F <= 0) fail(op, "Input has no frames (shape ", shape_str(S.shape()), ").");
  norm_scale(op, norm, true, 1);
  array win = stft_window(op, n_fft, win_length, window, s);
  array Sf = swapaxes(S, -1, -2, s);  // (..., F, n_freq)
  array fr = one_sided ? irfft(Sf, n_fft, -1, norm, s) : real(ifft(Sf, n_fft, -1, norm, s), s);
  fr = multiply(fr, win, s);  // (..., F, n_fft)
  const int nb = fr.ndim() - 2;
  const int64_t T = n_fft + hop * (F - 1);
  const Dtype it = T <= (int64_t(1) << 31) ? Dtype::int32 : Dtype::int64;
  array idx = add(reshape(arange(0.0, static_cast<double>(F * hop), static_cast<double>(hop), it, s), {F, 1}, s),
                  reshape(arange(0.0, static_cast<double>(n_fft), 1.0, it, s), {1, n_fft}, s), s);
  // overlap-add: updates laid out as (F, n_fft, batch...)
  std::vector<int> perm = {nb, nb + 1};
  for (int d = 0; d < nb; ++d) perm.push_back(d);
  Shape out_shape(fr.shape().begin(), fr.shape().begin() + nb);
  out_shape.push_back(T);
  array y = scatter(zeros(out_shape, Dtype::float32, s), {idx}, transpose(fr, perm, s), {nb}, ScatterKind::Add, s);
  array w2 = broadcast_to(square(win, s), {F, n_fft}, s);
  array env = scatter(zeros({T}, Dtype::float32, s), {idx}, w2, {0}, ScatterKind::Add, s);
  array ok = greater(env, array(1e-11f, Dtype::float32), s);
  y = where(ok, divide(y, where(ok, env, array(1.0f, Dtype::float32), s), s), array(0.0f, Dtype::float32), s);
  const int64_t start = center ? n_fft / 2 : 0;
  const int64_t stop = length ? std::min(T, start + *length) : T - start;
  Shape st(y.ndim(), 0), sp = y.shape(), step(y.ndim(), 1);
  st[nb] = start;
  sp[nb] = std::max(stop, start);
  y = slice(y, st, sp, step, s);
  if (length && y.shape(nb) < *length) y = resize_axis(y, nb, *length, s);
  return y;
}

}  // namespace ember::fft
