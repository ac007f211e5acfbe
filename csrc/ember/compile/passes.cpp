// compile's simplification passes over a tape (compile.h), each one linear in
// the tape's size (hash maps, no recursion), and each deciding from the
// primitives' traits and is_equivalent, never from op names:
//   1. constants: one value per distinct captured array (the same descriptor,
//      or the same view of the same buffer); small equal constants (scalars
//      and arrays of at most 16 elements with equal dtype, shape and bytes)
//      merged into one.
//   2. common subexpressions: a step with the same inputs, output shapes and
//      dtypes as an earlier one, whose primitive is_equivalent to that one's,
//      is replaced by it.
//   3. no-ops: a view (is_view) that does not stop gradients, with one input
//      and an output of that input's shape and dtype whose layout equals the
//      input's (checked by running the view's kernel on a probe of the input
//      layout: a view reads no data) is replaced by its input.
//   4. dead steps and constants (that no output needs) are dropped, and the
//      value ids renumbered.
#include <cstring>
#include <functional>
#include <string>
#include <typeindex>
#include <unordered_map>

#include "ember/compile/compile.h"
#include "ember/eval.h"

namespace ember::compiler {

namespace {

size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

size_t shape_hash(const Shape& s) {
  size_t h = s.size();
  for (auto d : s) h = mix(h, static_cast<size_t>(d));
  return h;
}

// The bytes of a small constant in row-major order (empty when it is not a
// small evaluated constant).
std::string small_bytes(const array& a) {
  if (!a.is_evaluated() || !a.buffer() || a.size() > 16) return {};
  std::string out;
  int item = a.itemsize();
  out.reserve(static_cast<size_t>(a.size()) * item);
  std::vector<int64_t> idx(a.ndim(), 0);
  const char* base = static_cast<const char*>(a.raw_data());
  for (int64_t n = 0; n < a.size(); ++n) {
    int64_t off = 0;
    for (int d = 0; d < a.ndim(); ++d) off += idx[d] * a.strides()[d];
    out.append(base + off * item, item);
    for (int d = a.ndim() - 1; d >= 0; --d) {
      if (++idx[d] < a.shape(d)) break;
      idx[d] = 0;
    }
  }
  return out;
}

// Whether a single-input view step leaves its input as it is.
bool is_noop_view(const Step& st, const Shape& in_shape, Dtype in_dtype) {
  const Primitive& p = *st.prim;
  if (!p.is_view() || p.stops_gradient() || st.inputs.size() != 1 || st.shapes.size() != 1) return false;
  if (st.shapes[0] != in_shape || st.dtypes[0] != in_dtype) return false;
  int64_t n = 1;
  for (auto d : in_shape) n *= d;
  if (n == 0) return false;
  // a probe of the input's dense layout on a buffer no kernel reads (views alias, never read)
  static char probe_byte alignas(64)[64];
  size_t nbytes = static_cast<size_t>(n) * size_of(in_dtype);
  try {
    auto buf = Buffer::borrowed(probe_byte, nbytes, {}, true);
    array in = array::from_buffer(buf, in_shape, in_dtype, row_strides(in_shape), 0, "compile");
    auto d = std::make_shared<ArrayDesc>();
    d->shape = st.shapes[0];
    d->size = n;
    d->dtype = st.dtypes[0];
    d->strides = row_strides(st.shapes[0]);
    std::vector<array> outs{array(d)};
    st.prim->eval_cpu({in}, outs);
    const array& o = outs[0];
    if (o.buffer() != buf || o.offset() != 0) return false;
    for (size_t k = 0; k < in_shape.size(); ++k) {
      if (in_shape[k] > 1 && o.strides()[k] != in.strides()[k]) return false;
    }
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

PassStats simplify(Tape& tape) {
  PassStats stats;
  stats.steps_before = static_cast<int64_t>(tape.steps.size());
  stats.constants_before = tape.n_constants();
  const int n_in = tape.n_inputs();
  const int n_const = tape.n_constants();
  std::vector<int> canon(tape.n_values);
  for (int v = 0; v < tape.n_values; ++v) canon[v] = v;

  // 1. constants
  {
    std::unordered_map<std::string, int> keys;
    keys.reserve(static_cast<size_t>(n_const) * 2);
    std::string key;
    auto put = [&](int64_t x) { key.append(reinterpret_cast<const char*>(&x), sizeof(x)); };
    for (int c = 0; c < n_const; ++c) {
      array& a = tape.constants[c];
      if (!a.is_evaluated() && !a.is_tracer()) eval({a});  // captured lazy constants are computed once, now
      if (!a.is_evaluated() || !a.buffer()) continue;
      key.clear();
      std::string b = small_bytes(a);
      bool small = !b.empty() || a.size() == 0;
      put(small ? 0 : 1);
      put(static_cast<int64_t>(a.dtype()));
      put(a.ndim());
      for (auto d : a.shape()) put(d);
      if (small) {
        key += b;  // equal values
      } else {
        // the same view of the same buffer
        put(static_cast<int64_t>(reinterpret_cast<uintptr_t>(a.buffer().get())));
        put(a.offset());
        for (auto st : a.strides()) put(st);
      }
      auto [it, fresh] = keys.emplace(key, n_in + c);
      if (!fresh) canon[n_in + c] = it->second;
    }
  }

  // 2 and 3, in one forward pass
  std::unordered_multimap<size_t, size_t> seen;  // hash -> step index
  std::vector<bool> keep(tape.steps.size(), true);
  for (size_t i = 0; i < tape.steps.size(); ++i) {
    Step& st = tape.steps[i];
    for (int& k : st.inputs) k = canon[k];
    if (st.inputs.size() == 1 && is_noop_view(st, tape.value_shape(st.inputs[0]), tape.value_dtype(st.inputs[0]))) {
      canon[st.first_out] = st.inputs[0];
      keep[i] = false;
      continue;
    }
    size_t h = std::hash<std::type_index>()(std::type_index(typeid(*st.prim)));
    for (int k : st.inputs) h = mix(h, static_cast<size_t>(k));
    for (size_t j = 0; j < st.shapes.size(); ++j) {
      h = mix(mix(h, shape_hash(st.shapes[j])), static_cast<size_t>(st.dtypes[j]));
    }
    bool merged = false;
    auto range = seen.equal_range(h);
    for (auto it = range.first; it != range.second; ++it) {
      const Step& o = tape.steps[it->second];
      if (o.inputs == st.inputs && o.shapes == st.shapes && o.dtypes == st.dtypes &&
          typeid(*o.prim) == typeid(*st.prim) && st.prim->is_equivalent(*o.prim)) {
        for (size_t j = 0; j < st.shapes.size(); ++j) canon[st.first_out + j] = o.first_out + static_cast<int>(j);
        keep[i] = false;
        merged = true;
        break;
      }
    }
    if (!merged) seen.emplace(h, i);
  }
  for (int& o : tape.outputs) o = canon[o];

  // 4. dead code: mark backwards from the outputs
  std::vector<bool> used(tape.n_values, false);
  for (int o : tape.outputs) used[o] = true;
  for (size_t i = tape.steps.size(); i-- > 0;) {
    if (!keep[i]) continue;
    const Step& st = tape.steps[i];
    bool any = false;
    for (size_t j = 0; j < st.shapes.size(); ++j) any = any || used[st.first_out + j];
    if (!any) {
      keep[i] = false;
      continue;
    }
    for (int k : st.inputs) used[k] = true;
  }
  // renumber: inputs keep their ids, then the used constants, then the kept steps' outputs
  std::vector<int> id(tape.n_values, -1);
  for (int v = 0; v < n_in; ++v) id[v] = v;
  std::vector<array> consts;
  for (int c = 0; c < n_const; ++c) {
    if (used[n_in + c]) {
      id[n_in + c] = n_in + static_cast<int>(consts.size());
      consts.push_back(tape.constants[c]);
    }
  }
  int next = n_in + static_cast<int>(consts.size());
  std::vector<Step> steps;
  for (size_t i = 0; i < tape.steps.size(); ++i) {
    if (!keep[i]) continue;
    Step st = std::move(tape.steps[i]);
    for (int& k : st.inputs) k = id[k];
    for (size_t j = 0; j < st.shapes.size(); ++j) id[st.first_out + j] = next + static_cast<int>(j);
    st.first_out = next;
    next += static_cast<int>(st.shapes.size());
    steps.push_back(std::move(st));
  }
  for (int& o : tape.outputs) o = id[o];
  tape.constants = std::move(consts);
  tape.steps = std::move(steps);
  tape.n_values = next;
  stats.steps_after = static_cast<int64_t>(tape.steps.size());
  stats.constants_after = tape.n_constants();
  return stats;
}

}  // namespace ember::compiler
