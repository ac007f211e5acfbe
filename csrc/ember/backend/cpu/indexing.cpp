// Gather and scatter kernels. Both first resolve the index arrays into one
// element offset per index position (checking every value: an index out of
// range raises IndexError before anything is read or written), then move
// whole blocks of the non-indexed dims: one element, a memcpy, or a strided
// run, depending on the layout.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>

#include "ember/backend/cpu/copy.h"
#include "ember/backend/cpu/functors.h"
#include "ember/backend/cpu/kernel_utils.h"
#include "ember/backend/cpu/loops.h"
#include "ember/primitives/indexing.h"

namespace ember {

namespace {

// The first out-of-range index seen by any thread.
struct IndexError {
  std::atomic<bool> bad{false};
  std::mutex mu;
  std::string value;
  int axis = 0;
  int64_t size = 0;

  template <class T>
  void record(T v, int ax, int64_t n) {
    std::lock_guard<std::mutex> l(mu);
    if (bad.load()) return;
    value = std::to_string(v);
    axis = ax;
    size = n;
    bad.store(true);
  }
  void raise_if_any(const char* op) const {
    if (!bad.load()) return;
    throw std::out_of_range(std::string("[") + op + "] Index " + value + " is out of bounds for axis " +
                            std::to_string(axis) + " with size " + std::to_string(size) + ".");
  }
};

struct IndexedAxis {
  int axis;        // reported in errors
  int64_t size;    // valid indices: [-size, size)
  int64_t stride;  // elements
};

constexpr int64_t kChunk = 512;  // index positions resolved at a time

// Calls sink(p0, offs, n) for consecutive runs [p0, p0 + n) of the index
// space `space` (row-major), offs[i] being sum_j wrap(idx_j[p0 + i]) *
// axes[j].stride in elements; the index arrays are read with their own
// strides. Runs go to both cores when `parallel`, else in order. A value
// outside [-size, size) is recorded in err (its run is not passed on).
// (Not a template: the sink is called once per chunk of kChunk offsets, so
// erasing its type costs nothing and the index loops are compiled once.)
using OffsetSink = void (*)(void* ctx, int64_t p0, const int64_t* offs, int64_t n);
void visit_offsets_impl(const std::vector<array>& idx, const Shape& space, const std::vector<IndexedAxis>& axes,
                        bool parallel, IndexError& err, OffsetSink sink_fn, void* sink_ctx, int64_t work_per_index) {
  auto sink = [&](int64_t p0, const int64_t* offs, int64_t n) { sink_fn(sink_ctx, p0, offs, n); };
  int64_t total = 1;
  for (int64_t d : space) total *= d;
  if (total == 0) return;
  int nd = static_cast<int>(space.size());
  int64_t inner = nd ? space.back() : 1;
  int64_t rows = total / inner;
  int64_t per_row = (inner + kChunk - 1) / kChunk;  // chunks per row
  auto run_chunks = [&](int64_t c_begin, int64_t c_end) {
    std::vector<int64_t> pos(std::max(nd - 1, 0));
    int64_t buf[kChunk];
    for (int64_t c = c_begin; c < c_end; ++c) {
      int64_t r = c / per_row, c0 = (c % per_row) * kChunk;
      int64_t rem = r;  // multi-index of row r over the outer dims
      for (int d = nd - 2; d >= 0; --d) {
        pos[d] = rem % space[d];
        rem /= space[d];
      }
      {
        int64_t n = std::min(kChunk, inner - c0);
        bool ok = true;
        for (size_t j = 0; j < idx.size(); ++j) {
          const array& ix = idx[j];
          int64_t base = 0;
          for (int d = 0; d < nd - 1; ++d) base += pos[d] * ix.strides()[d];
          int64_t st = nd ? ix.strides()[nd - 1] : 0;
          base += c0 * st;
          const IndexedAxis ax = axes[j];
          dispatch_all(ix.dtype(), [&](auto tag) {
            using T = typename decltype(tag)::type;
            if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
              const T* p = ix.data<T>() + base;
              const int64_t size = ax.size, stride = ax.stride;
              bool bad = false;
              // branch-free wrap and check; the offending value is found
              // afterwards, on the rare failing chunk
              auto wrap = [&](T v) {
                int64_t k = static_cast<int64_t>(v);
                if constexpr (std::is_unsigned_v<T>) {
                  bad |= static_cast<uint64_t>(v) >= static_cast<uint64_t>(size);
                } else {
                  k += (k >> 63) & size;  // negative: count from the end
                  bad |= static_cast<uint64_t>(k) >= static_cast<uint64_t>(size);
                }
                return k * stride;
              };
              if (j == 0 && st == 1 && stride == 1) {
                // the common element index: no multiply, so it vectorizes
                for (int64_t i = 0; i < n; ++i) {
                  int64_t k = static_cast<int64_t>(p[i]);
                  if constexpr (std::is_signed_v<T>) k += (k >> 63) & size;
                  bad |= static_cast<uint64_t>(k) >= static_cast<uint64_t>(size);
                  buf[i] = k;
                }
              } else if (j == 0 && st == 1) {
                for (int64_t i = 0; i < n; ++i) buf[i] = wrap(p[i]);
              } else if (j == 0) {
                for (int64_t i = 0; i < n; ++i) buf[i] = wrap(p[i * st]);
              } else {
                for (int64_t i = 0; i < n; ++i) buf[i] += wrap(p[i * st]);
              }
              if (bad) {
                ok = false;
                for (int64_t i = 0; i < n; ++i) {
                  T v = p[i * st];
                  bool neg = false;
                  if constexpr (std::is_signed_v<T>) neg = v < 0;
                  bool out_of_range = neg ? static_cast<int64_t>(v) < -size
                                          : static_cast<uint64_t>(v) >= static_cast<uint64_t>(size);
                  if (out_of_range) {
                    err.record(v, ax.axis, ax.size);
                    break;
                  }
                }
              }
            }  // other dtypes are rejected when the node is built
          });
        }
        if (ok) sink(r * inner + c0, static_cast<const int64_t*>(buf), n);
      }
    }
  };
  int64_t chunks = rows * per_row;
  if (parallel) {
    int64_t per_chunk = kChunk * std::max<int64_t>(work_per_index, 4);
    cpu::parallel_for(chunks, std::max<int64_t>(1, cpu::kParallelGrain / per_chunk), run_chunks);
  } else {
    run_chunks(0, chunks);
  }
}

template <class Sink>
void visit_offsets(const std::vector<array>& idx, const Shape& space, const std::vector<IndexedAxis>& axes,
                   bool parallel, IndexError& err, Sink&& sink, int64_t work_per_index = 1) {
  using S = std::remove_reference_t<Sink>;
  visit_offsets_impl(
      idx, space, axes, parallel, err,
      [](void* ctx, int64_t p0, const int64_t* offs, int64_t n) { (*static_cast<S*>(ctx))(p0, offs, n); },
      const_cast<void*>(static_cast<const void*>(&sink)), work_per_index);
}

// A block of the non-indexed dims: shape and the strides of both sides,
// with size-1 dims dropped and contiguous dims merged.
struct Block {
  Shape shape;
  Strides a, b;
  int64_t size = 1;
};

Block make_block(const Shape& shape, const Strides& a, const Strides& b) {
  Block blk;
  for (size_t i = 0; i < shape.size(); ++i) {
    blk.size *= shape[i];
    if (shape[i] == 1) continue;
    if (!blk.shape.empty() && blk.a.back() == a[i] * shape[i] && blk.b.back() == b[i] * shape[i]) {
      blk.shape.back() *= shape[i];
      blk.a.back() = a[i];
      blk.b.back() = b[i];
    } else {
      blk.shape.push_back(shape[i]);
      blk.a.push_back(a[i]);
      blk.b.push_back(b[i]);
    }
  }
  return blk;
}

// Calls f(a_offset, b_offset, n, a_stride, b_stride) for each innermost run
// of the block (sequential; the caller parallelizes).
template <class F>
void for_each_run(const Block& blk, F&& f) {
  int nd = static_cast<int>(blk.shape.size());
  if (nd == 0) {
    f(int64_t(0), int64_t(0), int64_t(1), int64_t(1), int64_t(1));
    return;
  }
  int64_t n = blk.shape[nd - 1], sa = blk.a[nd - 1], sb = blk.b[nd - 1];
  if (nd == 1) {
    f(int64_t(0), int64_t(0), n, sa, sb);
    return;
  }
  int64_t small[8] = {0};
  std::vector<int64_t> large(nd > 8 ? nd : 0, 0);
  int64_t* pos = nd > 8 ? large.data() : small;
  int64_t oa = 0, ob = 0;
  while (true) {
    f(oa, ob, n, sa, sb);
    int d = nd - 2;
    for (; d >= 0; --d) {
      oa += blk.a[d];
      ob += blk.b[d];
      if (++pos[d] < blk.shape[d]) break;
      oa -= blk.a[d] * blk.shape[d];
      ob -= blk.b[d] * blk.shape[d];
      pos[d] = 0;
    }
    if (d < 0) return;
  }
}

// Gathers only move bytes: an unsigned type of the item's size.
template <class F>
void dispatch_bits(int itemsize, F&& f) {
  switch (itemsize) {
    case 1: return f(Tag<uint8_t>{});
    case 2: return f(Tag<uint16_t>{});
    case 4: return f(Tag<uint32_t>{});
    default: return f(Tag<uint64_t>{});
  }
}

}  // namespace

