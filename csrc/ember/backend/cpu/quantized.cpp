// Kernels of the quantization primitives (primitives/quantized.h):
// Quantize and Dequantize (group by group, on the pool), and
// QuantizedMatmul's eval, which hands dense float32 operands to the
// per-level product kernel (backend/cpu/qmm.cpp). The value tables of the
// fp formats live here.
//
// The rounding follows MLX 0.32's CPU backend exactly (tests/python/
// test_quantized.py holds the NumPy model):
//  - affine: per group, in float32, the larger-magnitude edge (max or min)
//    is made exactly representable: scale = max((max - min) / (2^bits - 1),
//    1e-7), negated unless |min| > |max|; q0 = rint(edge / scale); if q0 != 0
//    the scale becomes edge / q0 and the bias the edge, else the bias is 0.
//    1 bit: scale = max(max - min, 1e-7), bias = min. Codes rint((w - bias)
//    / scale) clipped to [0, 2^bits - 1]; scales and biases rounded to w's
//    dtype afterwards.
//  - mxfp4/mxfp8: the scale is the smallest power of two s with amax <= s *
//    6 (448 for fp8), as e8m0 (127 + log2 s, clamped to [0, 254]; 127 for a
//    zero group, 255 for a non-finite amax); values w / s.
//  - nvfp4: the scale is amax / 6 in w's dtype (times enc = 448 * 6 /
//    global_scale in float32 when given) rounded to e4m3; values w / scale
//    in w's dtype (times enc in float32 when given). MLX composes it of ops
//    in w's dtype, so half-precision weights round there; w * (enc / scale)
//    in float32 differs on values near a code boundary.
//  - fp4 e2m1: the nearest of the 16 values, the first in code order on a
//    tie (ties go to the smaller magnitude; a negative value rounding to 0
//    gives +0; NaN gives 0). fp8 e4m3: round to nearest even, +-448 for
//    anything larger, infinities and NaN.
// Dequantize computes s * q (+ b) in float32 and rounds to the output dtype
// after the product and after the sum, as MLX does.
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "ember/backend/cpu/copy.h"
#include "ember/backend/cpu/isa.h"
#include "ember/backend/cpu/qmm.h"
#include "ember/backend/cpu/threadpool.h"
#include "ember/backend/cpu/qmm_config.h"
#include "ember/primitives/quantized.h"

