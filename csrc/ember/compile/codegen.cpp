// The code generator of compile's fusion: C++ source for a fused group.
//
// A kernel computes one run of n elements (the loop engine, loops.h, splits
// the arrays into runs and the runs over the threads):
//
//   extern "C" void ember_fused(char* const* p, const int64_t* s, int64_t n)
//
// p: the outputs' then the inputs' first elements, s: their strides in
// elements (0 for a broadcast input). The run goes in blocks of kBlock
// elements: inputs with stride 1 are read in place, others gathered into a
// block buffer (a stride-0 input filled once; the one-loop form reads an
// input of one element, FusedProgram::in_scalar, once into a register);
// each step is one loop over the block into a block buffer of its own
// (buffers are reused once a step's value is dead), which the compiler
// vectorizes; the outputs are stored last,
// so an output may share its buffer with an input (donation). Each op is
// computed as its eager kernel computes it (backend/cpu/functors.h): float32
// transcendental math through simd_math.h (its text is embedded in the
// generated source, compiled for the same ISA level), float64 through libm;
// float32 sin/cos/tan redo the lanes beyond simd_math's accurate bound with
// its exact scalar path, as unary.cpp's loop does.
#include <sstream>
#include <string>
#include <type_traits>
#include <typeindex>
#include <unordered_map>

#include "ember/compile/fuse.h"
#include "ember/primitives/elementwise.h"

namespace ember::compile {

namespace {

// dtype masks: which input dtypes an op's generated code covers
// (float16 and bfloat16 go with float32: computed in float, each step's
// value rounded to its type, as the eager kernels do)
constexpr int kB = 1, kF = 2, kD = 4, kH = 8, kFD = kF | kD | kH, kAll = kB | kF | kD | kH;

int dtype_bit(Dtype t) {
  switch (t) {
    case Dtype::bool_: return kB;
    case Dtype::float32: return kF;
    case Dtype::float64: return kD;
    case Dtype::float16:
    case Dtype::bfloat16: return kH;
    default: return 0;
  }
}
bool is_half(Dtype t) { return t == Dtype::float16 || t == Dtype::bfloat16; }
// the type a value is computed in
const char* ctype(Dtype t) {
  switch (t) {
    case Dtype::bool_: return "bool";
    case Dtype::float64: return "double";
    default: return "float";
  }
}
// the type it is stored as
const char* mtype(Dtype t) {
  return t == Dtype::float16 || t == Dtype::bfloat16 ? "uint16_t" : ctype(t);
}
// a stored value read as its compute type, a computed value rounded to its
// dtype (kept in the compute type), a computed value as stored
std::string load_as(Dtype t, const std::string& e) {
  return t == Dtype::float16 ? "e_h2f(" + e + ")" : t == Dtype::bfloat16 ? "e_bf2f(" + e + ")" : e;
}
std::string round_to(Dtype t, const std::string& e) {
  return t == Dtype::float16 ? "e_rf16(" + e + ")" : t == Dtype::bfloat16 ? "e_rbf16(" + e + ")" : e;
}
std::string store_as(Dtype t, const std::string& e) {
  return t == Dtype::float16 ? "e_f2h(" + e + ")" : t == Dtype::bfloat16 ? "e_f2bf(" + e + ")" : e;
}

// Per op tag: the input dtypes covered (0: none) and whether float32 needs
// the far-lane fix-up (sin, cos, tan).
template <class Op>
struct Gen {
  static constexpr int in = 0;
  static constexpr bool far = false;
};
#define EMBER_GEN(OP, MASK, FAR)           \
  template <>                              \
  struct Gen<op::OP> {                     \
    static constexpr int in = MASK;        \
    static constexpr bool far = FAR;       \
  };
#define EMBER_GEN_FD(OP) EMBER_GEN(OP, kFD, false)
// unary
EMBER_GEN_FD(Abs) EMBER_GEN_FD(Negative) EMBER_GEN_FD(Sign) EMBER_GEN_FD(Sqrt) EMBER_GEN_FD(Rsqrt)
EMBER_GEN_FD(Square) EMBER_GEN_FD(Exp) EMBER_GEN_FD(Expm1) EMBER_GEN_FD(Log) EMBER_GEN_FD(Log2)
EMBER_GEN_FD(Log10) EMBER_GEN_FD(Log1p) EMBER_GEN(Sin, kFD, true) EMBER_GEN(Cos, kFD, true)
EMBER_GEN(Tan, kFD, true) EMBER_GEN_FD(Sinh) EMBER_GEN_FD(Cosh) EMBER_GEN_FD(Tanh) EMBER_GEN_FD(ArcSin)
EMBER_GEN_FD(ArcCos) EMBER_GEN_FD(ArcTan) EMBER_GEN_FD(ArcSinh) EMBER_GEN_FD(ArcCosh) EMBER_GEN_FD(ArcTanh)
EMBER_GEN_FD(Sigmoid) EMBER_GEN_FD(Erf) EMBER_GEN(ErfInv, kF | kH, false) EMBER_GEN_FD(Floor) EMBER_GEN_FD(Ceil)
EMBER_GEN_FD(Round) EMBER_GEN(LogicalNot, kAll, false) EMBER_GEN(BitwiseInvert, kB, false)
EMBER_GEN_FD(IsNaN) EMBER_GEN_FD(IsInf) EMBER_GEN_FD(IsPosInf) EMBER_GEN_FD(IsNegInf)
// binary
EMBER_GEN_FD(Add) EMBER_GEN_FD(Subtract) EMBER_GEN_FD(Multiply) EMBER_GEN_FD(Divide) EMBER_GEN_FD(Remainder)
EMBER_GEN_FD(FloorDivide) EMBER_GEN_FD(Power) EMBER_GEN_FD(Maximum) EMBER_GEN_FD(Minimum)
EMBER_GEN(Equal, kAll, false) EMBER_GEN(NotEqual, kAll, false) EMBER_GEN(Less, kAll, false)
EMBER_GEN(LessEqual, kAll, false) EMBER_GEN(Greater, kAll, false) EMBER_GEN(GreaterEqual, kAll, false)
EMBER_GEN(LogicalAnd, kAll, false) EMBER_GEN(LogicalOr, kAll, false) EMBER_GEN(BitwiseAnd, kB, false)
EMBER_GEN(BitwiseOr, kB, false) EMBER_GEN(BitwiseXor, kB, false) EMBER_GEN_FD(ArcTan2) EMBER_GEN_FD(LogAddExp)
EMBER_GEN(NaNEqual, kAll, false)
#undef EMBER_GEN_FD
#undef EMBER_GEN

// Ops computed by a few vector instructions (no call of a math function):
// a row reduction over them accumulates as it computes (see row_kernel),
// which GCC vectorizes across the lanes.
template <class Op>
struct Simple : std::false_type {};
#define EMBER_SIMPLE(OP) \
  template <>            \
  struct Simple<op::OP> : std::true_type {};
EMBER_SIMPLE(Abs) EMBER_SIMPLE(Negative) EMBER_SIMPLE(Sqrt) EMBER_SIMPLE(Rsqrt) EMBER_SIMPLE(Square)
EMBER_SIMPLE(Add) EMBER_SIMPLE(Subtract) EMBER_SIMPLE(Multiply) EMBER_SIMPLE(Divide) EMBER_SIMPLE(Maximum)
EMBER_SIMPLE(Minimum) EMBER_SIMPLE(Equal) EMBER_SIMPLE(NotEqual) EMBER_SIMPLE(Less) EMBER_SIMPLE(LessEqual)
EMBER_SIMPLE(Greater) EMBER_SIMPLE(GreaterEqual)
#undef EMBER_SIMPLE

enum class Kind { Unary, Binary, Select, AsType };
struct OpGen {
  const char* name;
  Kind kind;
  int in_mask;
  bool far;
  bool simple;  // Simple<Op> (Select and AsType too)
};

const OpGen* op_gen(const Primitive& p) {
  static const std::unordered_map<std::type_index, OpGen> table = [] {
    std::unordered_map<std::type_index, OpGen> t;
#define EMBER_U(N, OUT) t.emplace(typeid(Unary<op::N>), OpGen{#N, Kind::Unary, Gen<op::N>::in, Gen<op::N>::far, \
                                                                 Simple<op::N>::value});
#define EMBER_BI(N, OUT) t.emplace(typeid(Binary<op::N>), OpGen{#N, Kind::Binary, Gen<op::N>::in, false, \
                                                                   Simple<op::N>::value});
    EMBER_UNARY_OPS(EMBER_U)
    EMBER_BINARY_OPS(EMBER_BI)