bool Gather::is_equivalent(const Primitive& o) const {
  auto* g = dynamic_cast<const Gather*>(&o);
  return g && g->axes_ == axes_;
}

void Gather::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& src = inputs[0];
  array& out = outputs[0];
  out.alloc();
  std::vector<array> idx(inputs.begin() + 1, inputs.end());
  const Shape& space = idx[0].shape();
  std::vector<IndexedAxis> axes;
  for (int ax : axes_) axes.push_back({ax, src.shape()[ax], src.strides()[ax]});
  Shape rest;
  Strides rest_src;
  for (int d = 0; d < src.ndim(); ++d) {
    if (std::find(axes_.begin(), axes_.end(), d) == axes_.end()) {
      rest.push_back(src.shape()[d]);
      rest_src.push_back(src.strides()[d]);
    }
  }
  Block blk = make_block(rest, row_strides(rest), rest_src);
  if (out.size() == 0) return;
  IndexError err;
  dispatch_bits(out.itemsize(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* s = src.data<U>();
    U* o = out.data<U>();
    int64_t bs = blk.size;
    bool dense = blk.shape.size() == 1 && blk.b[0] == 1;
    visit_offsets(idx, space, axes, true, err, [&](int64_t p0, const int64_t* offs, int64_t n) {
      if (bs == 1) {
        U* op = o + p0;
        int64_t i = 0;
        for (; i + 16 < n; ++i) {
          __builtin_prefetch(s + offs[i + 16]);
          op[i] = s[offs[i]];
        }
        for (; i < n; ++i) op[i] = s[offs[i]];
        return;
      }
      for (int64_t i = 0; i < n; ++i) {
        U* op = o + (p0 + i) * bs;
        const U* sp = s + offs[i];
        if (dense) {
          if (i + 2 < n) {  // start fetching a later block's first lines
            const char* next = reinterpret_cast<const char*>(s + offs[i + 2]);
            __builtin_prefetch(next);
            __builtin_prefetch(next + 64);
          }
          std::memcpy(op, sp, static_cast<size_t>(bs) * sizeof(U));
          continue;
        }
        for_each_run(blk, [&](int64_t oa, int64_t ob, int64_t len, int64_t sa, int64_t sb) {
          for (int64_t k = 0; k < len; ++k) op[oa + k * sa] = sp[ob + k * sb];
        });
      }
    }, blk.size);
  });
  err.raise_if_any("gather");
}