namespace ember::cpu {

namespace {
const float kFp4Table[16] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f,
                             -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
}  // namespace

const float* const kFp4Values = kFp4Table;

const float* fp8_e4m3_values() {
  static const std::vector<float> t = [] {
    std::vector<float> v(256);
    for (int c = 0; c < 256; ++c) {
      const int e = (c >> 3) & 15, m = c & 7;
      float a = e == 0 ? std::ldexp(static_cast<float>(m), -9) : std::ldexp(1.0f + m / 8.0f, e - 7);
      if ((c & 0x7F) == 0x7F) a = std::numeric_limits<float>::quiet_NaN();
      v[c] = (c & 0x80) ? -a : a;
    }
    return v;
  }();
  return t.data();
}

const float* e8m0_values() {
  static const std::vector<float> t = [] {
    std::vector<float> v(256);
    for (int c = 0; c < 256; ++c) {
      uint32_t u = c == 0 ? 0x00400000u : static_cast<uint32_t>(c) << 23;
      std::memcpy(&v[c], &u, 4);
    }
    v[255] = std::numeric_limits<float>::quiet_NaN();
    return v;
  }();
  return t.data();
}

namespace {

struct Dense {
  std::vector<char> keep;
  const char* p = nullptr;
};

Dense dense(const array& a) {
  Dense d;
  if (a.row_contiguous()) {
    d.p = static_cast<const char*>(a.raw_data());
  } else {
    d.keep.resize(a.nbytes());
    copy_to_dense(a, d.keep.data());
    d.p = d.keep.data();
  }
  return d;
}

float load(const char* p, Dtype t, int64_t i) {
  if (t == Dtype::float32) return reinterpret_cast<const float*>(p)[i];
  if (t == Dtype::float16) return static_cast<float>(reinterpret_cast<const float16_t*>(p)[i]);
  return static_cast<float>(reinterpret_cast<const bfloat16_t*>(p)[i]);
}

void store(char* p, Dtype t, int64_t i, float v) {
  if (t == Dtype::float32) reinterpret_cast<float*>(p)[i] = v;
  else if (t == Dtype::float16) reinterpret_cast<float16_t*>(p)[i] = static_cast<float16_t>(v);
  else reinterpret_cast<bfloat16_t*>(p)[i] = static_cast<bfloat16_t>(v);
}

// v rounded to dtype t and back
float round_to(Dtype t, float v) {
  if (t == Dtype::float32) return v;
  if (t == Dtype::float16) return static_cast<float>(static_cast<float16_t>(v));
  return static_cast<float>(static_cast<bfloat16_t>(v));
}

uint8_t fp4_encode(float x) {
  const float a = std::fabs(x);
  uint8_t c = a <= 0.25f ? 0 : a <= 0.75f ? 1 : a <= 1.25f ? 2 : a <= 1.75f ? 3 : a <= 2.5f ? 4 : a <= 3.5f ? 5
              : a <= 5.0f ? 6 : 7;
  if (std::isnan(x)) return 0;
  return (x < 0 && c != 0) ? static_cast<uint8_t>(c | 8) : c;
}

uint8_t e4m3_encode(float x) {
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  const float a = std::fabs(x);
  if (!(a < 448.0f)) return sign | 0x7E;
  if (a < 0.015625f) return sign | static_cast<uint8_t>(std::nearbyint(a * 512.0f));  // subnormals (and 2^-6)
  uint32_t u;
  std::memcpy(&u, &a, 4);
  int e = static_cast<int>(u >> 23) - 127;
  uint32_t keep = (u >> 20) & 7, rem = u & 0xFFFFF;
  if (rem > 0x80000 || (rem == 0x80000 && (keep & 1))) ++keep;
  if (keep == 8) {
    keep = 0;
    ++e;
  }
  const uint32_t code = static_cast<uint32_t>(e + 7) << 3 | keep;
  return sign | static_cast<uint8_t>(code > 0x7E ? 0x7E : code);
}

// e8m0 code of the smallest power of two s with amax <= s * emax
uint8_t e8m0_for(float amax, float emax) {
  if (!std::isfinite(amax)) return 255;
  if (amax == 0.0f) return 127;
  int e;
  const double m = std::frexp(static_cast<double>(amax) / emax, &e);  // = m * 2^e, m in [0.5, 1)
  if (m == 0.5) --e;
  return static_cast<uint8_t>(std::min(254, std::max(0, e + 127)));
}

// Writes group g's codes (count gs) into the packed row bytes.
void pack_codes(const uint8_t* codes, int bits, int64_t c0, int64_t n, uint8_t* row) {
  if ((bits & (bits - 1)) == 0) {
    const int per = 32 / bits;
    uint32_t* w = reinterpret_cast<uint32_t*>(row);
    for (int64_t i = 0; i < n; i += per) {
      uint32_t word = 0;
      for (int k = 0; k < per; ++k) word |= static_cast<uint32_t>(codes[i + k]) << (bits * k);
      w[(c0 + i) / per] = word;
    }
    return;
  }
  const int per = bits == 6 ? 4 : 8, nbytes = per * bits / 8;
  for (int64_t i = 0; i < n; i += per) {
    uint64_t word = 0;
    for (int k = 0; k < per; ++k) word |= static_cast<uint64_t>(codes[i + k]) << (bits * k);
    uint8_t* d = row + (c0 + i) / per * nbytes;
    for (int b = 0; b < nbytes; ++b) d[b] = static_cast<uint8_t>(word >> (8 * b));
  }
}

uint8_t unpack_code(const uint8_t* row, int bits, int64_t c) {
  const uint32_t mask = (1u << bits) - 1;
  if ((bits & (bits - 1)) == 0) {
    const int per = 32 / bits;
    uint32_t w;
    std::memcpy(&w, row + (c / per) * 4, 4);
    return static_cast<uint8_t>((w >> (bits * (c % per))) & mask);
  }
  const int per = bits == 6 ? 4 : 8, nbytes = per * bits / 8;
  uint64_t word = 0;
  const uint8_t* p = row + (c / per) * nbytes;
  for (int b = 0; b < nbytes; ++b) word |= static_cast<uint64_t>(p[b]) << (8 * b);
  return static_cast<uint8_t>((word >> (bits * (c % per))) & mask);
}

}  // namespace

}  // namespace ember::cpu

