// compile's tape: recording a traced graph, rebuilding it on the placeholders
// for the fusion hook, replaying it on real inputs (with the shapeless shape
// rules), printing it and estimating its cost. The passes are in passes.cpp.
#include <algorithm>
#include <atomic>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "ember/compile/compile.h"
#include "ember/compile/fuse.h"
#include "ember/eval.h"
#include "ember/ops.h"
#include "ember/primitives/linalg.h"
#include "ember/primitives/reduce.h"
#include "ember/primitives/shape.h"
#include "ember/primitives/transform.h"

namespace ember {

// make_nodes<ReusePrimitive> (declared in compile.h): a node of an existing
// primitive, so neither array.h nor primitive.h changes.
template <>
std::vector<array> make_nodes<compiler::ReusePrimitive, const std::shared_ptr<Primitive>&>(
    std::vector<Shape> shapes, std::vector<Dtype> dtypes, std::vector<array> inputs,
    const std::shared_ptr<Primitive>& prim) {
  return array::make_arrays(std::move(shapes), dtypes, prim, std::move(inputs));
}

namespace compiler {

namespace {

// A compiled function's traced input: no value until the call replays the
// tape on a real one.
class CompileInput final : public Primitive {
 public:
  using Primitive::Primitive;
  const char* name() const override { return "CompileInput"; }
  void eval_cpu(const std::vector<array>&, std::vector<array>& outputs) override {
    throw std::invalid_argument(
        "[compile] Attempting to evaluate an array that depends on the inputs of a compiled function (of shape " +
        shape_str(outputs[0].shape()) +
        "); arrays cannot be evaluated (printed, converted, branched on) while compile traces a function.");
  }
};

std::vector<array> build(const std::shared_ptr<Primitive>& prim, std::vector<Shape> shapes,
                         std::vector<Dtype> dtypes, std::vector<array> inputs) {
  return make_nodes<ReusePrimitive>(std::move(shapes), std::move(dtypes), std::move(inputs), prim);
}

std::string dtype_short(Dtype t) {
  switch (t) {
    case Dtype::bool_: return "bool";
    case Dtype::uint8: return "u8";
    case Dtype::uint16: return "u16";
    case Dtype::uint32: return "u32";
    case Dtype::uint64: return "u64";
    case Dtype::int8: return "i8";
    case Dtype::int16: return "i16";
    case Dtype::int32: return "i32";
    case Dtype::int64: return "i64";
    case Dtype::float16: return "f16";
    case Dtype::bfloat16: return "bf16";
    case Dtype::float32: return "f32";
    case Dtype::float64: return "f64";
    case Dtype::complex64: return "c64";
  }
  return dtype_name(t);
}

std::string value_name(int v) {
  std::string s;
  int x = v;
  do {
    s.insert(s.begin(), static_cast<char>('a' + x % 26));
    x = x / 26 - 1;
  } while (x >= 0);
  return s;
}

// Shapeless replay: the output shapes of a step whose input shapes changed.
// Returns the outputs, built either with the step's own primitive and new
// shapes or through the public op of its family.
std::vector<array> reshaped_step(const Step& st, const std::vector<array>& ins, const std::vector<Shape>& traced_in) {
  const Primitive& p = *st.prim;
  auto fail_rule = [&](const char* why) -> std::vector<array> {
    std::ostringstream os;
    os << "[compile] shapeless: primitive " << p.name() << " cannot be replayed on new input shapes (";
    for (size_t i = 0; i < ins.size(); ++i) os << (i ? ", " : "") << shape_str(ins[i].shape());
    os << " where the trace had ";
    for (size_t i = 0; i < traced_in.size(); ++i) os << (i ? ", " : "") << shape_str(traced_in[i]);
    os << "): " << why << " Compile with shapeless=False to retrace for each shape.";
    throw std::invalid_argument(os.str());
  };
  for (size_t i = 0; i < ins.size(); ++i) {
    if (ins[i].ndim() != static_cast<int>(traced_in[i].size())) fail_rule("the rank of an input changed.");
  }
  if (auto c = dynamic_cast<const compile::Compiled*>(&p); c && c->program().rows) {
    // a row program: full outputs of the inputs' broadcast shape, row scalars of it with the last axis 1
    Shape full;
    for (auto& in : ins) full = broadcast_shapes(full, in.shape());
    if (full.empty()) return fail_rule("a reduction over the last axis needs an axis.");
    Shape scalar = full;
    scalar.back() = 1;
    std::vector<Shape> shapes;
    for (int o : c->program().outputs) shapes.push_back(c->program().row_scalar[o] ? scalar : full);
    return build(st.prim, shapes, st.dtypes, ins);
  }
  if (p.is_elementwise()) {
    Shape out;
    for (auto& in : ins) out = broadcast_shapes(out, in.shape());
    std::vector<Shape> shapes(st.shapes.size(), out);
    return build(st.prim, shapes, st.dtypes, ins);
  }
  if (auto r = dynamic_cast<const Reduce*>(&p)) {
    Shape out = ins[0].shape();
    for (int ax : r->axes()) out.at(ax < 0 ? ax + out.size() : ax) = 1;
    return build(st.prim, {out}, st.dtypes, ins);
  }
  if (dynamic_cast<const Softmax*>(&p)) return build(st.prim, {ins[0].shape()}, st.dtypes, ins);
  // the identities (logsumexp's shift passes through a stop_gradient)
  if (dynamic_cast<const StopGradient*>(&p) || dynamic_cast<const Identity*>(&p))
    return build(st.prim, {ins[0].shape()}, st.dtypes, ins);
  if (dynamic_cast<const Matmul*>(&p)) {
    // a (..., M, K) @ b (..., K, N) with equal batch dims (the op layer broadcast them at trace time)
    const Shape& a = ins[0].shape();
    const Shape& b = ins[1].shape();
    if (a.size() < 2 || b.size() < 2 || a[a.size() - 1] != b[b.size() - 2] ||
        !std::equal(a.begin(), a.end() - 2, b.begin(), b.end() - 2)) {
      return fail_rule("the operands no longer line up (a (..., M, K) and b (..., K, N) of equal batch dims).");
    }
    Shape out(a.begin(), a.end() - 1);
    out.push_back(b.back());
    return build(st.prim, {out}, st.dtypes, ins);
  }
  if (auto t = dynamic_cast<const Transpose*>(&p)) {
    Shape out;
    for (int ax : t->axes()) out.push_back(ins[0].shape(ax));
    return build(st.prim, {out}, st.dtypes, ins);
  }
  if (dynamic_cast<const Broadcast*>(&p)) {
    // each output dim follows the input dim it came from; dims broadcasting added or stretched keep the trace's
    const Shape& to = st.shapes[0];
    const Shape& from = traced_in[0];
    Shape out = to;
    size_t off = to.size() - from.size();
    for (size_t i = 0; i < from.size(); ++i) {
      if (from[i] == to[off + i]) out[off + i] = ins[0].shape()[i];
    }
    return {broadcast_to(ins[0], out)};
  }
  if (dynamic_cast<const Reshape*>(&p)) {
    // only reshapes that insert or drop size-1 dims (squeeze, expand_dims, keepdims=False)
    const Shape& from = traced_in[0];
    const Shape& to = st.shapes[0];
    Shape out;
    size_t i = 0, j = 0;
    while (i < from.size() || j < to.size()) {
      if (i < from.size() && j < to.size() && from[i] == to[j] && (from[i] != 1 || ins[0].shape()[i] == 1)) {
        out.push_back(ins[0].shape()[i]);
        ++i, ++j;
      } else if (i < from.size() && from[i] == 1) {
        if (ins[0].shape()[i] != 1) fail_rule("it drops a dim that is no longer of size 1.");
        ++i;
      } else if (j < to.size() && to[j] == 1) {
        out.push_back(1);
        ++j;
      } else {
        return fail_rule("it reshapes to a shape fixed at trace time.");
      }
    }
    return {reshape(ins[0], out)};
  }
  return fail_rule("it has no shape rule.");
}

}  // namespace

array placeholder(const Shape& shape, Dtype dtype) {
  array p = make_node<CompileInput>(shape, dtype, {}, to_stream({}));
  p.set_tracer(true);
  return p;
}

bool is_placeholder(const array& a) {
  return a.valid() && a.has_primitive() && dynamic_cast<const CompileInput*>(&a.primitive()) != nullptr;
}

namespace {
thread_local int t_function_traces = 0;
std::atomic<bool> g_compile_enabled{true};
}  // namespace

FunctionTrace::FunctionTrace() { ++t_function_traces; }
FunctionTrace::~FunctionTrace() { --t_function_traces; }
bool tracing_function() { return t_function_traces > 0; }

void set_compile_enabled(bool on) { g_compile_enabled.store(on); }
bool compile_enabled() { return g_compile_enabled.load(std::memory_order_relaxed); }

// The step whose outputs hold value v (a step output: v past the inputs and
// constants); steps' first_out increase.
const Step& Tape::step_of(int v) const {
  auto it = std::upper_bound(steps.begin(), steps.end(), v,
                             [](int x, const Step& s) { return x < s.first_out; });
  return *(it - 1);
}

Shape Tape::value_shape(int v) const {
  if (v < n_inputs()) return in_shapes[v];
  if (v < n_inputs() + n_constants()) return constants[v - n_inputs()].shape();
  const Step& s = step_of(v);
  return s.shapes.at(v - s.first_out);
}

Dtype Tape::value_dtype(int v) const {
  if (v < n_inputs()) return in_dtypes[v];
  if (v < n_inputs() + n_constants()) return constants[v - n_inputs()].dtype();
  const Step& s = step_of(v);
  return s.dtypes.at(v - s.first_out);
}

std::shared_ptr<Tape> record(const std::vector<array>& inputs, const std::vector<array>& outputs) {
  auto tape = std::make_shared<Tape>();
  // value of each descriptor met: >= 0 an input or a step output (provisional
  // numbering: inputs, then step outputs), < 0 a constant (-1 - index)
  std::unordered_map<const ArrayDesc*, int> val;
  val.reserve(1024);
  for (size_t i = 0; i < inputs.size(); ++i) {
    tape->in_shapes.push_back(inputs[i].shape());
    tape->in_dtypes.push_back(inputs[i].dtype());
    val.emplace(inputs[i].desc().get(), static_cast<int>(i));
  }
  const int n_in = static_cast<int>(inputs.size());
  // depth-first post-order over the nodes behind the outputs, stopping at inputs and computed arrays
  std::unordered_set<const Node*> seen;
  seen.reserve(1024);
  std::vector<std::pair<Node*, size_t>> stack;
  std::vector<Node*> order;
  auto push = [&](const array& a) {
    if (!a.valid() || val.count(a.desc().get())) return;
    Node* n = a.desc()->node.get();
    if (!n || !seen.insert(n).second) return;
    stack.emplace_back(n, 0);
  };
  for (auto& o : outputs) {
    push(o);
    while (!stack.empty()) {
      auto& [n, i] = stack.back();
      if (i < n->inputs.size()) {
        const array& in = n->inputs[i++];
        push(in);  // may reallocate the stack
      } else {
        order.push_back(stack.back().first);
        stack.pop_back();
      }
    }
  }
  // nodes that depend on no input are constants (their outputs are captured as they are)
  std::vector<char> live(order.size(), 0);
  int next = n_in;
  auto constant = [&](const array& a) {
    auto [it, fresh] = val.emplace(a.desc().get(), -1 - tape->n_constants());
    if (fresh) tape->constants.push_back(a);
    return it->second;
  };
  std::unordered_set<const ArrayDesc*> live_desc;
  for (size_t k = 0; k < order.size(); ++k) {
    Node& n = *order[k];
    bool dep = false;
    for (auto& in : n.inputs) {
      auto it = val.find(in.desc().get());
      if (it != val.end() && it->second >= 0) {
        dep = true;
        break;
      }
    }
    if (!dep) continue;
    live[k] = 1;
    Step st;
    st.prim = n.prim;
    st.inputs.reserve(n.inputs.size());
    for (auto& in : n.inputs) {
      auto it = val.find(in.desc().get());
      st.inputs.push_back(it != val.end() ? it->second : constant(in));
    }
    if (!n.out_shapes.empty()) {
      st.shapes = n.out_shapes;
      st.dtypes = n.out_dtypes;
    } else {
      auto o = n.outputs.at(0).lock();
      st.shapes = {o->shape};
      st.dtypes = {o->dtype};
    }
    st.first_out = next;
    for (size_t j = 0; j < st.shapes.size(); ++j) {
      if (j < n.outputs.size()) {
        if (auto o = n.outputs[j].lock()) val[o.get()] = next;
      }
      ++next;
    }
    tape->steps.push_back(std::move(st));
  }
  for (auto& o : outputs) {
    if (!val.count(o.desc().get())) constant(o);
  }
  // final numbering: inputs, constants, step outputs
  const int nc = tape->n_constants();
  auto fix = [&](int v) { return v < 0 ? n_in + (-1 - v) : (v < n_in ? v : v + nc); };
  for (Step& st : tape->steps) {
    for (int& k : st.inputs) k = fix(k);
    st.first_out += nc;
  }
  tape->n_values = next + nc;
  for (auto& o : outputs) tape->outputs.push_back(fix(val.at(o.desc().get())));
  return tape;
}

std::vector<array> replay(const Tape& tape, const std::vector<array>& inputs) {
  if (static_cast<int>(inputs.size()) != tape.n_inputs()) {
    throw std::invalid_argument("[compile] The compiled function takes " + std::to_string(tape.n_inputs()) +
                                " arrays, got " + std::to_string(inputs.size()) + ".");
  }
  bool changed = false;
  for (int i = 0; i < tape.n_inputs(); ++i) {
    const array& x = inputs[i];
    if (x.dtype() != tape.in_dtypes[i] ||
        (tape.shapeless ? x.ndim() != static_cast<int>(tape.in_shapes[i].size()) : x.shape() != tape.in_shapes[i])) {
      std::ostringstream os;
      os << "[compile] Input " << i << " is " << dtype_name(x.dtype()) << " of shape " << shape_str(x.shape())
         << " but the function was traced for " << dtype_name(tape.in_dtypes[i]) << " of shape "
         << shape_str(tape.in_shapes[i]) << ".";
      throw type_error(os.str());
    }
    changed = changed || x.shape() != tape.in_shapes[i];
  }
  std::vector<array> v(tape.n_values);
  for (int i = 0; i < tape.n_inputs(); ++i) v[i] = inputs[i];
  for (int i = 0; i < tape.n_constants(); ++i) v[tape.n_inputs() + i] = tape.constants[i];
  std::vector<array> ins;
  std::vector<Shape> traced_in;
  for (const Step& st : tape.steps) {
    ins.clear();
    bool same = true;
    for (int k : st.inputs) ins.push_back(v[k]);
    if (changed) {
      traced_in.clear();
      for (size_t k = 0; k < st.inputs.size(); ++k) {
        traced_in.push_back(tape.value_shape(st.inputs[k]));
        same = same && traced_in.back() == ins[k].shape();
      }
    }
    std::vector<array> outs = same ? build(st.prim, st.shapes, st.dtypes, ins) : reshaped_step(st, ins, traced_in);
    for (size_t j = 0; j < outs.size(); ++j) v[st.first_out + j] = std::move(outs[j]);
  }
  std::vector<array> result;
  result.reserve(tape.outputs.size());
  for (int o : tape.outputs) result.push_back(v[o]);
  return result;
}

std::shared_ptr<Tape> compile_graph(const std::vector<array>& inputs, const std::vector<array>& outputs,
                                    bool shapeless, bool passes, PassStats* stats) {
  wait_async();  // the passes read captured arrays' nodes and buffers
  auto tape = record(inputs, outputs);
  if (passes) {
    PassStats s = simplify(*tape);
    if (stats) *stats = s;
  }
  std::vector<array> simplified = replay(*tape, inputs);
  bool rewrote = false;
  std::vector<array> fused = run_fusion(inputs, simplified, &rewrote);
  // the fusion pass rewrote nothing: the simplified tape is the graph it was given
  auto final_tape = rewrote ? record(inputs, fused) : tape;
  final_tape->shapeless = shapeless;
  return final_tape;
}

std::string as_text(const Tape& tape) {
  std::ostringstream os;
  auto typed = [&](int v) {
    std::ostringstream t;
    t << value_name(v) << ":" << dtype_short(tape.value_dtype(v)) << "[";
    Shape s = tape.value_shape(v);
    for (size_t i = 0; i < s.size(); ++i) t << (i ? "," : "") << s[i];
    t << "]";
    return t.str();
  };
  os << "{ lambda ";
  for (int c = 0; c < tape.n_constants(); ++c) os << (c ? " " : "") << typed(tape.n_inputs() + c);
  os << (tape.n_constants() ? " " : "") << "; ";
  for (int i = 0; i < tape.n_inputs(); ++i) os << (i ? " " : "") << typed(i);
  os << ". let\n";
  for (const Step& st : tape.steps) {
    os << "    ";
    for (size_t j = 0; j < st.shapes.size(); ++j) os << (j ? " " : "") << typed(st.first_out + static_cast<int>(j));
    os << " = " << st.prim->name();
    for (int k : st.inputs) os << " " << value_name(k);
    os << "\n";
  }
  os << "  in (";
  for (size_t j = 0; j < tape.outputs.size(); ++j) os << (j ? ", " : "") << value_name(tape.outputs[j]);
  os << ") }";
  return os.str();
}

Cost cost_analysis(const Tape& tape) {
  Cost c;
  auto bytes = [](const Shape& s, Dtype t) {
    double n = size_of(t);
    for (auto d : s) n *= static_cast<double>(d);
    return n;
  };
  auto elems = [](const Shape& s) {
    double n = 1;
    for (auto d : s) n *= static_cast<double>(d);
    return n;
  };
  for (const Step& st : tape.steps) {
    const Primitive& p = *st.prim;
    if (p.is_view()) continue;  // no data moves
    for (int k : st.inputs) c.bytes_accessed += bytes(tape.value_shape(k), tape.value_dtype(k));
    for (size_t j = 0; j < st.shapes.size(); ++j) c.bytes_accessed += bytes(st.shapes[j], st.dtypes[j]);
    if (auto fused = dynamic_cast<const compile::Compiled*>(&p)) {
      // one flop per element and step of the group, on the broadcast inputs' shape
      Shape in;
      for (int k : st.inputs) in = broadcast_shapes(in, tape.value_shape(k));
      c.flops += elems(in) * static_cast<double>(fused->program().steps.size());
    } else if (p.is_elementwise()) {
      c.flops += elems(st.shapes[0]);
    } else if (dynamic_cast<const Matmul*>(&p)) {
      Shape a = tape.value_shape(st.inputs[0]);
      c.flops += 2.0 * elems(st.shapes[0]) * static_cast<double>(a.empty() ? 1 : a.back());
    } else if (dynamic_cast<const Reduce*>(&p) || dynamic_cast<const Softmax*>(&p)) {
      c.flops += elems(tape.value_shape(st.inputs[0]));
    }
  }
  return c;
}

std::string to_dot(const std::vector<array>& outputs, const std::vector<std::pair<array, std::string>>& names) {
  wait_async();  // it reads which arrays are computed
  std::unordered_map<const ArrayDesc*, std::string> name;
  for (auto& [a, n] : names) name[a.desc().get()] = n;
  std::unordered_map<const ArrayDesc*, int> ids;
  std::unordered_set<const ArrayDesc*> is_output;
  for (auto& o : outputs) is_output.insert(o.desc().get());
  std::ostringstream os;
  os << "digraph {\n";
  auto quote = [](const std::string& s) {
    std::string q = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') q += '\\';
      q += c;
    }
    return q + "\"";
  };
  auto label_of = [&](const array& a) {
    auto it = name.find(a.desc().get());
    std::string n = it != name.end() ? it->second : value_name(ids.at(a.desc().get()));
    std::string shape;
    for (size_t i = 0; i < a.shape().size(); ++i) shape += (i ? "," : "") + std::to_string(a.shape()[i]);
    return n + ": " + dtype_short(a.dtype()) + "[" + shape + "]";
  };
  // an array's id; declares it on first sight
  auto array_id = [&](const array& a) {
    auto [it, fresh] = ids.emplace(a.desc().get(), static_cast<int>(ids.size()));
    if (fresh) {
      os << "  { ";
      if (!a.has_primitive() || a.is_evaluated()) os << "rank=source; ";
      else if (is_output.count(a.desc().get())) os << "rank=sink; ";
      os << "a" << it->second << " [label=" << quote(label_of(a)) << "]; }\n";
    }
    return it->second;
  };
  std::unordered_set<const Node*> seen;
  std::vector<std::pair<Node*, size_t>> stack;
  auto push = [&](const array& a) {
    if (!a.valid() || a.is_evaluated() || !a.has_primitive()) return;
    Node* n = a.desc()->node.get();
    if (seen.insert(n).second) stack.emplace_back(n, 0);
  };
  for (auto& o : outputs) {
    push(o);
    while (!stack.empty()) {
      auto& [n, i] = stack.back();
      if (i < n->inputs.size()) {
        const array& in = n->inputs[i++];
        push(in);
        continue;
      }
      Node* node = stack.back().first;
      stack.pop_back();
      uintptr_t nid = reinterpret_cast<uintptr_t>(node);
      os << "  { n" << nid << " [label=" << quote(node->prim->name()) << ", shape=rectangle]; }\n";
      for (auto& in : node->inputs) {
        int id = array_id(in);  // declared before the edge line
        os << "  a" << id << " -> n" << nid << "\n";
      }
      for (size_t j = 0; j < node->outputs.size(); ++j) {
        if (auto d = node->outputs[j].lock()) {
          int id = array_id(array(d));
          os << "  n" << nid << " -> a" << id << "\n";
        }
      }
    }
    array_id(o);
  }
  os << "}\n";
  return os.str();
}

}  // namespace compiler
}  // namespace ember