const char* Scatter::name() const {
  switch (kind_) {
    case ScatterKind::Add: return "ScatterAdd";
    case ScatterKind::Prod: return "ScatterProd";
    case ScatterKind::Max: return "ScatterMax";
    case ScatterKind::Min: return "ScatterMin";
    default: return "Scatter";
  }
}

bool Scatter::is_equivalent(const Primitive& o) const {
  auto* g = dynamic_cast<const Scatter*>(&o);
  return g && g->view_ == view_ && g->axes_ == axes_ && g->kind_ == kind_;
}

namespace {

template <class T, ScatterKind K>
inline void combine(T& dst, T v) {
  using C = compute_t<T>;
  if constexpr (K == ScatterKind::Assign) {
    dst = v;
  } else if constexpr (K == ScatterKind::Add) {
    dst = static_cast<T>(cpu::Fn<op::Add>{}(static_cast<C>(dst), static_cast<C>(v)));
  } else if constexpr (K == ScatterKind::Prod) {
    dst = static_cast<T>(cpu::Fn<op::Multiply>{}(static_cast<C>(dst), static_cast<C>(v)));
  } else if constexpr ((K == ScatterKind::Max || K == ScatterKind::Min) && std::is_floating_point_v<C>) {
    // selects, not branches (random data mispredicts): NaN propagates
    C a = static_cast<C>(dst), b = static_cast<C>(v);
    C m = (K == ScatterKind::Max ? b > a : b < a) ? b : a;
    dst = static_cast<T>(b != b ? b : m);
  } else if constexpr (K == ScatterKind::Max) {
    dst = static_cast<T>(cpu::Fn<op::Maximum>{}(static_cast<C>(dst), static_cast<C>(v)));
  } else {
    dst = static_cast<T>(cpu::Fn<op::Minimum>{}(static_cast<C>(dst), static_cast<C>(v)));
  }
}

// Whether offsets `st` over `shape` are p * step for the row-major position p.
bool linear_offsets(const Shape& shape, const Strides& st, int64_t& step) {
  step = 0;
  int64_t inner = 1;
  bool found = false;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] == 1) continue;
    if (!found) {
      step = st[d];
      found = true;
    } else if (st[d] != step * inner) {
      return false;
    }
    inner *= shape[d];
  }
  return true;
}