namespace ember {


using cpu::Dense;

void Quantize::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& w = inputs[0];
  for (auto& o : outputs) o.alloc();
  const int64_t C = w.shape(-1), R = C ? w.size() / C : 0, G = C / group_size_;
  if (R == 0 || C == 0) return;
  Dense wd = cpu::dense(w);
  const Dtype t = w.dtype();
  float enc = 1.0f;
  if (has_global_) enc = 2688.0f / inputs[1].item<float>();
  const int64_t row_bytes = C * bits_ / 8;
  uint8_t* qout = outputs[0].data<uint8_t>();
  char* sout = outputs[1].data<char>();
  char* bout = mode_ == QuantMode::Affine ? outputs[2].data<char>() : nullptr;
  const int gs = group_size_, bits = bits_;
  const QuantMode mode = mode_;
  const bool global = has_global_;
  cpu::parallel_for(R * G, std::max<int64_t>(1, 4096 / gs), [&](int64_t g0, int64_t g1) {
    std::vector<float> v(gs);
    std::vector<uint8_t> codes(gs);
    for (int64_t gi = g0; gi < g1; ++gi) {
      const int64_t r = gi / G, g = gi % G;
      for (int k = 0; k < gs; ++k) v[k] = cpu::load(wd.p, t, r * C + g * gs + k);
      uint8_t* row = qout + r * row_bytes;
      if (mode == QuantMode::Affine) {
        float mx = -std::numeric_limits<float>::infinity(), mn = std::numeric_limits<float>::infinity();
        for (int k = 0; k < gs; ++k) {
          mx = std::max(mx, v[k]);
          mn = std::min(mn, v[k]);
        }
        const float nb = static_cast<float>((1 << bits) - 1);
        float scale, bias;
        if (bits == 1) {
          scale = std::max(mx - mn, 1e-7f);
          bias = mn;
        } else {
          const bool neg = std::fabs(mn) > std::fabs(mx);
          scale = std::max((mx - mn) / nb, 1e-7f);
          if (!neg) scale = -scale;
          const float edge = neg ? mn : mx;
          const float q0 = std::rint(edge / scale);
          bias = 0.0f;
          if (q0 != 0.0f) {
            scale = edge / q0;
            bias = edge;
          }
        }
        for (int k = 0; k < gs; ++k) {
          float q = std::rint((v[k] - bias) / scale);
          q = q >= 0.0f ? std::min(q, nb) : 0.0f;  // NaN (a NaN or infinite group) gives code 0
          codes[k] = static_cast<uint8_t>(q);
        }
        cpu::store(sout, t, gi, scale);
        cpu::store(bout, t, gi, bias);
      } else {
        float amax = 0.0f;
        bool finite = true;
        for (int k = 0; k < gs; ++k) {
          amax = std::max(amax, std::fabs(v[k]));
          finite &= std::isfinite(v[k]);
        }
        if (!finite) amax = std::numeric_limits<float>::infinity();
        uint8_t sc;
        if (mode == QuantMode::NvFp4) {
          float sd = cpu::round_to(t, amax / 6.0f);  // in w's dtype, as MLX
          if (global) sd = sd * enc;
          sc = cpu::e4m3_encode(sd);
          const float sv = cpu::fp8_e4m3_values()[sc];
          for (int k = 0; k < gs; ++k) {
            // w / scale in w's dtype (a zero scale: a zero group, code 0),
            // then times enc in float32
            float y = sv == 0.0f ? 0.0f : cpu::round_to(t, v[k] / sv);
            if (global) y = y * enc;
            codes[k] = cpu::fp4_encode(y);
          }
        } else {
          sc = cpu::e8m0_for(amax, mode == QuantMode::MxFp8 ? 448.0f : 6.0f);
          const float inv = 1.0f / cpu::e8m0_values()[sc];  // a power of two: w * inv is w / scale
          for (int k = 0; k < gs; ++k) {
            const float y = cpu::round_to(t, v[k] * inv);  // MLX rounds the quotient to w's dtype
            codes[k] = mode == QuantMode::MxFp8 ? cpu::e4m3_encode(y) : cpu::fp4_encode(y);
          }
        }
        reinterpret_cast<uint8_t*>(sout)[gi] = sc;
      }
      cpu::pack_codes(codes.data(), bits, g * gs, gs, row);
    }
  });
}

