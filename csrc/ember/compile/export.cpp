// Export files of traced functions: the writer, the validating reader, and
// the codec table (one entry per primitive name: its parameters written
// from the primitive's accessors, and read back into a call of the public
// op that builds it). The format is described in export.h.
#include "ember/compile/export.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "ember/compile/compile.h"
#include "ember/compile/fuse.h"
#include "ember/ops.h"
#include "ember/ops/conv.h"
#include "ember/ops/fast.h"
#include "ember/ops/fft.h"
#include "ember/ops/lapack.h"
#include "ember/ops/quantized.h"
#include "ember/ops/sort.h"
#include "ember/primitives/conv.h"
#include "ember/primitives/elementwise.h"
#include "ember/primitives/fast.h"
#include "ember/primitives/fft.h"
#include "ember/primitives/indexing.h"
#include "ember/primitives/lapack.h"
#include "ember/primitives/linalg.h"
#include "ember/primitives/quantized.h"
#include "ember/primitives/random.h"
#include "ember/primitives/reduce.h"
#include "ember/primitives/shape.h"
#include "ember/primitives/sort.h"
#include "ember/primitives/transform.h"
#include "ember/transforms/transforms.h"
#include "ember/version.h"


namespace ember {

namespace compiler {

namespace {

constexpr char kMagic[8] = {'E', 'M', 'B', 'E', 'R', 'F', 'N', '\0'};
constexpr uint32_t kFormatVersion = 1;
constexpr uint32_t kMaxRank = 64;

[[noreturn]] void bad_file(const std::string& why) {
  throw std::invalid_argument("[import_function] Invalid export file: " + why);
}

uint32_t crc32(const unsigned char* p, size_t n) {
  static const auto table = [] {
    std::vector<uint32_t> t(256);
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

// Whether s is well-formed UTF-8 (strings of the file become Python str).
bool valid_utf8(const std::string& s) {
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3
                                      : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
    if (len == 0 || i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    const auto c1 = len > 1 ? static_cast<unsigned char>(s[i + 1]) : 0;
    // no overlong forms, no surrogates, nothing past U+10FFFF
    if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F)) {
      return false;
    }
    i += len;
  }
  return true;
}

// A name from the file fit for a message: printable ASCII, else escaped.
std::string printable(const std::string& s) {
  std::string out;
  for (char ch : s.substr(0, 64)) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7F) {
      out += ch;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

// ---- writing ----

class Writer {
 public:
  std::string buf;
  std::vector<ExportArg>* log = nullptr;  // the parameters as values (a codec's writer only)
  template <class T>
  void pod(T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    buf.append(b, sizeof(T));
  }
  void note(ExportArg a) {
    if (log) log->push_back(std::move(a));
  }
  void u8(uint8_t v) {
    pod(v);
    note({ExportArg::Int, v, 0, {}});
  }
  void u32(uint32_t v) { pod(v); }
  void i64(int64_t v) {
    pod(v);
    note({ExportArg::Int, v, 0, {}});
  }
  void f64(double v) {
    pod(v);
    note({ExportArg::Float, 0, v, {}});
  }
  void boolean(bool v) {
    pod<uint8_t>(v ? 1 : 0);
    note({ExportArg::Bool, v ? 1 : 0, 0, {}});
  }
  void count(size_t n) {
    if (n > 0xFFFFFFFFu) throw std::invalid_argument("[export_function] A count of the graph exceeds 2^32.");
    pod(static_cast<uint32_t>(n));
  }
  void str(const std::string& s) {
    count(s.size());
    buf += s;
  }
  void dtype(Dtype t) {
    pod(static_cast<uint8_t>(t));
    note({ExportArg::DtypeArg, static_cast<int64_t>(t), 0, {}});
  }
  void ints(const std::vector<int64_t>& v) {
    count(v.size());
    for (auto x : v) pod(x);
    note({ExportArg::Ints, 0, 0, v});
  }
  void ints(const std::vector<int>& v) { ints(std::vector<int64_t>(v.begin(), v.end())); }
  void shape(const Shape& s) { ints(s); }
};

// ---- reading (every read bounded by the bytes left) ----

class Reader {
 public:
  Reader(const unsigned char* p, size_t n) : p_(p), n_(n) {}
  size_t left() const { return n_ - pos_; }
  void need(size_t k, const char* what) {
    if (k > left()) bad_file(std::string("truncated (reading ") + what + ").");
  }
  template <class T>
  T pod(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  uint8_t u8(const char* what) { return pod<uint8_t>(what); }
  uint32_t u32(const char* what) { return pod<uint32_t>(what); }
  int64_t i64(const char* what) { return pod<int64_t>(what); }
  double f64(const char* what) { return pod<double>(what); }
  bool boolean(const char* what) {
    uint8_t v = u8(what);
    if (v > 1) bad_file(std::string("a flag (") + what + ") is neither 0 nor 1.");
    return v == 1;
  }
  // a count of items of at least `min_bytes` each, bounded by the bytes left
  size_t count(const char* what, size_t min_bytes = 1) {
    uint32_t n = u32(what);
    if (min_bytes > 0 && n > left() / min_bytes) bad_file(std::string("a count (") + what + ") exceeds the file.");
    return n;
  }
  std::string str(const char* what) {
    size_t n = count(what);
    std::string s(reinterpret_cast<const char*>(p_ + pos_), n);
    pos_ += n;
    return s;
  }
  Dtype dtype(const char* what) {
    uint8_t v = u8(what);
    if (v >= kNumDtypes) bad_file(std::string("unknown dtype code ") + std::to_string(v) + " (" + what + ").");
    return static_cast<Dtype>(v);
  }
  std::vector<int64_t> ints(const char* what, size_t max_len = SIZE_MAX) {
    size_t n = count(what, 8);
    if (n > max_len) bad_file(std::string("a list (") + what + ") is too long.");
    std::vector<int64_t> v(n);
    for (auto& x : v) x = i64(what);
    return v;
  }
  std::vector<int> int32s(const char* what) {
    std::vector<int> out;
    for (int64_t x : ints(what, kMaxRank)) {
      if (x < INT32_MIN || x > INT32_MAX) bad_file(std::string("a value (") + what + ") is out of range.");
      out.push_back(static_cast<int>(x));
    }
    return out;
  }
  int int32(const char* what) {
    int64_t x = i64(what);
    if (x < INT32_MIN || x > INT32_MAX) bad_file(std::string("a value (") + what + ") is out of range.");
    return static_cast<int>(x);
  }
  Shape shape(const char* what) {
    Shape s = ints(what, kMaxRank);
    for (auto d : s) {
      if (d < 0) bad_file(std::string("a negative dimension (") + what + ").");
      if (d > (int64_t{1} << 60)) bad_file(std::string("a dimension past 2^60 (") + what + ").");
    }
    checked_size(s, "import_function");
    return s;
  }
  const unsigned char* bytes(size_t n, const char* what) {
    need(n, what);
    const unsigned char* q = p_ + pos_;
    pos_ += n;
    return q;
  }

 private:
  const unsigned char* p_;
  size_t n_;
  size_t pos_ = 0;
};

// ---- the codec table ----

using Ins = std::vector<array>;
struct Rec {  // what the file records of a step
  const std::string& name;
  const std::vector<Shape>& shapes;
  const std::vector<Dtype>& dtypes;
};

struct Codec {
  // the parameters of `p` (whose name() is the entry's)
  std::function<void(const Primitive& p, Writer& w)> write;
  // the step's outputs rebuilt through the ops from its inputs and parameters
  std::function<std::vector<array>(Reader& r, const Ins& in, const Rec& rec)> read;
};

void arity(const Ins& in, const Rec& rec, size_t lo, size_t hi) {
  if (in.size() < lo || in.size() > hi) {
    bad_file("step " + rec.name + " has " + std::to_string(in.size()) + " inputs, expected " + std::to_string(lo) +
             (hi != lo ? " to " + std::to_string(hi) : std::string()) + ".");
  }
}
void arity(const Ins& in, const Rec& rec, size_t n) { arity(in, rec, n, n); }

template <class P>
const P& as(const Primitive& p) {
  auto q = dynamic_cast<const P*>(&p);
  if (!q) throw std::logic_error(std::string("[export_function] codec mismatch for ") + p.name());
  return *q;
}

void no_params(const Primitive&, Writer&) {}

// integer parameters of the file kept within +-2^60, so that the ops' 64-bit arithmetic on them
// (lengths, sums of a dim and its padding) cannot overflow
void within(const std::vector<int64_t>& v, const char* what) {
  constexpr int64_t lim = int64_t{1} << 60;
  for (int64_t x : v) {
    if (x < -lim || x > lim) bad_file(std::string("a parameter (") + what + ") is out of range.");
  }
}

const char* quant_mode_name(QuantMode m) {
  switch (m) {
    case QuantMode::Affine: return "affine";
    case QuantMode::MxFp4: return "mxfp4";
    case QuantMode::MxFp8: return "mxfp8";
    case QuantMode::NvFp4: return "nvfp4";
  }
  return "affine";
}
std::string read_quant_mode(Reader& r) {
  uint8_t m = r.u8("quantization mode");
  if (m > static_cast<uint8_t>(QuantMode::NvFp4)) bad_file("unknown quantization mode.");
  return quant_mode_name(static_cast<QuantMode>(m));
}

void write_conv(const ConvParams& p, Writer& w) {
  w.ints(p.stride);
  w.ints(p.pad_lo);
  w.ints(p.pad_hi);
  w.ints(p.kernel_dilation);
  w.ints(p.input_dilation);
  w.i64(p.groups);
  w.boolean(p.flip);
}
ConvParams read_conv(Reader& r) {
  ConvParams p;
  p.stride = r.ints("conv stride", kMaxRank);
  p.pad_lo = r.ints("conv padding", kMaxRank);
  p.pad_hi = r.ints("conv padding", kMaxRank);
  p.kernel_dilation = r.ints("conv dilation", kMaxRank);
  p.input_dilation = r.ints("conv dilation", kMaxRank);
  p.groups = r.i64("conv groups");
  p.flip = r.boolean("conv flip");
  for (auto* v : {&p.stride, &p.pad_lo, &p.pad_hi, &p.kernel_dilation, &p.input_dilation}) {
    for (int64_t x : *v) {
      if (x < -(int64_t{1} << 30) || x > (int64_t{1} << 30)) bad_file("a convolution parameter is out of range.");
    }
  }
  if (p.groups < 1 || p.groups > (int64_t{1} << 30)) bad_file("a convolution's groups are out of range.");
  return p;
}
array conv_from(const array& x, const array& w, const ConvParams& p) {
  return conv_general(x, w, p.stride, p.pad_lo, p.pad_hi, p.kernel_dilation, p.input_dilation, p.groups, p.flip);
}

using Table = std::unordered_map<std::string, Codec>;

void add_elementwise(Table& t) {
  using U = array (*)(const array&);
  using B = array (*)(const array&, const array&);
  std::vector<std::pair<const char*, U>> unary;
  std::vector<std::pair<const char*, B>> binary;
#define EMBER_EXPORT_UNARY(fn, Prim, In, Sig) unary.emplace_back(#Prim, [](const array& a) { return ember::fn(a); });
  EMBER_UNARY_FUNCTIONS(EMBER_EXPORT_UNARY)
#undef EMBER_EXPORT_UNARY
#define EMBER_EXPORT_BINARY(fn, Prim, In, Sig) \
  binary.emplace_back(#Prim, [](const array& a, const array& b) { return ember::fn(a, b); });
  EMBER_BINARY_FUNCTIONS(EMBER_EXPORT_BINARY)
#undef EMBER_EXPORT_BINARY
  unary.emplace_back("Round", [](const array& a) { return ember::round(a, 0); });
  unary.emplace_back("ToFP8", [](const array& a) { return to_fp8(a); });
  for (auto& [name, f] : unary) {
    if (!*name || t.count(name)) continue;  // a composite, or a second function of one primitive
    U fn = f;
    t[name] = {no_params, [fn](Reader&, const Ins& in, const Rec& rec) {
                 arity(in, rec, 1);
                 return std::vector<array>{fn(in[0])};
               }};
  }
  for (auto& [name, f] : binary) {
    if (!*name || t.count(name)) continue;
    B fn = f;
    t[name] = {no_params, [fn](Reader&, const Ins& in, const Rec& rec) {
                 arity(in, rec, 2);
                 return std::vector<array>{fn(in[0], in[1])};
               }};
  }
  // equal with NaNs equal (array_equal's and isclose's): one dtype and one shape, as the ops build it
  t["NaNEqual"] = {no_params, [](Reader&, const Ins& in, const Rec& rec) {
                     arity(in, rec, 2);
                     if (in[0].dtype() != in[1].dtype() || in[0].shape() != in[1].shape()) {
                       bad_file("step NaNEqual needs two inputs of one dtype and shape.");
                     }
                     return std::vector<array>{
                         make_node<Binary<op::NaNEqual>>(in[0].shape(), Dtype::bool_, {in[0], in[1]}, to_stream({}))};
                   }};
  t["Select"] = {no_params, [](Reader&, const Ins& in, const Rec& rec) {
                   arity(in, rec, 3);
                   return std::vector<array>{where(in[0], in[1], in[2])};
                 }};
  t["AsType"] = {[](const Primitive& p, Writer& w) { w.dtype(as<AsType>(p).dtype()); },
                 [](Reader& r, const Ins& in, const Rec& rec) {
                   arity(in, rec, 1);
                   return std::vector<array>{astype(in[0], r.dtype("astype dtype"))};
                 }};
  t["FromFP8"] = {[](const Primitive& p, Writer& w) { w.dtype(as<FromFP8>(p).dtype()); },
                  [](Reader& r, const Ins& in, const Rec& rec) {
                    arity(in, rec, 1);
                    return std::vector<array>{from_fp8(in[0], r.dtype("from_fp8 dtype"))};
                  }};
}

void add_shape(Table& t) {
  // Reshape, Broadcast, Full and View: their parameters are the recorded output shape / dtype
  t["Reshape"] = {no_params, [](Reader&, const Ins& in, const Rec& rec) {
                    arity(in, rec, 1);
                    return std::vector<array>{reshape(in[0], rec.shapes[0])};
                  }};
  t["Broadcast"] = {no_params, [](Reader&, const Ins& in, const Rec& rec) {
                      arity(in, rec, 1);
                      return std::vector<array>{broadcast_to(in[0], rec.shapes[0])};
                    }};
  t["Full"] = {no_params, [](Reader&, const Ins& in, const Rec& rec) {
                 arity(in, rec, 1);
                 return std::vector<array>{full(rec.shapes[0], in[0], rec.dtypes[0])};
               }};
  t["View"] = {no_params, [](Reader&, const Ins& in, const Rec& rec) {
                 arity(in, rec, 1);
                 return std::vector<array>{view(in[0], rec.dtypes[0])};
               }};
  t["Transpose"] = {[](const Primitive& p, Writer& w) { w.ints(as<Transpose>(p).axes()); },
                    [](Reader& r, const Ins& in, const Rec& rec) {
                      arity(in, rec, 1);
                      return std::vector<array>{transpose(in[0], r.int32s("transpose axes"))};
                    }};
  t["Slice"] = {[](const Primitive& p, Writer& w) {
                  auto& s = as<Slice>(p);
                  w.ints(s.start());
                  w.ints(s.stop());
                  w.ints(s.step());
                },
                [](Reader& r, const Ins& in, const Rec& rec) {
                  arity(in, rec, 1);
                  Shape start = r.ints("slice start", kMaxRank), stop = r.ints("slice stop", kMaxRank),
                        step = r.ints("slice step", kMaxRank);
                  // the op indexes one entry per dim and computes lengths in 64 bits
                  const size_t nd = static_cast<size_t>(in[0].ndim());
                  if (start.size() != nd || stop.size() != nd || step.size() != nd) {
                    bad_file("step Slice has bounds of another rank than its input " + shape_str(in[0].shape()) + ".");
                  }
                  within(start, "slice start");
                  within(stop, "slice stop");
                  within(step, "slice step");
                  return std::vector<array>{slice(in[0], start, stop, step)};
                }};
  t["AsStrided"] = {[](const Primitive& p, Writer& w) {
                      auto& s = as<AsStrided>(p);
                      w.shape(s.shape());
                      w.ints(s.strides());
                      w.i64(s.offset());
                    },
                    [](Reader& r, const Ins& in, const Rec& rec) {
                      arity(in, rec, 1);
                      Shape shape = r.shape("as_strided shape");
                      Strides strides = r.ints("as_strided strides", kMaxRank);
                      int64_t offset = r.i64("as_strided offset");
                      return std::vector<array>{as_strided(in[0], shape, strides, offset)};
                    }};
  t["Contiguous"] = {[](const Primitive& p, Writer& w) { w.boolean(as<Contiguous>(p).allow_col_major()); },
                     [](Reader& r, const Ins& in, const Rec& rec) {
                       arity(in, rec, 1);
                       return std::vector<array>{contiguous(in[0], r.boolean("contiguous layout"))};
                     }};
  t["Arange"] = {[](const Primitive& p, Writer& w) {
                   auto& a = as<Arange>(p);
                   w.f64(a.start());
                   w.f64(a.step());
                 },
                 [](Reader& r, const Ins& in, const Rec& rec) {
                   arity(in, rec, 0);
                   double start = r.f64("arange start"), step = r.f64("arange step");
                   if (rec.shapes[0].size() != 1) bad_file("step Arange must have a 1-D output.");
                   int64_t n = rec.shapes[0][0];
                   return std::vector<array>{
                       make_node<Arange>({n}, rec.dtypes[0], {}, to_stream({}), start, step, n, rec.dtypes[0])};
                 }};
  t["Concatenate"] = {[](const Primitive& p, Writer& w) { w.i64(as<Concatenate>(p).axis()); },
                      [](Reader& r, const Ins& in, const Rec& rec) {
                        arity(in, rec, 1, SIZE_MAX);
                        return std::vector<array>{concatenate(in, r.int32("concatenate axis"))};
                      }};
  t["Pad"] = {[](const Primitive& p, Writer& w) {
                auto& q = as<Pad>(p);
                w.ints(q.low());
                w.ints(q.high());
              },
              [](Reader& r, const Ins& in, const Rec& rec) {
                arity(in, rec, 2);
                Shape lo = r.ints("pad low", kMaxRank), hi = r.ints("pad high", kMaxRank);
                if (lo.size() != hi.size()) bad_file("step Pad has padding lists of different lengths.");
                within(lo, "pad low");
                within(hi, "pad high");
                std::vector<std::pair<int64_t, int64_t>> widths;
                for (size_t i = 0; i < lo.size(); ++i) widths.emplace_back(lo[i], hi[i]);
                return std::vector<array>{pad(in[0], widths, "constant", in[1])};
              }};
}

void add_reductions(Table& t) {
  static const char* reduce_names[] = {"Sum", "Prod", "Max", "Min", "All", "Any"};
  for (int k = 0; k < 6; ++k) {
    t[reduce_names[k]] = {[](const Primitive& p, Writer& w) { w.ints(as<Reduce>(p).axes()); },
                          [k](Reader& r, const Ins& in, const Rec& rec) {
                            arity(in, rec, 1);
                            Axes axes = r.int32s("reduction axes");
                            if (axes.empty()) bad_file("step " + rec.name + " reduces no axis.");
                            using F = array (*)(const array&, std::optional<Axes>, bool, const StreamOrDevice&);
                            static const F fs[] = {ember::sum, ember::prod, ember::max, ember::min, ember::all, ember::any};
                            return std::vector<array>{fs[k](in[0], axes, true, {})};
                          }};
  }
  for (int k = 0; k < 2; ++k) {
    t[k == 0 ? "ArgMax" : "ArgMin"] = {[](const Primitive& p, Writer& w) { w.i64(as<ArgReduce>(p).axis()); },
                                       [k](Reader& r, const Ins& in, const Rec& rec) {
                                         arity(in, rec, 1);
                                         int axis = r.int32("arg-reduction axis");
                                         bool keep = rec.shapes[0].size() == static_cast<size_t>(in[0].ndim());
                                         return std::vector<array>{k == 0 ? argmax(in[0], axis, keep)
                                                                          : argmin(in[0], axis, keep)};
                                       }};
  }
  t["Softmax"] = {[](const Primitive& p, Writer& w) { w.boolean(as<Softmax>(p).precise()); },
                  [](Reader& r, const Ins& in, const Rec& rec) {
                    arity(in, rec, 1);
                    return std::vector<array>{softmax(in[0], Axes{-1}, r.boolean("softmax precision"))};
                  }};
  static const char* scan_names[] = {"CumSum", "CumProd", "CumMax", "CumMin", "LogCumSumExp"};
  for (int k = 0; k < 5; ++k) {
    t[scan_names[k]] = {[](const Primitive& p, Writer& w) {
                          auto& s = as<Scan>(p);
                          w.i64(s.axis());
                          w.boolean(s.reverse());
                          w.boolean(s.inclusive());
                        },
                        [k](Reader& r, const Ins& in, const Rec& rec) {
                          arity(in, rec, 1);
                          int axis = r.int32("scan axis");
                          bool rev = r.boolean("scan direction"), inc = r.boolean("scan inclusion");
                          const array& x = in[0];
                          switch (k) {
                            case 0: return std::vector<array>{cumsum(x, axis, rev, inc, x.dtype())};
                            case 1: return std::vector<array>{cumprod(x, axis, rev, inc, x.dtype())};
                            case 2: return std::vector<array>{cummax(x, axis, rev, inc)};
                            case 3: return std::vector<array>{cummin(x, axis, rev, inc)};
                            default: return std::vector<array>{logcumsumexp(x, axis, rev, inc)};
                          }
                        }};
  }
  static const char* sort_names[] = {"Sort", "ArgSort", "Partition", "ArgPartition", "TopK"};
  for (int k = 0; k < 5; ++k) {
    t[sort_names[k]] = {[](const Primitive& p, Writer& w) {
                          auto& s = as<Sorting>(p);
                          w.i64(s.axis());
                          w.i64(s.param());
                        },
                        [k](Reader& r, const Ins& in, const Rec& rec) {
                          arity(in, rec, 1);
                          int axis = r.int32("sort axis");
                          int param = r.int32("sort parameter");
                          const array& x = in[0];
                          switch (k) {
                            case 0: return std::vector<array>{sort(x, axis)};
                            case 1: return std::vector<array>{argsort(x, axis)};
                            case 2: return std::vector<array>{partition(x, param, axis)};
                            case 3: return std::vector<array>{argpartition(x, param, axis)};
                            default: return std::vector<array>{topk(x, param, axis)};
                          }
                        }};
  }
  t["SearchSorted"] = {[](const Primitive& p, Writer& w) { w.boolean(as<SearchSorted>(p).right()); },
                       [](Reader& r, const Ins& in, const Rec& rec) {
                         arity(in, rec, 2);
                         bool right = r.boolean("searchsorted side");
                         return std::vector<array>{searchsorted(in[0], in[1], right ? "right" : "left")};
                       }};
  t["Unique"] = {no_params, [](Reader&, const Ins& in, const Rec& rec) {
                   arity(in, rec, 1, 2);
                   if (rec.shapes.size() != 4 || rec.shapes[0].size() != 1) bad_file("step Unique must have 4 outputs.");
                   std::optional<array> fill;
                   if (in.size() == 2) fill = in[1];
                   return unique(in[0], rec.shapes[0][0], true, true, true, fill);
                 }};
}

void add_indexing(Table& t) {
  t["Gather"] = {[](const Primitive& p, Writer& w) { w.ints(as<Gather>(p).axes()); },
                 [](Reader& r, const Ins& in, const Rec& rec) {
                   arity(in, rec, 1, kMaxRank + 1);
                   std::vector<int> axes = r.int32s("gather axes");
                   return std::vector<array>{gather(in[0], Ins(in.begin() + 1, in.end()), axes)};
                 }};
  static const char* scatter_names[] = {"Scatter", "ScatterAdd", "ScatterProd", "ScatterMax", "ScatterMin"};
  static const ScatterKind kinds[] = {ScatterKind::Assign, ScatterKind::Add, ScatterKind::Prod, ScatterKind::Max,
                                      ScatterKind::Min};
  for (int k = 0; k < 5; ++k) {
    t[scatter_names[k]] = {[](const Primitive& p, Writer& w) {
                             auto& s = as<Scatter>(p);
                             w.ints(s.view().dims);
                             w.ints(s.view().start);
                             w.ints(s.view().step);
                             w.ints(s.view().size);
                             w.ints(s.axes());
                           },
                           [k](Reader& r, const Ins& in, const Rec& rec) {
                             arity(in, rec, 2, kMaxRank + 2);
                             IndexView v;
                             v.dims = r.int32s("scatter view");
                             v.start = r.ints("scatter view", kMaxRank);
                             v.step = r.ints("scatter view", kMaxRank);
                             v.size = r.ints("scatter view", kMaxRank);
                             std::vector<int> axes = r.int32s("scatter axes");
                             // the window's last element computed without overflow (the op's own
                             // bounds check assumes a window that fits in 64 bits)
                             for (size_t i = 0; i < v.dims.size() && i < v.step.size() && i < v.size.size() &&
                                                i < v.start.size();
                                  ++i) {
                               __int128 last = static_cast<__int128>(v.start[i]) +
                                               static_cast<__int128>(v.step[i]) * (static_cast<__int128>(v.size[i]) - 1);
                               if (last < INT64_MIN || last > INT64_MAX) bad_file("step Scatter has a window past 2^63.");
                             }
                             Ins idx(in.begin() + 1, in.end() - 1);
                             return std::vector<array>{scatter(in[0], v, idx, in.back(), axes, kinds[k])};
                           }};
  }
}

void add_linalg(Table& t) {
  t["Matmul"] = {no_params, [](Reader&, const Ins& in, const Rec& rec) {
                   arity(in, rec, 2);
                   if (in[0].ndim() < 2 || in[1].ndim() < 2) bad_file("step Matmul needs inputs of rank 2 or more.");
                   return std::vector<array>{matmul(in[0], in[1])};
                 }};
  static const char* names[] = {"Inv", "TriInv", "Cholesky", "Det", "SlogDet", "Solve", "SolveTri", "QR",
                                "SVD", "SVDVals", "Eigh", "EigvalsH", "Eig", "Eigvals", "LUFactor", "LU"};
  for (int k = 0; k < 16; ++k) {
    t[names[k]] = {[](const Primitive& p, Writer& w) { w.boolean(as<Lapack>(p).upper()); },
                   [k](Reader& r, const Ins& in, const Rec& rec) -> std::vector<array> {
                     bool upper = r.boolean("linalg triangle");
                     auto pr = [](std::pair<array, array> p) { return std::vector<array>{p.first, p.second}; };
                     const bool two = k == Lapack::Solve || k == Lapack::SolveTri;
                     arity(in, rec, two ? 2 : 1);
                     const array& a = in[0];
                     using namespace linalg;
                     switch (static_cast<Lapack::Kind>(k)) {
                       case Lapack::Inv: return {inv(a)};
                       case Lapack::TriInv: return {tri_inv(a, upper)};
                       case Lapack::Cholesky: return {cholesky(a, upper)};
                       case Lapack::Det: return {det(a)};
                       case Lapack::SlogDet: return pr(slogdet(a));
                       case Lapack::Solve: return {solve(a, in[1])};
                       case Lapack::SolveTri: return {solve_triangular(a, in[1], upper)};
                       case Lapack::QR: return pr(qr(a));
                       case Lapack::SVD: return svd(a, true);
                       case Lapack::SVDVals: return svd(a, false);
                       case Lapack::Eigh: return pr(eigh(a, upper ? "U" : "L"));
                       case Lapack::EigvalsH: return {eigvalsh(a, upper ? "U" : "L")};
                       case Lapack::Eig: return pr(eig(a));
                       case Lapack::Eigvals: return {eigvals(a)};
                       case Lapack::LUFactor: return pr(lu_factor(a));
                       case Lapack::LU: return lu(a);
                     }
                     return {};
                   }};
  }
  t["FFT"] = {[](const Primitive& p, Writer& w) {
                auto& f = as<FFT>(p);
                w.u8(static_cast<uint8_t>(f.kind()));
                w.i64(f.axis());
                w.boolean(f.inverse());
                w.i64(f.n());
                w.f64(f.scale());
              },
              [](Reader& r, const Ins& in, const Rec& rec) {
                arity(in, rec, 1);
                uint8_t kind = r.u8("fft kind");
                if (kind > FFT::C2R) bad_file("unknown FFT kind.");
                int axis = normalize_axis(r.int32("fft axis"), in[0].ndim(), "import_function");
                bool inverse = r.boolean("fft direction");
                int64_t n = r.i64("fft length");
                double scale = r.f64("fft scale");
                if (n < 1) bad_file("step FFT has a length below 1.");
                return std::vector<array>{
                    fft_node(in[0], static_cast<FFT::Kind>(kind), axis, inverse, n, scale, to_stream({}))};
              }};
  t["ConvGeneral"] = {[](const Primitive& p, Writer& w) { write_conv(as<ConvGeneral>(p).params(), w); },
                      [](Reader& r, const Ins& in, const Rec& rec) {
                        arity(in, rec, 2);
                        return std::vector<array>{conv_from(in[0], in[1], read_conv(r))};
                      }};
  t["ConvWeightGrad"] = {[](const Primitive& p, Writer& w) { write_conv(as<ConvWeightGrad>(p).params(), w); },
                         [](Reader& r, const Ins& in, const Rec& rec) {
                           arity(in, rec, 2);
                           ConvParams cp = read_conv(r);
                           const Shape& w_shape = rec.shapes[0];
                           // valid exactly when the forward convolution of x and a weight of this shape is
                           // well formed and gives the cotangent's shape and dtype
                           array fwd = conv_from(in[0], placeholder(w_shape, in[0].dtype()), cp);
                           if (fwd.shape() != in[1].shape() || fwd.dtype() != in[1].dtype()) {
                             bad_file("step ConvWeightGrad: the cotangent " + shape_str(in[1].shape()) +
                                      " does not match the convolution's output " + shape_str(fwd.shape()) + ".");
                           }
                           auto conv = fwd.has_primitive() ? dynamic_cast<const ConvGeneral*>(&fwd.primitive()) : nullptr;
                           if (!conv) bad_file("step ConvWeightGrad has parameters of no single convolution.");
                           return std::vector<array>{make_node<ConvWeightGrad>(w_shape, in[0].dtype(), {in[0], in[1]},
                                                                               to_stream({}), conv->params(), w_shape)};
                         }};
}

void add_fast(Table& t) {
  t["RMSNorm"] = {[](const Primitive& p, Writer& w) {
                    auto& q = as<RMSNorm>(p);
                    w.f64(q.eps());
                    w.boolean(q.has_weight());
                  },
                  [](Reader& r, const Ins& in, const Rec& rec) {
                    double eps = r.f64("rms_norm eps");
                    bool hw = r.boolean("rms_norm weight");
                    arity(in, rec, hw ? 2 : 1);
                    return std::vector<array>{
                        fast::rms_norm(in[0], hw ? std::optional<array>(in[1]) : std::nullopt, eps)};
                  }};
  t["LayerNorm"] = {[](const Primitive& p, Writer& w) {
                      auto& q = as<LayerNorm>(p);
                      w.f64(q.eps());
                      w.boolean(q.has_weight());
                      w.boolean(q.has_bias());
                    },
                    [](Reader& r, const Ins& in, const Rec& rec) {
                      double eps = r.f64("layer_norm eps");
                      bool hw = r.boolean("layer_norm weight"), hb = r.boolean("layer_norm bias");
                      arity(in, rec, 1 + hw + hb);
                      std::optional<array> w, b;
                      if (hw) w = in[1];
                      if (hb) b = in[1 + hw];
                      return std::vector<array>{fast::layer_norm(in[0], w, b, eps)};
                    }};
  t["RoPE"] = {[](const Primitive& p, Writer& w) {
                 auto& q = as<RoPE>(p);
                 w.i64(q.dims());
                 w.boolean(q.traditional());
                 w.f64(q.base());
                 w.f64(q.scale());
                 w.boolean(q.has_freqs());
               },
               [](Reader& r, const Ins& in, const Rec& rec) {
                 int dims = r.int32("rope dims");
                 bool trad = r.boolean("rope layout");
                 double base = r.f64("rope base"), scale = r.f64("rope scale");
                 bool hf = r.boolean("rope freqs");
                 arity(in, rec, hf ? 3 : 2);
                 std::optional<array> freqs;
                 std::optional<double> b = base;
                 if (hf) {
                   freqs = in[2];
                   b.reset();
                 }
                 return std::vector<array>{fast::rope(in[0], dims, trad, b, scale, in[1], freqs)};
               }};
  t["ScaledDotProductAttention"] = {
      [](const Primitive& p, Writer& w) {
        auto& q = as<ScaledDotProductAttention>(p);
        w.f64(q.scale());
        w.u8(static_cast<uint8_t>(q.mask()));
        w.boolean(q.has_sinks());
      },
      [](Reader& r, const Ins& in, const Rec& rec) {
        double scale = r.f64("attention scale");
        uint8_t mask = r.u8("attention mask");
        if (mask > ScaledDotProductAttention::Additive) bad_file("unknown attention mask kind.");
        bool sinks = r.boolean("attention sinks");
        const bool has_mask = mask >= ScaledDotProductAttention::Bool;
        arity(in, rec, 3 + has_mask + sinks);
        std::optional<std::string> mode;
        if (mask == ScaledDotProductAttention::Causal) mode = "causal";
        std::optional<array> m, s;
        if (has_mask) m = in[3];
        if (sinks) s = in[3 + has_mask];
        return std::vector<array>{fast::scaled_dot_product_attention(in[0], in[1], in[2], scale, mode, m, s)};
      }};
  t["CrossEntropy"] = {no_params, [](Reader&, const Ins& in, const Rec& rec) {
                         arity(in, rec, 2);
                         return std::vector<array>{fast::cross_entropy(in[0], in[1])};
                       }};
  t["GatedDeltaUpdate"] = {[](const Primitive& p, Writer& w) { w.boolean(as<GatedDeltaUpdate>(p).has_mask()); },
                           [](Reader& r, const Ins& in, const Rec& rec) {
                             bool hm = r.boolean("gated delta mask");
                             arity(in, rec, hm ? 7 : 6);
                             std::optional<array> mask;
                             if (hm) mask = in[6];
                             return fast::gated_delta_update(in[0], in[1], in[2], in[3], in[4], in[5], mask);
                           }};
}

void add_quantized(Table& t) {
  t["Quantize"] = {[](const Primitive& p, Writer& w) {
                     auto& q = as<Quantize>(p);
                     w.i64(q.group_size());
                     w.i64(q.bits());
                     w.u8(static_cast<uint8_t>(q.mode()));
                     w.boolean(q.has_global());
                   },
                   [](Reader& r, const Ins& in, const Rec& rec) {
                     int gs = r.int32("group size"), bits = r.int32("bits");
                     std::string mode = read_quant_mode(r);
                     bool hg = r.boolean("global scale");
                     arity(in, rec, hg ? 2 : 1);
                     std::optional<array> g;
                     if (hg) g = in[1];
                     return quantize(in[0], gs, bits, mode, g);
                   }};
  t["Dequantize"] = {[](const Primitive& p, Writer& w) {
                       auto& q = as<Dequantize>(p);
                       w.i64(q.group_size());
                       w.i64(q.bits());
                       w.u8(static_cast<uint8_t>(q.mode()));
                       w.boolean(q.has_global());
                       w.dtype(q.out_dtype());
                     },
                     [](Reader& r, const Ins& in, const Rec& rec) {
                       int gs = r.int32("group size"), bits = r.int32("bits");
                       std::string mode = read_quant_mode(r);
                       bool hg = r.boolean("global scale");
                       Dtype out = r.dtype("dequantize dtype");
                       const bool affine = mode == "affine";
                       arity(in, rec, 2 + affine + hg);
                       std::optional<array> b, g;
                       if (affine) b = in[2];
                       if (hg) g = in[2 + affine];
                       return std::vector<array>{dequantize(in[0], in[1], b, gs, bits, mode, g, out)};
                     }};
  t["QuantizedMatmul"] = {[](const Primitive& p, Writer& w) {
                            auto& q = as<QuantizedMatmul>(p);
                            w.i64(q.group_size());
                            w.i64(q.bits());
                            w.u8(static_cast<uint8_t>(q.mode()));
                            w.boolean(q.transpose());
                          },
                          [](Reader& r, const Ins& in, const Rec& rec) {
                            int gs = r.int32("group size"), bits = r.int32("bits");
                            std::string mode = read_quant_mode(r);
                            bool tr = r.boolean("transpose");
                            const bool affine = mode == "affine";
                            arity(in, rec, 3 + affine);
                            std::optional<array> b;
                            if (affine) b = in[3];
                            return std::vector<array>{quantized_matmul(in[0], in[1], in[2], b, tr, gs, bits, mode)};
                          }};
}

void add_random_and_transforms(Table& t) {
  t["RandomBits"] = {[](const Primitive& p, Writer& w) {
                       auto& q = as<RandomBits>(p);
                       w.shape(q.shape());
                       w.i64(q.width());
                       w.u8(static_cast<uint8_t>(q.kind()));
                     },
                     [](Reader& r, const Ins& in, const Rec& rec) {
                       arity(in, rec, 1);
                       Shape shape = r.shape("random shape");
                       int64_t width = r.i64("random width");
                       uint8_t kind = r.u8("random kind");
                       const array& key = in[0];
                       if (kind > RandomBits::Normal || (width != 1 && width != 2 && width != 4) ||
                           (kind != RandomBits::Bits && width != 4)) {
                         bad_file("step RandomBits has an unknown kind or width.");
                       }
                       if (key.dtype() != Dtype::uint32 || key.ndim() < 1 || key.shape(-1) != 2) {
                         bad_file("step RandomBits needs uint32 keys of shape (..., 2), got " +
                                  shape_str(key.shape()) + ".");
                       }
                       Shape out(key.shape().begin(), key.shape().end() - 1);
                       out.insert(out.end(), shape.begin(), shape.end());
                       Dtype dt = kind != RandomBits::Bits ? Dtype::float32
                                  : width == 1            ? Dtype::uint8
                                  : width == 2            ? Dtype::uint16
                                                          : Dtype::uint32;
                       return std::vector<array>{make_node<RandomBits>(out, dt, {key}, to_stream({}), shape,
                                                                       static_cast<int>(width),
                                                                       static_cast<RandomBits::Kind>(kind))};
                     }};
  t["RandomCholesky"] = {no_params, [](Reader&, const Ins& in, const Rec& rec) {
                           arity(in, rec, 1);
                           const array& a = in[0];
                           if ((a.dtype() != Dtype::float32 && a.dtype() != Dtype::float64) || a.ndim() < 2 ||
                               a.shape(-1) != a.shape(-2)) {
                             bad_file("step RandomCholesky needs float32/float64 square matrices, got " +
                                      std::string(dtype_name(a.dtype())) + " " + shape_str(a.shape()) + ".");
                           }
                           return std::vector<array>{
                               make_node<RandomCholesky>(a.shape(), a.dtype(), {a}, to_stream({}))};
                         }};
  // the transforms' own nodes: Identity marks a transform's input (its value is the input's);
  // StopGradient and Depends keep their meaning for grad of the imported function
  t["Identity"] = {no_params, [](Reader&, const Ins& in, const Rec& rec) {
                     arity(in, rec, 1);
                     return std::vector<array>{in[0]};
                   }};
  t["StopGradient"] = {no_params, [](Reader&, const Ins& in, const Rec& rec) {
                         arity(in, rec, 1);
                         return std::vector<array>{stop_gradient(in[0])};
                       }};
  t["Depends"] = {no_params, [](Reader&, const Ins& in, const Rec& rec) {
                    size_t n = rec.shapes.size();
                    arity(in, rec, n, SIZE_MAX);
                    return depends(Ins(in.begin(), in.begin() + n), Ins(in.begin() + n, in.end()));
                  }};
}

const Table& codecs() {
  static const Table table = [] {
    Table t;
    add_elementwise(t);
    add_shape(t);
    add_reductions(t);
    add_indexing(t);
    add_linalg(t);
    add_fast(t);
    add_quantized(t);
    add_random_and_transforms(t);
    return t;
  }();
  return table;
}

// The tape with every fused (Compiled) step replaced by its recorded steps.
std::shared_ptr<Tape> unfuse(const std::shared_ptr<Tape>& tape, const std::vector<array>& placeholders) {
  bool any = false;
  for (auto& st : tape->steps) any = any || dynamic_cast<const compile::Compiled*>(st.prim.get());
  if (!any) return tape;
  std::vector<array> vals(tape->n_values);
  for (int i = 0; i < tape->n_inputs(); ++i) vals[i] = placeholders[i];
  for (int i = 0; i < tape->n_constants(); ++i) vals[tape->n_inputs() + i] = tape->constants[i];
  for (auto& st : tape->steps) {
    std::vector<array> ins;
    for (int v : st.inputs) ins.push_back(vals[v]);
    std::vector<array> outs;
    if (auto c = dynamic_cast<const compile::Compiled*>(st.prim.get())) {
      outs = c->program().apply(ins);
    } else {
      const std::shared_ptr<Primitive>& prim = st.prim;
      outs = make_nodes<ReusePrimitive>(st.shapes, st.dtypes, ins, prim);
    }
    for (size_t j = 0; j < outs.size(); ++j) vals[st.first_out + j] = outs[j];
  }
  std::vector<array> outs;
  for (int v : tape->outputs) outs.push_back(vals[v]);
  auto t = record(placeholders, outs);
  simplify(*t);
  return t;
}

std::string signature(int n_args, const std::vector<std::string>& names, const std::vector<Shape>& shapes,
                      const std::vector<Dtype>& dtypes, bool ranks_only) {
  std::ostringstream os;
  os << n_args << " positional and " << names.size() << " keyword inputs:";
  for (size_t i = 0; i < shapes.size(); ++i) {
    os << (i ? ", " : " ");
    if (i >= static_cast<size_t>(n_args) && i - n_args < names.size()) os << names[i - n_args] << "=";
    os << dtype_name(dtypes[i]) << " ";
    if (ranks_only) {
      os << "rank " << shapes[i].size();
    } else {
      os << shape_str(shapes[i]);
    }
  }
  return os.str();
}

}  // namespace

ExportTrace export_trace(const std::vector<array>& placeholders, const std::vector<array>& outputs, int n_args,
                         std::vector<std::string> kwarg_names) {
  for (auto& p : placeholders) {
    if (!is_placeholder(p)) throw std::logic_error("[export_function] inputs must be placeholders");
  }
  if (n_args < 0 || static_cast<size_t>(n_args) + kwarg_names.size() != placeholders.size()) {
    throw std::logic_error("[export_function] argument counts do not match the placeholders");
  }
  auto tape = record(placeholders, outputs);
  simplify(*tape);
  tape = unfuse(tape, placeholders);
  for (auto& st : tape->steps) {
    if (!codecs().count(st.prim->name())) {
      throw std::invalid_argument(std::string("[export_function] The function uses primitive ") + st.prim->name() +
                                  ", which cannot be exported (no serializer; custom functions and collectives "
                                  "are not exportable).");
    }
  }
  for (auto& c : tape->constants) {
    if (c.is_tracer()) {
      throw std::invalid_argument(
          "[export_function] The function captures an array traced by an outer transform; export it outside "
          "of grad, vmap and compile.");
    }
  }
  return {n_args, std::move(kwarg_names), std::move(tape)};
}

std::vector<ExportArg> export_arguments(const Primitive& p) {
  auto it = codecs().find(p.name());
  if (it == codecs().end()) {
    throw std::invalid_argument(std::string("[export_function] Primitive ") + p.name() + " cannot be exported.");
  }
  std::vector<ExportArg> out;
  Writer w;
  w.log = &out;
  it->second.write(p, w);
  return out;
}

std::string serialize_function(const std::vector<ExportTrace>& traces, bool shapeless, const std::string& metadata) {
  Writer w;
  w.buf.append(kMagic, sizeof(kMagic));
  w.u32(kFormatVersion);
  w.str(ember::version());
  w.str(metadata);
  w.boolean(shapeless);
  w.count(traces.size());
  for (const ExportTrace& tr : traces) {
    const Tape& t = *tr.tape;
    w.count(tr.n_args);
    w.count(tr.kwarg_names.size());
    for (auto& k : tr.kwarg_names) w.str(k);
    w.count(t.n_inputs());
    for (int i = 0; i < t.n_inputs(); ++i) {
      w.dtype(t.in_dtypes[i]);
      w.shape(t.in_shapes[i]);
    }
    w.count(t.n_constants());
    for (const array& c0 : t.constants) {
      array c = contiguous(c0);
      c.eval();
      w.dtype(c.dtype());
      w.shape(c.shape());
      w.i64(c.nbytes());
      if (c.nbytes() > 0) w.buf.append(static_cast<const char*>(c.raw_data()), c.nbytes());
    }
    w.count(t.steps.size());
    for (const Step& st : t.steps) {
      const char* name = st.prim->name();
      auto it = codecs().find(name);
      if (it == codecs().end()) {
        throw std::invalid_argument(std::string("[export_function] Primitive ") + name + " cannot be exported.");
      }
      w.str(name);
      w.count(st.inputs.size());
      for (int v : st.inputs) w.u32(static_cast<uint32_t>(v));
      w.count(st.shapes.size());
      for (size_t j = 0; j < st.shapes.size(); ++j) {
        w.dtype(st.dtypes[j]);
        w.shape(st.shapes[j]);
      }
      Writer params;
      it->second.write(*st.prim, params);
      w.str(params.buf);
    }
    w.count(t.outputs.size());
    for (int v : t.outputs) w.u32(static_cast<uint32_t>(v));
  }
  w.u32(crc32(reinterpret_cast<const unsigned char*>(w.buf.data()), w.buf.size()));
  return std::move(w.buf);
}

namespace {
ImportedFunction deserialize(const std::string& bytes) {
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < sizeof(kMagic) || std::memcmp(data, kMagic, sizeof(kMagic)) != 0) {
    bad_file("not an Ember export file (wrong magic bytes).");
  }
  Reader head(data + sizeof(kMagic), bytes.size() - sizeof(kMagic));
  uint32_t version = head.u32("format version");
  if (version != kFormatVersion) {
    bad_file("format version " + std::to_string(version) + ", this Ember (" + ember::version() + ") reads version " +
             std::to_string(kFormatVersion) + ".");
  }
  if (bytes.size() < sizeof(kMagic) + 8) bad_file("truncated (reading the checksum).");
  uint32_t stored;
  std::memcpy(&stored, data + bytes.size() - 4, 4);
  if (crc32(data, bytes.size() - 4) != stored) bad_file("checksum mismatch (the file is truncated or corrupted).");

  Reader r(data + sizeof(kMagic) + 4, bytes.size() - sizeof(kMagic) - 8);
  ImportedFunction f;
  r.str("Ember version");
  f.metadata = r.str("metadata");
  if (!valid_utf8(f.metadata)) bad_file("the metadata is not UTF-8 text.");
  f.shapeless = r.boolean("shapeless");
  size_t n_traces = r.count("traces", 16);
  for (size_t ti = 0; ti < n_traces; ++ti) {
    ImportedFunction::Trace tr;
    std::vector<array> placeholders, outs;
    {
    FunctionTrace scope;
    size_t n_args = r.count("positional inputs", 0);
    size_t n_kw = r.count("keyword inputs", 4);
    for (size_t i = 0; i < n_kw; ++i) {
      tr.kwarg_names.push_back(r.str("keyword name"));
      if (!valid_utf8(tr.kwarg_names.back())) bad_file("a keyword name is not UTF-8 text.");
      if (i > 0 && !(tr.kwarg_names[i - 1] < tr.kwarg_names[i])) bad_file("keyword names not sorted and distinct.");
    }
    size_t n_in = r.count("inputs", 5);
    if (n_in != n_args + n_kw) bad_file("the input count does not match the argument counts.");
    tr.n_args = static_cast<int>(n_args);
    std::vector<array> vals;
    for (size_t i = 0; i < n_in; ++i) {
      Dtype dt = r.dtype("input dtype");
      placeholders.push_back(placeholder(r.shape("input shape"), dt));
      vals.push_back(placeholders.back());
    }
    size_t n_const = r.count("constants", 13);
    for (size_t i = 0; i < n_const; ++i) {
      Dtype dt = r.dtype("constant dtype");
      Shape shape = r.shape("constant shape");
      int64_t nbytes = r.i64("constant size");
      const int64_t n = checked_size(shape, "import_function");
      if (n > INT64_MAX / size_of(dt) || nbytes != n * size_of(dt)) {
        bad_file("a constant of shape " + shape_str(shape) + " holds " + std::to_string(nbytes) + " bytes.");
      }
      r.need(static_cast<size_t>(nbytes), "constant data");
      vals.push_back(array(r.bytes(static_cast<size_t>(nbytes), "constant data"), shape, dt));
    }
    size_t n_steps = r.count("steps", 13);
    for (size_t si = 0; si < n_steps; ++si) {
      std::string name = r.str("op name");
      auto it = codecs().find(name);
      if (it == codecs().end()) bad_file("unknown op '" + printable(name) + "'.");
      size_t n_sin = r.count("step inputs", 4);
      std::vector<array> ins;
      for (size_t k = 0; k < n_sin; ++k) {
        uint32_t v = r.u32("step input");
        if (v >= vals.size()) {
          bad_file("step " + std::to_string(si) + " (" + name + ") uses value " + std::to_string(v) +
                   ", defined later or never.");
        }
        ins.push_back(vals[v]);
      }
      size_t n_out = r.count("step outputs", 5);
      if (n_out == 0) bad_file("step " + std::to_string(si) + " (" + name + ") has no output.");
      std::vector<Shape> shapes;
      std::vector<Dtype> dtypes;
      for (size_t k = 0; k < n_out; ++k) {
        dtypes.push_back(r.dtype("step dtype"));
        shapes.push_back(r.shape("step shape"));
      }
      std::string params = r.str("step parameters");
      Reader pr(reinterpret_cast<const unsigned char*>(params.data()), params.size());
      Rec rec{name, shapes, dtypes};
      std::vector<array> built;
      try {
        built = it->second.read(pr, ins, rec);
      } catch (const std::exception& e) {
        // an op's own error (ValueError, IndexError, TypeError) on the file's inputs or parameters
        std::string what = e.what();
        if (what.rfind("[import_function]", 0) == 0) throw;
        bad_file("step " + std::to_string(si) + " (" + name + ") does not rebuild: " + what);
      }
      if (pr.left() != 0) bad_file("step " + std::to_string(si) + " (" + name + ") has extra parameter bytes.");
      if (built.size() != n_out) {
        bad_file("step " + std::to_string(si) + " (" + name + ") rebuilds " + std::to_string(built.size()) +
                 " outputs, the file records " + std::to_string(n_out) + ".");
      }
      for (size_t k = 0; k < n_out; ++k) {
        if (built[k].shape() != shapes[k] || built[k].dtype() != dtypes[k]) {
          bad_file("step " + std::to_string(si) + " (" + name + ") computes " + dtype_name(built[k].dtype()) + " " +
                   shape_str(built[k].shape()) + " where the file records " + dtype_name(dtypes[k]) + " " +
                   shape_str(shapes[k]) + ".");
        }
        vals.push_back(built[k]);
      }
    }
    size_t n_outs = r.count("outputs", 4);
    for (size_t k = 0; k < n_outs; ++k) {
      uint32_t v = r.u32("output");
      if (v >= vals.size()) bad_file("an output refers to value " + std::to_string(v) + ", which is not defined.");
      outs.push_back(vals[v]);
    }
    }  // the rebuild traced on placeholders; compile it outside the scope, as compile does
    tr.tape = compile_graph(placeholders, outs, f.shapeless);
    f.traces.push_back(std::move(tr));
  }
  if (r.left() != 0) bad_file(std::to_string(r.left()) + " bytes after the last trace.");
  return f;
}
}  // namespace

ImportedFunction deserialize_function(const std::string& bytes) {
  try {
    return deserialize(bytes);
  } catch (const std::invalid_argument& e) {
    // the array checks' own errors (an input shape of too many bytes, ...) worded as the file's
    std::string what = e.what();
    if (what.rfind("[import_function]", 0) == 0) throw;
    bad_file(what);
  }
}

void write_export_file(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".tmp" + std::to_string(reinterpret_cast<uintptr_t>(&bytes));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("[export_function] Failed to open " + path + " for writing.");
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("[export_function] Failed to write " + path + ".");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error("[export_function] Failed to write " + path + ".");
  }
}

std::string read_export_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("[import_function] Failed to open " + path + ".");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw std::runtime_error("[import_function] Failed to read " + path + ".");
  return ss.str();
}

}  // namespace compiler

std::vector<array> ImportedFunction::operator()(const std::vector<array>& args) const {
  return (*this)(args, {});
}

std::vector<array> ImportedFunction::operator()(const std::vector<array>& args,
                                                const std::map<std::string, array>& kwargs) const {
  std::vector<array> inputs = args;
  std::vector<std::string> names;
  for (auto& [k, v] : kwargs) {
    names.push_back(k);
    inputs.push_back(v);
  }
  for (auto& x : inputs) {
    if (!x.valid()) throw std::invalid_argument("[import_function] An input array is empty (default-constructed).");
  }
  for (const Trace& tr : traces) {
    const compiler::Tape& t = *tr.tape;
    if (tr.n_args != static_cast<int>(args.size()) || tr.kwarg_names != names) continue;
    bool ok = true;
    for (size_t i = 0; ok && i < inputs.size(); ++i) {
      ok = inputs[i].dtype() == t.in_dtypes[i] &&
           (shapeless ? inputs[i].ndim() == static_cast<int>(t.in_shapes[i].size())
                      : inputs[i].shape() == t.in_shapes[i]);
    }
    if (ok) return compiler::replay(t, inputs);
  }
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  for (auto& x : inputs) {
    shapes.push_back(x.shape());
    dtypes.push_back(x.dtype());
  }
  throw std::invalid_argument(
      "[import_function] No imported function matches the given positional and keyword arguments. The file holds:\n" +
      describe() + "Called with " +
      compiler::signature(static_cast<int>(args.size()), names, shapes, dtypes, false) + ".");
}

std::string ImportedFunction::describe() const {
  std::ostringstream os;
  for (size_t i = 0; i < traces.size(); ++i) {
    const compiler::Tape& t = *traces[i].tape;
    os << "  " << i + 1 << ". "
       << compiler::signature(traces[i].n_args, traces[i].kwarg_names, t.in_shapes, t.in_dtypes, shapeless) << "\n";
  }
  return os.str();
}

ImportedFunction import_function(const std::string& path) {
  return compiler::deserialize_function(compiler::read_export_file(path));
}

void export_function(const std::string& path, const std::function<std::vector<array>(const std::vector<array>&)>& fun,
                     const std::vector<array>& example_args, bool shapeless) {
  std::vector<array> ph;
  for (auto& a : example_args) ph.push_back(compiler::placeholder(a.shape(), a.dtype()));
  std::vector<array> outs;
  {
    compiler::FunctionTrace scope;
    outs = fun(ph);
  }
  auto tr = compiler::export_trace(ph, outs, static_cast<int>(ph.size()), {});
  compiler::write_export_file(path, compiler::serialize_function({tr}, shapeless, ""));
}

}  // namespace ember