// Applies one block of updates at out + off from upd + uo.
template <class T, ScatterKind K>
inline void apply_block(T* op, const T* up, const Block& blk) {
  if (blk.size == 1) {
    combine<T, K>(*op, *up);
  } else if (blk.size >= cpu::kParallelGrain && blk.shape.size() == 1) {
    // one long run: split it across the cores
    int64_t sa = blk.a[0], sb = blk.b[0];
    cpu::parallel_for(blk.shape[0], cpu::kParallelGrain, [&](int64_t b, int64_t e) {
      for (int64_t j = b; j < e; ++j) combine<T, K>(op[j * sa], up[j * sb]);
    });
  } else if (blk.size >= cpu::kParallelGrain) {
    // one large block: split its outer dim across the cores
    Block sub = blk;
    sub.shape.erase(sub.shape.begin());
    sub.a.erase(sub.a.begin());
    sub.b.erase(sub.b.begin());
    cpu::parallel_for(blk.shape[0], 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        T* oi = op + i * blk.a[0];
        const T* ui = up + i * blk.b[0];
        for_each_run(sub, [&](int64_t oa, int64_t ob, int64_t len, int64_t sa, int64_t sb) {
          for (int64_t j = 0; j < len; ++j) combine<T, K>(oi[oa + j * sa], ui[ob + j * sb]);
        });
      }
    });
  } else {
    for_each_run(blk, [&](int64_t oa, int64_t ob, int64_t len, int64_t sa, int64_t sb) {
      for (int64_t j = 0; j < len; ++j) combine<T, K>(op[oa + j * sa], up[ob + j * sb]);
    });
  }
}

// out[wbase + offs[p] + block] (op)= upd[uoff(p) + block] for p in order (the
// last write wins for Assign; accumulation is sequential per position).
// [out_lo, out_hi) bounds the offsets (relative to o) that can occur.
template <class T, ScatterKind K>
void scatter_apply(T* o, const T* u, const std::vector<array>& idx, const Shape& space,
                   const std::vector<IndexedAxis>& axes, const Strides& u_space, const Block& blk, IndexError& err,
                   int64_t out_lo, int64_t out_hi) {
  int64_t ustep = 0;
  bool linear = linear_offsets(space, u_space, ustep);
  int nd = static_cast<int>(space.size());
  std::vector<int64_t> pos(nd, 0);
  int64_t uo = 0;
  auto next = [&] {  // advance uo to the next row-major position
    for (int d = nd - 1; d >= 0; --d) {
      uo += u_space[d];
      if (++pos[d] < space[d]) return;
      uo -= u_space[d] * space[d];
      pos[d] = 0;
    }
  };
  auto sink = [&](int64_t p0, const int64_t* offs, int64_t n) {
    if (linear && blk.size == 1) {
      const T* up = u + p0 * ustep;
      int64_t i = 0;
      for (; i + 16 < n; ++i) {
        __builtin_prefetch(o + offs[i + 16], 1);
        combine<T, K>(o[offs[i]], up[i * ustep]);
      }
      for (; i < n; ++i) combine<T, K>(o[offs[i]], up[i * ustep]);
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      apply_block<T, K>(o + offs[i], u + (linear ? (p0 + i) * ustep : uo), blk);
      if (!linear) next();
    }
  };
  if (idx.empty()) {
    int64_t zero = 0;
    sink(0, &zero, 1);
    return;
  }
  int64_t n = 1;
  for (int64_t d : space) n *= d;
  int nt = cpu::num_threads();
  // Splitting pays when the random writes miss the caches: a large target.
  if (linear && blk.size == 1 && nt > 1 && n >= cpu::kParallelGrain && out_hi - out_lo >= (int64_t(1) << 23)) {
    // Each thread owns a range of destination offsets and applies, in index
    // order, only the updates that land there: per destination the order of
    // application is the serial one, so results are bitwise the same.
    int64_t lo_all = out_lo, span = out_hi - out_lo;
    cpu::parallel_for(nt, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        int64_t lo = lo_all + span * t / nt, hi = lo_all + span * (t + 1) / nt;
        visit_offsets(idx, space, axes, false, err, [&](int64_t p0, const int64_t* offs, int64_t m) {
          const T* up = u + p0 * ustep;
          int32_t sel[kChunk];  // the run's positions this thread owns (branch-free)
          int64_t cnt = 0;
          for (int64_t i = 0; i < m; ++i) {
            sel[cnt] = static_cast<int32_t>(i);
            cnt += (offs[i] >= lo) & (offs[i] < hi);
          }
          for (int64_t k = 0; k < cnt; ++k) {
            if (k + 16 < cnt) __builtin_prefetch(o + offs[sel[k + 16]], 1);
            combine<T, K>(o[offs[sel[k]]], up[sel[k] * ustep]);
          }
        });
      }
    });
    return;
  }
  visit_offsets(idx, space, axes, false, err, sink);
}

}  // namespace