#undef EMBER_U
#undef EMBER_BI
    t.emplace(typeid(Select), OpGen{"Select", Kind::Select, kAll, false, true});
    t.emplace(typeid(AsType), OpGen{"AsType", Kind::AsType, kAll, false, true});
    return t;
  }();
  auto it = table.find(typeid(p));
  return it == table.end() ? nullptr : &it->second;
}

}  // namespace

bool fusable(const Primitive& p, const std::vector<Dtype>& in, Dtype out) {
  const OpGen* g = op_gen(p);
  if (!g || !dtype_bit(out) || in.empty()) return false;
  switch (g->kind) {
    case Kind::Unary:
    case Kind::Binary:
      for (Dtype t : in) {
        if (t != in[0] || !(dtype_bit(t) & g->in_mask)) return false;
      }
      return in.size() == (g->kind == Kind::Unary ? 1u : 2u);
    case Kind::Select:
      return in.size() == 3 && in[0] == Dtype::bool_ && in[1] == out && in[2] == out;
    case Kind::AsType:
      return in.size() == 1 && dtype_bit(in[0]);
  }
  return false;
}

// The functions every kernel calls, one per op, computing as functors.h does
// for the compute types bool, float and double (after simd_math.h).
namespace {
const char* kLoopPrelude = R"EMBERSRC(
#include <cstdint>
#include <cstring>
#include <type_traits>
namespace {
using f32 = float;
#define EM(N, S, D)                                                   \
  [[maybe_unused]] inline float e_##N(float x) { return ember::simd::S(x); } \
  [[maybe_unused]] inline double e_##N(double x) { return D(x); }
EM(Exp, exp, std::exp) EM(Expm1, expm1, std::expm1) EM(Log, log, std::log) EM(Log1p, log1p, std::log1p)
EM(Log2, log2, std::log2) EM(Log10, log10, std::log10) EM(Sinh, sinh, std::sinh) EM(Cosh, cosh, std::cosh)
EM(Tanh, tanh, std::tanh) EM(ArcSin, asin, std::asin) EM(ArcCos, acos, std::acos) EM(ArcTan, atan, std::atan)
EM(ArcSinh, asinh, std::asinh) EM(ArcCosh, acosh, std::acosh) EM(ArcTanh, atanh, std::atanh)
EM(Erf, erf, std::erf) EM(Sin, sin_near, std::sin) EM(Cos, cos_near, std::cos) EM(Tan, tan_near, std::tan)
#undef EM
#define F1 template <class T> [[maybe_unused]] inline
#define F2 template <class T> [[maybe_unused]] inline
[[maybe_unused]] inline float e_Sin_far(float x) { return ember::simd::sin_far(x); }
[[maybe_unused]] inline float e_Cos_far(float x) { return ember::simd::cos_far(x); }
[[maybe_unused]] inline float e_Tan_far(float x) { return ember::simd::tan_far(x); }
[[maybe_unused]] inline float e_ErfInv(float x) { return ember::simd::erfinv(x); }
[[maybe_unused]] inline float e_Sigmoid(float x) { return ember::simd::sigmoid(x); }
[[maybe_unused]] inline double e_Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
F1 T e_Abs(T x) { return std::fabs(x); }
F1 T e_Negative(T x) { return -x; }
F1 T e_Sign(T x) { return static_cast<T>((x > 0) - (x < 0)); }
F1 T e_Sqrt(T x) { return std::sqrt(x); }
F1 T e_Rsqrt(T x) { return T(1) / std::sqrt(x); }
F1 T e_Square(T x) { return x * x; }
F1 T e_Floor(T x) { return std::floor(x); }
F1 T e_Ceil(T x) { return std::ceil(x); }
F1 T e_Round(T x) { return std::nearbyint(x); }
F1 bool e_LogicalNot(T x) { return !(x != T(0)); }
[[maybe_unused]] inline bool e_BitwiseInvert(bool x) { return !x; }
F1 bool e_IsNaN(T x) { return x != x; }
F1 bool e_IsInf(T x) { return std::fabs(x) == std::numeric_limits<T>::infinity(); }
F1 bool e_IsPosInf(T x) { return x == T(std::numeric_limits<float>::infinity()); }
F1 bool e_IsNegInf(T x) { return x == T(-std::numeric_limits<float>::infinity()); }
F2 T e_Add(T a, T b) { return a + b; }
F2 T e_Subtract(T a, T b) { return a - b; }
F2 T e_Multiply(T a, T b) { return a * b; }
F2 T e_Divide(T a, T b) { return a / b; }
F2 T e_Remainder(T a, T b) {
  T r = std::fmod(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
F2 T e_FloorDivide(T a, T b) { return std::floor(a / b); }
F2 T e_Power(T a, T b) { return std::pow(a, b); }
F2 T e_Maximum(T a, T b) { return (a > b || a != a) ? a : b; }
F2 T e_Minimum(T a, T b) { return (a < b || a != a) ? a : b; }
F2 bool e_Equal(T a, T b) { return a == b; }
F2 bool e_NotEqual(T a, T b) { return a != b; }
F2 bool e_Less(T a, T b) { return a < b; }
F2 bool e_LessEqual(T a, T b) { return !(b < a); }
F2 bool e_Greater(T a, T b) { return b < a; }
F2 bool e_GreaterEqual(T a, T b) { return !(a < b); }
F2 bool e_LogicalAnd(T a, T b) { return (a != T(0)) && (b != T(0)); }
F2 bool e_LogicalOr(T a, T b) { return (a != T(0)) || (b != T(0)); }
[[maybe_unused]] inline bool e_BitwiseAnd(bool a, bool b) { return a & b; }
[[maybe_unused]] inline bool e_BitwiseOr(bool a, bool b) { return a | b; }
[[maybe_unused]] inline bool e_BitwiseXor(bool a, bool b) { return a ^ b; }
F2 T e_ArcTan2(T a, T b) { return std::atan2(a, b); }
F2 T e_LogAddExp(T a, T b) {
  T mx = a > b ? a : b, mn = a > b ? b : a;
  if (a != a || b != b) return a + b;
  if (mn == -std::numeric_limits<T>::infinity() || mx == std::numeric_limits<T>::infinity()) return mx;
  return mx + e_Log1p(e_Exp(mn - mx));
}
F2 bool e_NaNEqual(T a, T b) { return a == b || (a != a && b != b); }
#undef F1
#undef F2
[[maybe_unused]] inline float e_bf2f(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
[[maybe_unused]] inline uint16_t e_f2bf(float f) {  // round to nearest even, NaN kept quiet
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
// float16 as Ember's float16_t converts it (half_bits.h, whose text comes
// before this prelude; a double rounded once)
template <class T> [[maybe_unused]] inline uint16_t e_f2h(T x) {
  if constexpr (std::is_same_v<T, double>) return ember::half_bits::from_double(x);
  else return ember::half_bits::from_float(static_cast<float>(x));
}
[[maybe_unused]] inline float e_h2f(uint16_t h) { return ember::half_bits::to_float16_value(h); }
template <class T> [[maybe_unused]] inline float e_rf16(T x) { return e_h2f(e_f2h(x)); }
// x rounded to bfloat16 and kept as a float: e_bf2f(e_f2bf(x)) computed in
// 32-bit lanes (narrowing each step's lanes to 16 bits and widening them
// back cost a fused bfloat16 silu * up 19% of its time)
template <class T> [[maybe_unused]] inline float e_rbf16(T x) {
  const float f = static_cast<float>(x);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u, q = (u | 0x400000u) & 0xffff0000u;
  u = (u & 0x7fffffffu) > 0x7f800000u ? q : r;
  float o;
  std::memcpy(&o, &u, 4);
  return o;
}
[[maybe_unused]] inline uint32_t e_mag(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u & 0x7fffffffu;
}
// The block loops: one instance per (op, dtype) however often a kernel uses
// it, so compile time follows the distinct ops, not the graph's size.
#define K(N) struct k_##N { template <class... T> auto operator()(T... x) const { return e_##N(x...); } };
K(Exp) K(Expm1) K(Log) K(Log1p) K(Log2) K(Log10) K(Sinh) K(Cosh) K(Tanh) K(ArcSin) K(ArcCos) K(ArcTan)
K(ArcSinh) K(ArcCosh) K(ArcTanh) K(Erf) K(Sin) K(Cos) K(Tan) K(Sin_far) K(Cos_far) K(Tan_far) K(ErfInv)
K(Sigmoid) K(Abs) K(Negative) K(Sign) K(Sqrt) K(Rsqrt) K(Square) K(Floor) K(Ceil) K(Round) K(LogicalNot)
K(BitwiseInvert) K(IsNaN) K(IsInf) K(IsPosInf) K(IsNegInf) K(Add) K(Subtract) K(Multiply) K(Divide)
K(Remainder) K(FloorDivide) K(Power) K(Maximum) K(Minimum) K(Equal) K(NotEqual) K(Less) K(LessEqual)
K(Greater) K(GreaterEqual) K(LogicalAnd) K(LogicalOr) K(BitwiseAnd) K(BitwiseOr) K(BitwiseXor) K(ArcTan2)
K(LogAddExp) K(NaNEqual)
#undef K
#define NOINL __attribute__((noinline))
template <class T, class O, class F>
NOINL void u_loop(const T* __restrict a, O* __restrict o, int64_t m, F f) {
  for (int64_t j = 0; j < m; ++j) o[j] = f(a[j]);
}
template <class T, class O, class F>
NOINL void b_loop(const T* __restrict a, const T* __restrict b, O* __restrict o, int64_t m, F f) {
  for (int64_t j = 0; j < m; ++j) o[j] = f(a[j], b[j]);
}
template <class T>
NOINL void s_loop(const bool* __restrict c, const T* __restrict x, const T* __restrict y, T* __restrict o,
                  int64_t m) {
  for (int64_t j = 0; j < m; ++j) o[j] = c[j] ? x[j] : y[j];
}
template <class T, class O>
NOINL void c_loop(const T* __restrict a, O* __restrict o, int64_t m) {
  for (int64_t j = 0; j < m; ++j) {
    if constexpr (std::is_same_v<O, bool>) o[j] = a[j] != T(0);
    else o[j] = static_cast<O>(a[j]);
  }
}
// float32 sin/cos/tan: the vector path, then the lanes beyond its bound again
template <class F, class Far>
NOINL void far_loop(const float* __restrict a, float* __restrict o, int64_t m, F f, Far far) {
  uint32_t top = 0;
  for (int64_t j = 0; j < m; ++j) {
    o[j] = f(a[j]);
    uint32_t u = e_mag(a[j]);
    top = u > top ? u : top;
  }
  const float bound = ember::simd::kSinCosAccurateBound;
  if (top <= e_mag(bound)) return;
  for (int64_t j = 0; j < m; ++j) {
    if (std::fabs(a[j]) > bound) o[j] = far(a[j]);
  }
}
template <class T>
NOINL void gather(const T* __restrict i, int64_t s, T* __restrict x, int64_t m) {
  for (int64_t j = 0; j < m; ++j) x[j] = i[j * s];
}
template <class T>
NOINL void scatter(const T* __restrict t, T* __restrict o, int64_t s, int64_t m) {
  if (s == 1) std::memcpy(o, t, m * sizeof(T));
  else for (int64_t j = 0; j < m; ++j) o[j * s] = t[j];
}
}  // namespace
)EMBERSRC";

// The row programs' reduction helpers (row_kernel below).
const char* kRowPrelude = R"EMBERSRC(
namespace {
template <class T, int L, class Ap, class Leaf>
T r_pairwise(int64_t off, int64_t n, Ap ap, Leaf& leaf) {
  if (n <= 4096) return leaf(off, n);
  const int64_t h = (n / 2 + L - 1) / L * L;
  const T a = r_pairwise<T, L>(off, h, ap, leaf);
  return ap(a, r_pairwise<T, L>(off + h, n - h, ap, leaf));
}
template <class T, int L, class Ap>
T r_tree(T* acc, Ap ap) {  // lane j with lane j + w, w = L/2, ..., 1
  for (int w = L / 2; w >= 1; w /= 2) {
    for (int j = 0; j < w; ++j) acc[j] = ap(acc[j], acc[j + w]);
  }
  return acc[0];
}
template <class T, int L, class Ap>
T r_lanes(const T* __restrict buf, int64_t len, T id, Ap ap) {
  T acc[L];
  for (int l = 0; l < L; ++l) acc[l] = id;
  int64_t i = 0;
  for (; i + L <= len; i += L) {
    for (int l = 0; l < L; ++l) acc[l] = ap(acc[l], buf[i + l]);
  }
  for (int l = 0; i + l < len; ++l) acc[l] = ap(acc[l], buf[i + l]);
  return r_tree<T, L>(acc, ap);
}
template <class T>
T r_canon(T v) { return v != v ? std::numeric_limits<T>::quiet_NaN() : v; }
struct r_sum { template <class T> T operator()(T a, T b) const { return a + b; } };
struct r_max { template <class T> T operator()(T a, T b) const { return ((a > b) | (a != a)) ? a : b; } };
struct r_min { template <class T> T operator()(T a, T b) const { return ((a < b) | (a != a)) ? a : b; } };
}  // namespace
)EMBERSRC";
}  // namespace

const std::string& kernel_prelude() {
  static const std::string text = std::string(kLoopPrelude) + kRowPrelude;
  return text;
}

namespace {

// A short chain without float32 sin/cos/tan: one loop over the block
// computing every step per element in registers (the values never leave
// them), outputs written in place when dense.
std::string fused_loop_kernel(const FusedProgram& prog, const std::vector<const OpGen*>& gens, int block) {
  const int nin = static_cast<int>(prog.in_dtypes.size());
  const int nout = static_cast<int>(prog.outputs.size());
  const int nsteps = static_cast<int>(prog.steps.size());
  std::ostringstream src;
  src << "extern \"C\" __attribute__((visibility(\"default\"))) void ember_fused(char* const* p, const int64_t* s, "
         "int64_t n) {\n  constexpr int64_t B = "
      << block << ";\n";
  for (int o = 0; o < nout; ++o) {
    const char* t = mtype(prog.steps[prog.outputs[o]].dtype);
    src << "  " << t << "* o" << o << " = reinterpret_cast<" << t << "*>(p[" << o << "]); const int64_t so" << o
        << " = s[" << o << "];\n  alignas(64) " << t << " u" << o << "[B];\n";
  }
  auto scalar = [&](int i) { return static_cast<bool>(prog.in_scalar[i]); };
  for (int i = 0; i < nin; ++i) {
    const char* t = mtype(prog.in_dtypes[i]);
    src << "  const " << t << "* i" << i << " = reinterpret_cast<const " << t << "*>(p[" << nout + i << "]);";
    if (scalar(i)) {
      // one value: read once, kept in a register (a block buffer of copies
      // would cost a load per element)
      src << " const " << ctype(prog.in_dtypes[i]) << " c" << i << " = "
          << load_as(prog.in_dtypes[i], "i" + std::to_string(i) + "[0]") << ";\n";
      continue;
    }
    src << " const int64_t si" << i << " = s[" << nout + i << "];\n  alignas(64) " << t << " x" << i
        << "[B];\n  if (si" << i << " == 0) for (int64_t j = 0; j < B; ++j) x" << i << "[j] = i" << i << "[0];\n";
  }
  src << "  for (int64_t b = 0; b < n; b += B) {\n    const int64_t m = n - b < B ? n - b : B;\n";
  for (int i = 0; i < nin; ++i) {
    if (scalar(i)) continue;
    const char* t = mtype(prog.in_dtypes[i]);
    src << "    const " << t << "* a" << i << " = x" << i << ";\n    if (si" << i << " == 1) a" << i << " = i" << i
        << " + b; else if (si" << i << " != 0) gather(i" << i << " + b * si" << i << ", si" << i << ", x" << i
        << ", m);\n";
  }
  for (int o = 0; o < nout; ++o) {
    const char* t = mtype(prog.steps[prog.outputs[o]].dtype);
    src << "    " << t << "* d" << o << " = so" << o << " == 1 ? o" << o << " + b : u" << o << ";\n";
  }
  src << "#pragma GCC ivdep\n    for (int64_t j = 0; j < m; ++j) {\n";
  for (int k = 0; k < nsteps; ++k) {
    const auto& st = prog.steps[k];
    auto arg = [&](int i) {
      int a = st.args[i];
      if (a >= 0) return "v" + std::to_string(a);
      if (scalar(-a - 1)) return "c" + std::to_string(-a - 1);
      return load_as(prog.in_dtypes[-a - 1], "a" + std::to_string(-a - 1) + "[j]");
    };
    const OpGen& g = *gens[k];
    std::string expr;
    switch (g.kind) {
      case Kind::Unary: expr = std::string("e_") + g.name + "(" + arg(0) + ")"; break;
      case Kind::Binary: expr = std::string("e_") + g.name + "(" + arg(0) + ", " + arg(1) + ")"; break;
      case Kind::Select: expr = "(" + arg(0) + " ? " + arg(1) + " : " + arg(2) + ")"; break;
      case Kind::AsType:
        expr = st.dtype == Dtype::bool_ ? "(" + arg(0) + " != 0)"
               : is_half(st.dtype)      ? arg(0)  // rounded from its own type below
                                        : std::string("static_cast<") + ctype(st.dtype) + ">(" + arg(0) + ")";
        break;
    }
    src << "      const " << ctype(st.dtype) << " v" << k << " = " << round_to(st.dtype, expr) << ";\n";
  }
  for (int o = 0; o < nout; ++o) {
    src << "      d" << o << "[j] = " << store_as(prog.steps[prog.outputs[o]].dtype, "v" + std::to_string(prog.outputs[o]))
        << ";\n";
  }
  src << "    }\n";
  for (int o = 0; o < nout; ++o) {
    src << "    if (so" << o << " != 1) scatter(u" << o << ", o" << o << " + b * so" << o << ", so" << o << ", m);\n";
  }
  src << "  }\n}\n";
  return src.str();
}

}  // namespace

static std::string elementwise_kernel(const FusedProgram& prog) {
  constexpr int kBlock = 512;
  // longer chains: one loop per step (one instance per op and dtype), which
  // bounds the compile time by the distinct ops
  constexpr int kFusedLoopSteps = 24;
  const int nin = static_cast<int>(prog.in_dtypes.size());
  const int nout = static_cast<int>(prog.outputs.size());
  const int nsteps = static_cast<int>(prog.steps.size());
  std::vector<const OpGen*> gens(nsteps);
  for (int k = 0; k < nsteps; ++k) {
    gens[k] = op_gen(*prog.steps[k].prim);
    if (!gens[k]) return {};
  }
  bool far = false;
  for (int k = 0; k < nsteps; ++k) {
    far = far || (gens[k]->far && prog.in_dtypes.size() && [&] {
            int a = prog.steps[k].args[0];
            const Dtype t = a >= 0 ? prog.steps[a].dtype : prog.in_dtypes[-a - 1];
            return t == Dtype::float32 || is_half(t);
          }());
  }
  if (nsteps <= kFusedLoopSteps && !far) return fused_loop_kernel(prog, gens, kBlock);
  // (the one-loop-per-step form computes float32, float64 and bool only)
  for (Dtype t : prog.in_dtypes) {
    if (is_half(t)) return {};
  }
  for (const auto& st : prog.steps) {
    if (is_half(st.dtype)) return {};
  }
  auto arg_dtype = [&](int a) { return a >= 0 ? prog.steps[a].dtype : prog.in_dtypes[-a - 1]; };
  // block buffers: a step's value lives until its last use (outputs: to the end)
  std::vector<int> last(nsteps, -1);
  for (int k = 0; k < nsteps; ++k) {
    for (int a : prog.steps[k].args) {
      if (a >= 0) last[a] = k;
    }
  }
  for (int o : prog.outputs) last[o] = nsteps;
  std::vector<int> buf(nsteps);
  std::vector<Dtype> buf_dtype;
  std::vector<std::vector<int>> free_bufs(3);  // by dtype bit index
  auto bit_index = [](Dtype t) { return t == Dtype::bool_ ? 0 : t == Dtype::float32 ? 1 : 2; };
  std::ostringstream body;
  for (int k = 0; k < nsteps; ++k) {
    const auto& st = prog.steps[k];
    // free the buffers of arguments whose last use is this step (after reading: a
    // step may write the buffer it reads only elementwise, which is safe)
    auto& fl = free_bufs[bit_index(st.dtype)];
    if (!fl.empty()) {
      buf[k] = fl.back();
      fl.pop_back();
    } else {
      buf[k] = static_cast<int>(buf_dtype.size());
      buf_dtype.push_back(st.dtype);
    }
    auto arg = [&](int i) {
      int a = st.args[i];
      return a >= 0 ? "t" + std::to_string(buf[a]) : "a" + std::to_string(-a - 1);
    };
    const OpGen& g = *gens[k];
    const std::string out = "t" + std::to_string(buf[k]);
    body << "    ";
    switch (g.kind) {
      case Kind::Unary:
        if (g.far && arg_dtype(st.args[0]) == Dtype::float32) {
          body << "far_loop(" << arg(0) << ", " << out << ", m, k_" << g.name << "{}, k_" << g.name << "_far{});\n";
        } else {
          body << "u_loop(" << arg(0) << ", " << out << ", m, k_" << g.name << "{});\n";
        }
        break;
      case Kind::Binary:
        body << "b_loop(" << arg(0) << ", " << arg(1) << ", " << out << ", m, k_" << g.name << "{});\n";
        break;
      case Kind::Select:
        body << "s_loop(" << arg(0) << ", " << arg(1) << ", " << arg(2) << ", " << out << ", m);\n";
        break;
      case Kind::AsType: body << "c_loop(" << arg(0) << ", " << out << ", m);\n"; break;
    }
    for (int a : st.args) {
      if (a >= 0 && last[a] == k) {
        free_bufs[bit_index(prog.steps[a].dtype)].push_back(buf[a]);
        last[a] = -2;  // freed once even if used twice by this step
      }
    }
  }
  std::ostringstream src;
  src << "extern \"C\" __attribute__((visibility(\"default\"))) void ember_fused(char* const* p, const int64_t* s, "
         "int64_t n) {\n";
  src << "  constexpr int64_t B = " << kBlock << ";\n";
  for (int o = 0; o < nout; ++o) {
    const char* t = ctype(prog.steps[prog.outputs[o]].dtype);
    src << "  " << t << "* o" << o << " = reinterpret_cast<" << t << "*>(p[" << o << "]); const int64_t so" << o
        << " = s[" << o << "];\n";
  }
  for (int i = 0; i < nin; ++i) {
    const char* t = ctype(prog.in_dtypes[i]);
    src << "  const " << t << "* i" << i << " = reinterpret_cast<const " << t << "*>(p[" << nout + i
        << "]); const int64_t si" << i << " = s[" << nout + i << "];\n";
    src << "  alignas(64) " << t << " x" << i << "[B];\n";
    src << "  if (si" << i << " == 0) for (int64_t j = 0; j < B; ++j) x" << i << "[j] = i" << i << "[0];\n";
  }
  for (size_t b = 0; b < buf_dtype.size(); ++b) src << "  alignas(64) " << ctype(buf_dtype[b]) << " t" << b << "[B];\n";
  src << "  for (int64_t b = 0; b < n; b += B) {\n    const int64_t m = n - b < B ? n - b : B;\n";
  for (int i = 0; i < nin; ++i) {
    const char* t = ctype(prog.in_dtypes[i]);
    src << "    const " << t << "* a" << i << " = x" << i << ";\n    if (si" << i << " == 1) a" << i << " = i" << i
        << " + b; else if (si" << i << " != 0) gather(i" << i << " + b * si" << i << ", si" << i << ", x" << i
        << ", m);\n";
  }
  src << body.str();
  for (int o = 0; o < nout; ++o) {
    const std::string t = "t" + std::to_string(buf[prog.outputs[o]]);
    src << "    scatter(" << t << ", o" << o << " + b * so" << o << ", so" << o << ", m);\n";
  }
  src << "  }\n}\n";
  return src.str();
}

// A row program (fuse.h): one row per call. Each reduction is a pass over
// the row in the eager kernel's order of evaluation (backend/cpu/reduce.cpp):
// pieces of at most 4096 elements at the nodes of the pairwise split, in each
// piece element i into lane i mod L (L = 32 for 4-byte values, 16 for 8-byte
// ones), the lanes combined as a tree (lane j with lane j + w, w = L/2, ...,
// 1); a NaN result is the canonical quiet NaN. A pass computes, block by
// block, the full steps its reduction needs (from the inputs and the row
// scalars known by then, per element in registers) into the piece's buffer;
// row scalars are computed once, where the step order puts them; a last pass
// computes and stores the full outputs.
namespace {

std::string row_kernel(const FusedProgram& prog) {
  const int nin = static_cast<int>(prog.in_dtypes.size());
  const int nout = static_cast<int>(prog.outputs.size());
  const int nsteps = static_cast<int>(prog.steps.size());
  std::vector<const OpGen*> gens(nsteps, nullptr);
  auto arg_dtype = [&](int a) { return a >= 0 ? prog.steps[a].dtype : prog.in_dtypes[-a - 1]; };
  for (int k = 0; k < nsteps; ++k) {
    if (prog.step_reduce[k] >= 0) continue;
    gens[k] = op_gen(*prog.steps[k].prim);
    if (!gens[k]) return {};
  }
  // float32 sin/cos/tan: the vector path, its arguments' largest magnitude
  // kept; a block holding one beyond the accurate bound is computed again
  // with the exact scalar path on those lanes (as unary.cpp's loop does)
  auto far = [&](int k) {
    return gens[k] && gens[k]->far && ctype(arg_dtype(prog.steps[k].args[0])) == std::string("float");
  };
  auto is_row = [&](int a) { return a >= 0 ? static_cast<bool>(prog.row_scalar[a]) : static_cast<bool>(prog.in_row_bcast[-a - 1]); };
  auto ref = [&](int a) {
    if (a >= 0) return (prog.row_scalar[a] ? "r" : "v") + std::to_string(a);
    const int i = -a - 1;
    return prog.in_row_bcast[i] ? "c" + std::to_string(i) : load_as(prog.in_dtypes[i], "a" + std::to_string(i) + "[j]");
  };
  auto expr = [&](int k, bool exact) {
    const auto& st = prog.steps[k];
    const OpGen& g = *gens[k];
    auto arg = [&](int i) { return ref(st.args[i]); };
    switch (g.kind) {
      case Kind::Unary:
        if (exact && far(k)) {
          return "(std::fabs(" + arg(0) + ") > ember::simd::kSinCosAccurateBound ? e_" + g.name + "_far(" + arg(0) +
                 ") : e_" + g.name + "(" + arg(0) + "))";
        }
        return std::string("e_") + g.name + "(" + arg(0) + ")";
      case Kind::Binary: return std::string("e_") + g.name + "(" + arg(0) + ", " + arg(1) + ")";
      case Kind::Select: return "(" + arg(0) + " ? " + arg(1) + " : " + arg(2) + ")";
      case Kind::AsType:
        return st.dtype == Dtype::bool_ ? "(" + arg(0) + " != 0)"
               : is_half(st.dtype)      ? arg(0)  // rounded from its own type by value()
                                        : std::string("static_cast<") + ctype(st.dtype) + ">(" + arg(0) + ")";
    }
    return std::string();
  };
  auto value = [&](int k, bool exact) { return round_to(prog.steps[k].dtype, expr(k, exact)); };
  // The full steps that `targets` need (need) and the inputs they read
  // along the row (need_in).
  struct Needs {
    std::vector<bool> step, in;
    bool far = false;     // a float32 sin/cos/tan among them
    bool simple = true;   // only simple ops (OpGen::simple), no float16/bfloat16
  };
  auto needs = [&](const std::vector<int>& targets) {
    Needs r{std::vector<bool>(nsteps, false), std::vector<bool>(nin, false)};
    std::vector<int> stack(targets.begin(), targets.end());
    while (!stack.empty()) {
      int a = stack.back();
      stack.pop_back();
      if (a < 0) {
        if (!prog.in_row_bcast[-a - 1]) r.in[-a - 1] = true;
        continue;
      }
      if (prog.row_scalar[a] || r.step[a]) continue;
      r.step[a] = true;
      r.far = r.far || far(a);
      r.simple = r.simple && gens[a]->simple && !is_half(prog.steps[a].dtype);
      for (int b : prog.steps[a].args) stack.push_back(b);
    }
    return r;
  };
  // The head of a block loop over [lo, lo + len): m, its length, and the
  // pointers of the inputs read (in place when dense, else gathered).
  auto block_head = [&](const Needs& nd, const std::string& lo, const std::string& len, std::ostringstream& out) {
    out << "    for (int64_t b = " << lo << "; b < " << lo << " + " << len << "; b += B) {\n"
        << "      const int64_t m = " << lo << " + " << len << " - b < B ? " << lo << " + " << len << " - b : B;\n";
    for (int i = 0; i < nin; ++i) {
      if (!nd.in[i]) continue;
      const char* t = mtype(prog.in_dtypes[i]);
      out << "      const " << t << "* a" << i << " = x" << i << ";\n      if (si" << i << " == 1) a" << i << " = i"
          << i << " + b; else gather(i" << i << " + b * si" << i << ", si" << i << ", x" << i << ", m);\n";
    }
  };
  // The values of element j (the needed full steps, in registers).
  auto element = [&](const Needs& nd, bool exact, const std::string& indent, std::ostringstream& out) {
    for (int k = 0; k < nsteps; ++k) {
      if (!nd.step[k]) continue;
      out << indent << "const " << ctype(prog.steps[k].dtype) << " v" << k << " = " << value(k, exact) << ";\n";
      if (!exact && far(k)) {
        out << indent << "{ const uint32_t u = e_mag(" << ref(prog.steps[k].args[0]) << "); top = u > top ? u : top; }\n";
      }
    }
  };
  // One pass over [lo, lo + len) computing the full steps that `targets`
  // need, per element; `store` writes the targets' values at element j,
  // `after` ends each block. With a float32 sin/cos/tan, a block holding an
  // argument beyond the accurate bound is computed again exactly.
  auto pass = [&](const std::vector<int>& targets, const std::string& lo, const std::string& len,
                  const std::string& store, const std::string& after, std::ostringstream& out) {
    const Needs nd = needs(targets);
    block_head(nd, lo, len, out);
    auto loop = [&](bool exact) {
      out << "#pragma GCC ivdep\n      for (int64_t j = 0; j < m; ++j) {\n";
      element(nd, exact, "        ", out);
      out << store << "      }\n";
    };
    if (nd.far) out << "      uint32_t top = 0;\n";
    loop(false);
    if (nd.far) {
      out << "      if (top > e_mag(ember::simd::kSinCosAccurateBound)) {\n";
      loop(true);
      out << "      }\n";
    }
    out << after << "    }\n";
  };
  // A reduction's piece [off, off + len) accumulated as it is computed:
  // element i of the piece into lane (i - off) mod L, the lanes kept in
  // registers (blocks start at multiples of L from off), then the tree. For
  // sums over simple ops only: GCC vectorizes this form across the lanes
  // (straight-line code), which it does not do for the math functions'
  // branches nor for max/min's NaN test; those passes compute the piece into
  // a buffer with the vectorized element loop and reduce the buffer
  // (r_lanes), and a dense input is reduced in place.
  auto accumulate = [&](int a, int L, const char* t, const char* op, const std::string& id,
                        std::ostringstream& out) {
    const Needs nd = needs({a});
    out << "    " << t << " acc[" << L << "];\n    for (int l = 0; l < " << L << "; ++l) acc[l] = " << id << ";\n";
    block_head(nd, "off", "len", out);
    out << "      int64_t j0 = 0;\n      for (; j0 + " << L << " <= m; j0 += " << L << ") {\n#pragma GCC unroll "
        << L << "\n        for (int l = 0; l < " << L << "; ++l) {\n          const int64_t j = j0 + l;\n";
    element(nd, true, "          ", out);
    out << "          acc[l] = " << op << "(acc[l], " << ref(a) << ");\n        }\n      }\n"
        << "      for (int l = 0; j0 + l < m; ++l) {\n        const int64_t j = j0 + l;\n";
    element(nd, true, "        ", out);
    out << "        acc[l] = " << op << "(acc[l], " << ref(a) << ");\n      }\n    }\n"
        << "    return r_tree<" << t << ", " << L << ">(acc, " << op << ");\n";
  };
  std::ostringstream src;
  src << "extern \"C\" __attribute__((visibility(\"default\"))) void ember_fused(char* const* p, const int64_t* s, "
         "int64_t n) {\n  constexpr int64_t B = 512;\n";
  for (int i = 0; i < nin; ++i) {
    const char* t = mtype(prog.in_dtypes[i]);
    src << "  const " << t << "* i" << i << " = reinterpret_cast<const " << t << "*>(p[" << nout + i << "]);\n";
    if (prog.in_row_bcast[i]) {
      src << "  [[maybe_unused]] const " << ctype(prog.in_dtypes[i]) << " c" << i << " = "
          << load_as(prog.in_dtypes[i], "*i" + std::to_string(i)) << ";\n";
    } else {
      src << "  const int64_t si" << i << " = s[" << nout + i << "];\n  alignas(64) " << t << " x" << i << "[B];\n";
    }
  }
  for (int k = 0; k < nsteps; ++k) {
    const auto& st = prog.steps[k];
    const char* t = ctype(st.dtype);
    if (prog.step_reduce[k] >= 0) {
      const int a = st.args[0];
      const int L = size_of(st.dtype) <= 4 ? 32 : 16;
      const char* op = prog.step_reduce[k] == 0 ? "r_sum{}" : prog.step_reduce[k] == 1 ? "r_max{}" : "r_min{}";
      const std::string id = prog.step_reduce[k] == 0   ? std::string(t) + "(0)"
                             : prog.step_reduce[k] == 1 ? std::string("-std::numeric_limits<") + t + ">::infinity()"
                                                        : std::string("std::numeric_limits<") + t + ">::infinity()";
      src << "  " << t << " r" << k << ";\n  {\n    auto leaf = [&](int64_t off, int64_t len) -> " << t << " {\n";
      const Needs nd = needs({a});
      if (a < 0 && !is_row(a)) {  // an input: reduced in place when dense
        const std::string i = std::to_string(-a - 1);
        src << "    if (si" << i << " == 1) return r_lanes<" << t << ", " << L << ">(i" << i << " + off, len, " << id
            << ", " << op << ");\n    alignas(64) " << t << " rb[4096];\n    gather(i" << i << " + off * si" << i
            << ", si" << i << ", rb, len);\n    return r_lanes<" << t << ", " << L << ">(rb, len, " << id << ", " << op
            << ");\n";
      } else if (!is_row(a) && !nd.far && nd.simple && prog.step_reduce[k] == 0) {
        accumulate(a, L, t, op, id, src);
      } else {
        src << "    alignas(64) " << t << " rb[4096];\n";
        if (is_row(a)) {
          src << "    for (int64_t j = 0; j < len; ++j) rb[j] = " << ref(a) << ";\n";
        } else {
          pass({a}, "off", "len", "        rb[b - off + j] = " + ref(a) + ";\n", "", src);
        }
        src << "    return r_lanes<" << t << ", " << L << ">(rb, len, " << id << ", " << op << ");\n";
      }
      src << "    };\n    r" << k << " = r_canon(r_pairwise<" << t << ", " << L << ">(0, n, " << op << ", leaf));\n  }\n";
    } else if (prog.row_scalar[k]) {
      src << "  const " << t << " r" << k << " = " << value(k, true) << ";\n";
    }
  }
  // the outputs: row scalars stored once, full values by a last pass
  std::vector<int> full_targets;
  std::string store, after;
  for (int o = 0; o < nout; ++o) {
    const int k = prog.outputs[o];
    const Dtype dt = prog.steps[k].dtype;
    const char* t = mtype(dt);
    if (prog.row_scalar[k]) {
      src << "  *reinterpret_cast<" << t << "*>(p[" << o << "]) = " << store_as(dt, "r" + std::to_string(k)) << ";\n";
      continue;
    }
    full_targets.push_back(k);
    src << "  " << t << "* o" << o << " = reinterpret_cast<" << t << "*>(p[" << o << "]); const int64_t so" << o
        << " = s[" << o << "];\n  alignas(64) " << t << " u" << o << "[B];\n";
    store += "        (so" + std::to_string(o) + " == 1 ? o" + std::to_string(o) + " + b : u" + std::to_string(o) +
             ")[j] = " + store_as(dt, "v" + std::to_string(k)) + ";\n";
    after += "      if (so" + std::to_string(o) + " != 1) scatter(u" + std::to_string(o) + ", o" + std::to_string(o) +
             " + b * so" + std::to_string(o) + ", so" + std::to_string(o) + ", m);\n";
  }
  if (!full_targets.empty()) {
    src << "  {\n";
    pass(full_targets, "0", "n", store, after, src);
    src << "  }\n";
  }
  src << "}\n";
  return src.str();
}

}  // namespace

std::string generate_kernel(const FusedProgram& prog) {
  return prog.rows ? row_kernel(prog) : elementwise_kernel(prog);
}

}  // namespace ember::compile