void Dequantize::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  array& out = outputs[0];
  out.alloc();
  const int64_t C = out.shape(-1), R = C ? out.size() / C : 0, G = C / group_size_;
  if (R == 0 || C == 0) return;
  Dense wd = cpu::dense(inputs[0]), sd = cpu::dense(inputs[1]);
  Dense bd;
  const bool affine = mode_ == QuantMode::Affine;
  if (affine) bd = cpu::dense(inputs[2]);
  float gmul = 1.0f;
  if (has_global_) gmul = inputs[affine ? 3 : 2].item<float>() / 2688.0f;
  const Dtype st = inputs[1].dtype(), ot = out.dtype();
  const int64_t row_bytes = C * bits_ / 8;
  const int gs = group_size_, bits = bits_;
  const float* table = mode_ == QuantMode::MxFp8 ? cpu::fp8_e4m3_values() : cpu::kFp4Values;
  const float* stable = mode_ == QuantMode::NvFp4 ? cpu::fp8_e4m3_values() : cpu::e8m0_values();
  const bool global = has_global_;
  char* o = out.data<char>();
  cpu::parallel_for(R * G, std::max<int64_t>(1, 4096 / gs), [&](int64_t g0, int64_t g1) {
    for (int64_t gi = g0; gi < g1; ++gi) {
      const int64_t r = gi / G, g = gi % G;
      const uint8_t* row = reinterpret_cast<const uint8_t*>(wd.p) + r * row_bytes;
      if (affine) {
        const float s = cpu::load(sd.p, st, gi), b = cpu::load(bd.p, inputs[2].dtype(), gi);
        for (int k = 0; k < gs; ++k) {
          const int64_t c = g * gs + k;
          const float q = static_cast<float>(cpu::unpack_code(row, bits, c));
          cpu::store(o, ot, r * C + c, cpu::round_to(ot, s * q) + b);
        }
      } else {
        float s = stable[reinterpret_cast<const uint8_t*>(sd.p)[gi]];
        if (global) s = s * gmul;
        for (int k = 0; k < gs; ++k) {
          const int64_t c = g * gs + k;
          cpu::store(o, ot, r * C + c, s * table[cpu::unpack_code(row, bits, c)]);
        }
      }
    }
  });
}

namespace {
// One product's kernel arguments and the buffers they point into: dense
// copies of strided operands, biases converted to the scales' dtype, and a
// float32 output where out is of another dtype (store() converts it back).
struct QmmCall {
  cpu::QmmArgs a;
  Dense wd, sd, bd;
  std::vector<float> bconv, of;
  array* out = nullptr;
  void store() {
    if (!of.empty()) cpu::convert_dense(Dtype::float32, of.data(), out->dtype(), out->data<char>(), out->size());
  }
};

// x as dense float32: its own data, or a converted copy kept in xf
const float* float_x(const array& x, std::vector<float>& xf, Dense& xd) {
  xd = cpu::dense(x);
  if (x.dtype() == Dtype::float32) return reinterpret_cast<const float*>(xd.p);
  xf.resize(x.size());
  cpu::convert_dense(x.dtype(), xd.p, Dtype::float32, xf.data(), x.size());
  return xf.data();
}

// c's arguments for out = x w (x already as float32 at xf); false when out
// is empty (nothing to compute)
bool setup(QmmCall& c, const std::vector<array>& inputs, array& out, const float* xf, int group_size, int bits,
           QuantMode mode, bool transpose) {
  out.alloc();
  if (out.size() == 0) return false;
  const array& w = inputs[1];
  cpu::QmmArgs& a = c.a;
  const int64_t R = w.shape(-2), C = w.shape(-1) * 32 / bits;
  a.K = transpose ? C : R;
  a.N = transpose ? R : C;
  a.batch = 1;  // the batch dims of w (those of x are then the same); else x's rows are all M
  for (int d = 0; d + 2 < w.ndim(); ++d) a.batch *= w.shape(d);
  a.M = out.size() / (a.batch * a.N);
  a.bits = bits;
  a.group_size = group_size;
  a.mode = static_cast<int>(mode);
  a.transpose = transpose;
  a.int8 = cpu::qmm_int8();
  a.x = xf;
  c.wd = cpu::dense(w);
  c.sd = cpu::dense(inputs[2]);
  a.w = reinterpret_cast<const uint32_t*>(c.wd.p);
  a.scales = c.sd.p;
  const Dtype st = inputs[2].dtype();
  a.scale_kind = st == Dtype::float32 ? 0 : st == Dtype::float16 ? 1 : st == Dtype::bfloat16 ? 2 : 3;
  if (mode == QuantMode::Affine) {
    c.bd = cpu::dense(inputs[3]);
    if (inputs[3].dtype() == st) {
      a.biases = c.bd.p;
    } else {  // biases of another float dtype: converted to the scales' (a float32 buffer holds either)
      const int64_t n = inputs[3].size();
      c.bconv.resize(n);
      cpu::convert_dense(inputs[3].dtype(), c.bd.p, st, c.bconv.data(), n);
      a.biases = c.bconv.data();
    }
  }
  c.out = &out;
  if (out.dtype() == Dtype::float32) {
    a.out = out.data<float>();
  } else {
    c.of.resize(out.size());
    a.out = c.of.data();
  }
  return true;
}
}  // namespace