void Scatter::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& dst = inputs[0];
  const array& upd = inputs.back();
  array& out = outputs[0];
  // the result starts as dst: its buffer when only this node holds it
  bool donated = cpu::can_donate(dst, out);
  if (donated) {
    out.set_data(dst.buffer());
  } else {
    out.alloc();
    cpu::copy_to_dense(dst, out.raw_data());
  }
  std::vector<array> idx(inputs.begin() + 1, inputs.end() - 1);
  Shape space = idx.empty() ? Shape{} : idx[0].shape();
  int64_t n_space = 1;
  for (int64_t d : space) n_space *= d;
  if (n_space == 0 || upd.size() == 0) return;
  // the window in out's (dense) layout
  Strides os = row_strides(out.shape());
  int vn = static_cast<int>(view_.dims.size());
  Strides ws(vn);
  int64_t wbase = 0;
  for (int i = 0; i < vn; ++i) {
    int d = view_.dims[i];
    ws[i] = d < 0 ? 0 : view_.step[i] * os[d];
    if (d >= 0) wbase += view_.start[i] * os[d];
  }
  std::vector<IndexedAxis> axes;
  for (int ax : axes_) axes.push_back({ax, view_.size[ax], ws[ax]});
  Shape rest;
  Strides rest_out, rest_upd;
  int ns = static_cast<int>(space.size());
  for (int i = 0, r = 0; i < vn; ++i) {
    if (std::find(axes_.begin(), axes_.end(), i) != axes_.end()) continue;
    rest.push_back(view_.size[i]);
    rest_out.push_back(ws[i]);
    rest_upd.push_back(upd.strides()[ns + r++]);
  }
  Block blk = make_block(rest, rest_out, rest_upd);
  // A donated buffer is the input's: check every index before writing. A
  // fresh copy is ours alone, so a bad index is reported after the pass.
  IndexError err;
  if (donated) {
    visit_offsets(idx, space, axes, true, err, [](int64_t, const int64_t*, int64_t) {});
    err.raise_if_any("scatter");
  }
  Strides u_space(upd.strides().begin(), upd.strides().begin() + ns);
  char* base = static_cast<char*>(out.raw_data()) + wbase * out.itemsize();
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = reinterpret_cast<T*>(base);
    const T* u = upd.data<T>();
    switch (kind_) {
#define EMBER_SCATTER_CASE(K) \
  case ScatterKind::K: return scatter_apply<T, ScatterKind::K>(o, u, idx, space, axes, u_space, blk, err, \
                                                          -wbase, out.size() - wbase);
      EMBER_SCATTER_CASE(Assign)
      EMBER_SCATTER_CASE(Add)
      EMBER_SCATTER_CASE(Prod)
      EMBER_SCATTER_CASE(Max)
      EMBER_SCATTER_CASE(Min)
#undef EMBER_SCATTER_CASE
    }
  });
  err.raise_if_any("scatter");
}

}  // namespace ember