void QuantizedMatmul::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  std::vector<float> xf;
  Dense xd;
  QmmCall c;
  if (!setup(c, inputs, outputs[0], float_x(inputs[0], xf, xd), group_size_, bits_, mode_, transpose_)) return;
  EMBER_ISA_CALL(qmm_run)(c.a);
  c.store();
}

// products of one x (is_equivalent primitives: the same format): x
// converted once, and the matrix-vector kernel's job shared
void QuantizedMatmul::eval_cpu_batch(const std::vector<Primitive*>&, const std::vector<const std::vector<array>*>& inputs,
                                     std::vector<std::vector<array>>& outputs) {
  std::vector<float> xf;
  Dense xd;
  const float* x = float_x((*inputs[0])[0], xf, xd);
  std::vector<QmmCall> calls(inputs.size());
  std::vector<cpu::QmmArgs> args;
  args.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (setup(calls[i], *inputs[i], outputs[i][0], x, group_size_, bits_, mode_, transpose_)) args.push_back(calls[i].a);
  EMBER_ISA_CALL(qmm_run_batch)(args.data(), static_cast<int>(args.size()));
  for (auto& c : calls)
    if (c.out) c.store();
}

bool Quantize::is_equivalent(const Primitive& o) const {
  auto p = dynamic_cast<const Quantize*>(&o);
  return p && p->group_size_ == group_size_ && p->bits_ == bits_ && p->mode_ == mode_ && p->has_global_ == has_global_;
}
bool Dequantize::is_equivalent(const Primitive& o) const {
  auto p = dynamic_cast<const Dequantize*>(&o);
  return p && p->group_size_ == group_size_ && p->bits_ == bits_ && p->mode_ == mode_ && p->has_global_ == has_global_ &&
         p->out_ == out_;
}
bool QuantizedMatmul::is_equivalent(const Primitive& o) const {
  auto p = dynamic_cast<const QuantizedMatmul*>(&o);
  return p && p->group_size_ == group_size_ && p->bits_ == bits_ && p->mode_ == mode_ && p->transpose_ == transpose_;
}

}  // namespace ember

namespace ember::cpu {

namespace {
std::atomic<int>& qmm_int8_setting() {
  static std::atomic<int> v{[] {
    const char* e = std::getenv("EMBER_QMM_INT8");
    if (e && e[0] >= '0' && e[0] <= '4' && e[1] == 0) return e[0] - '0';
    return 4;
  }()};
  return v;
}
}  // namespace

int set_qmm_int8(int level) {
  if (level < 0 || level > 4)
    throw std::invalid_argument("[set_qmm_int8] The setting must be 0 (float), 1 (int8), 2 (int8, VNNI), 3 "
                                "(int8, VNNI and AMX tiles) or 4 (3, with bfloat16 AMX tiles for prefill), got " +
                                std::to_string(level) + ".");
  return qmm_int8_setting().exchange(level);
}
int qmm_int8() { return qmm_int8_setting().load(); }

}  // namespace ember::cpu
