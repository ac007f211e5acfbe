// Compile's fusion pass and the Compiled primitive (see fuse.h).
#include "ember/compile/fuse.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "ember/backend/cpu/copy.h"
#include "ember/backend/cpu/isa.h"
#include "ember/backend/cpu/kernel_utils.h"
#include "ember/backend/cpu/loops.h"
#include "ember/compile/compile.h"
#include "ember/eval.h"
#include "ember/ops.h"
#include "ember/primitives/reduce.h"
#include "ember/transforms/transforms.h"

namespace ember::compile {

// ---- FusedProgram -------------------------------------------------------------

FusedProgram::Kernel FusedProgram::kernel(int level) const {
  if (level < 0 || level > 3) level = 0;
  std::lock_guard<std::mutex> lock(mu_);
  if (!tried_[level]) {
    kernels_[level] = load_kernel(source, level);
    tried_[level] = true;
  }
  return kernels_[level];
}

std::vector<array> FusedProgram::apply(const std::vector<array>& inputs) const {
  std::vector<array> vals;
  vals.reserve(steps.size());
  for (const auto& st : steps) {
    std::vector<array> args;
    for (int a : st.args) args.push_back(a >= 0 ? vals[a] : inputs[-a - 1]);
    auto r = st.prim->vmap(args, std::vector<int>(args.size(), -1));
    vals.push_back(r.first.at(0));
  }
  std::vector<array> outs;
  for (int o : outputs) outs.push_back(vals[o]);
  return outs;
}

// ---- Compiled -----------------------------------------------------------------

namespace {
struct RunCtx {
  FusedProgram::Kernel fn;
};
void run_rows(void* ctx, char* const* p, const int64_t* s, int64_t n) { static_cast<RunCtx*>(ctx)->fn(p, s, n); }
}  // namespace

// The group's unfused graph, evaluated into `outputs`.
void Compiled::eval_unfused(const std::vector<array>& inputs, std::vector<array>& outputs) {
  auto outs = program_->apply(inputs);
  eval(outs);
  for (size_t i = 0; i < outputs.size(); ++i)
    outputs[i].set_data(outs[i].buffer(), outs[i].strides(), outs[i].offset());
}

void Compiled::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  FusedProgram::Kernel fn = program_->kernel(cpu::isa_level());
  // The kernel was built when the graph was fused; only a level without a
  // kernel gets here (the compiler failed for it): the unfused graph.
  if (!fn) return eval_unfused(inputs, outputs);
  if (program_->rows) return eval_rows(fn, inputs, outputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (program_->in_scalar[i] && inputs[i].size() != 1) return eval_unfused(inputs, outputs);
  }
  for (auto& out : outputs) cpu::alloc_or_donate(out, inputs);
  const Shape& shape = outputs[0].shape();
  if (outputs[0].size() == 0) return;
  const int nout = static_cast<int>(outputs.size()), nin = static_cast<int>(inputs.size());
  std::vector<Strides> strides;
  strides.reserve(nout + nin);
  std::vector<char*> base;
  std::vector<int> itemsize;
  for (auto& o : outputs) {
    strides.push_back(o.strides());
    base.push_back(o.data<char>());
    itemsize.push_back(o.itemsize());
  }
  for (const auto& x : inputs) {
    strides.push_back(cpu::broadcast_strides(x, shape));
    base.push_back(x.data<char>());
    itemsize.push_back(x.itemsize());
  }
  std::vector<const int64_t*> sp;
  for (const auto& s : strides) sp.push_back(s.data());
  RunCtx ctx{fn};
  cpu::for_each_row_impl(nout + nin, shape, sp.data(), base.data(), itemsize.data(), run_rows, &ctx,
                         cpu::kParallelGrain);
}

// A row program: one kernel call per row of the full shape (the inputs
// broadcast together), rows spread over the threads. An input the program
// reads as one value per row must still be broadcast along the row (a
// shapeless replay may change that): else the unfused graph runs.
void Compiled::eval_rows(FusedProgram::Kernel fn, const std::vector<array>& inputs, std::vector<array>& outputs) {
  Shape shape;
  for (const auto& x : inputs) shape = broadcast_shapes(shape, x.shape(), "compile");
  const int nd = static_cast<int>(shape.size());
  const int64_t n = nd ? shape.back() : 1;
  const int nin = static_cast<int>(inputs.size()), nout = static_cast<int>(outputs.size());
  bool ok = nd > 0;
  for (int i = 0; ok && i < nin; ++i) {
    const auto& sh = inputs[i].shape();
    if (program_->in_row_bcast[i] && n != 1 && !sh.empty() && sh.back() != 1) ok = false;
  }
  if (!ok) return eval_unfused(inputs, outputs);
  for (auto& o : outputs) o.alloc();
  int64_t rows = 1;
  for (int d = 0; d + 1 < nd; ++d) rows *= shape[d];
  if (rows == 0) return;
  std::vector<Strides> strides;
  for (const auto& x : inputs) strides.push_back(cpu::broadcast_strides(x, shape));
  std::vector<int64_t> inner(nout + nin, 1);
  for (int i = 0; i < nin; ++i) inner[nout + i] = strides[i][nd - 1];
  // per output its first element and bytes per row (one value per row for
  // a row scalar); per input its first element, element size and strides
  std::vector<char*> obase(nout), ibase(nin);
  std::vector<int64_t> orow(nout), isize(nin);
  for (int o = 0; o < nout; ++o) {
    obase[o] = outputs[o].data<char>();
    orow[o] = (program_->row_scalar[program_->outputs[o]] ? 1 : n) * outputs[o].itemsize();
  }
  for (int i = 0; i < nin; ++i) {
    ibase[i] = inputs[i].data<char>();
    isize[i] = inputs[i].itemsize();
  }
  const int lead = nd - 1;  // the dims that count rows
  const int64_t grain = std::max<int64_t>(1, cpu::kParallelGrain / std::max<int64_t>(n, 1));
  cpu::parallel_for(rows, grain, [&](int64_t begin, int64_t end) {
    std::vector<char*> p(nout + nin);
    // an odometer over the leading dims and each input's element offset
    std::vector<int64_t> idx(std::max(lead, 1), 0), off(nin, 0);
    for (int64_t d = lead - 1, rem = begin; d >= 0; --d) {
      idx[d] = rem % shape[d];
      rem /= shape[d];
      for (int i = 0; i < nin; ++i) off[i] += idx[d] * strides[i][d];
    }
    for (int64_t r = begin; r < end; ++r) {
      for (int o = 0; o < nout; ++o) p[o] = obase[o] + r * orow[o];
      for (int i = 0; i < nin; ++i) p[nout + i] = ibase[i] + off[i] * isize[i];
      fn(p.data(), inner.data(), n);
      for (int d = lead - 1; d >= 0; --d) {
        for (int i = 0; i < nin; ++i) off[i] += strides[i][d];
        if (++idx[d] < shape[d]) break;
        for (int i = 0; i < nin; ++i) off[i] -= shape[d] * strides[i][d];
        idx[d] = 0;
      }
    }
  });
}

bool Compiled::is_equivalent(const Primitive& o) const {
  auto p = dynamic_cast<const Compiled*>(&o);
  return p && (p->program_ == program_ || p->program_->source == program_->source);
}

// The group's unfused graph as a function of its inputs `argnums` alone,
// the others held at `primals` (constants to the transforms: a derivative
// through the others, zero, may be NaN, as x ** 3's with respect to its 3
// at x < 0, and NaN times a zero tangent is NaN).
std::function<std::vector<array>(const std::vector<array>&)> Compiled::of_argnums(const std::vector<array>& primals,
                                                                                   const std::vector<int>& argnums) const {
  return [prog = program_, primals, argnums](const std::vector<array>& xs) {
    std::vector<array> in = primals;
    for (size_t i = 0; i < argnums.size(); ++i) in[static_cast<size_t>(argnums[i])] = xs[i];
    return prog->apply(in);
  };
}

std::vector<array> Compiled::pick(const std::vector<array>& primals, const std::vector<int>& argnums) {
  std::vector<array> r;
  for (int a : argnums) r.push_back(primals.at(static_cast<size_t>(a)));
  return r;
}

// The vjp: the derivative of the group's unfused graph, itself fused where
// that pays (fuse_derivative: eagerly, on large arrays; a row program's
// from 2^18 values, an elementwise group's from 2^16), so a compiled
// function's backward (nn.gelu's, say) is one kernel in eager training as
// in a compiled step.
std::vector<array> Compiled::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                 const std::vector<int>& argnums, const std::vector<array>&) {
  auto [outs, r] = ember::vjp(of_argnums(primals, argnums), pick(primals, argnums), cotangents);
  return fuse_derivative(primals, cotangents, r, program_->rows ? kFuseRowsMin : kFuseElementwiseMin);
}

namespace {
// The derivative fuser (transforms.h): fuse() on large eager graphs.
std::vector<array> fuse_large_eager(const std::vector<array>& inputs, const std::vector<array>& outputs,
                                    int64_t min_size) {
  int64_t largest = 0;
  for (const array& a : inputs) largest = std::max<int64_t>(largest, a.size());
  for (const array& a : outputs) largest = std::max<int64_t>(largest, a.size());
  if (largest < min_size || compiler::tracing_function() || !compiler::compile_enabled() || !compiler_available())
    return outputs;
  return fuse(inputs, outputs);
}

[[maybe_unused]] const bool kFuserRegistered = (set_derivative_fuser(&fuse_large_eager), true);
}  // namespace

std::vector<array> Compiled::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                 const std::vector<int>& argnums, const std::vector<array>&) {
  return ember::jvp(of_argnums(primals, argnums), pick(primals, argnums), tangents).second;
}

// The same kernel on the batched shapes: batched inputs get their batch axis
// first and size-1 dims up to the per-example rank; unbatched ones broadcast
// from the right, as the kernel reads them.
std::pair<std::vector<array>, std::vector<int>> Compiled::vmap(const std::vector<array>& inputs,
                                                               const std::vector<int>& axes) {
  Stream s = stream();
  if (program_->rows) {  // the unfused graph, batched by the ordinary rules
    auto prog = program_;
    return vmap_rule([prog](const std::vector<array>& x) { return prog->apply(x); }, inputs, axes);
  }
  std::vector<array> in = inputs;
  const bool batched = batch_size(in, axes, name()) >= 0;
  if (batched) {
    int rank = 0;  // per-example rank of the output
    for (size_t i = 0; i < in.size(); ++i) rank = std::max(rank, in[i].ndim() - (axes[i] >= 0 ? 1 : 0));
    for (size_t i = 0; i < in.size(); ++i) {
      if (axes[i] < 0) continue;
      array x = batch_axis_to(in[i], axes[i], 0, -1, s);
      if (x.ndim() - 1 < rank) {
        Shape sh = x.shape();
        sh.insert(sh.begin() + 1, rank - (x.ndim() - 1), 1);
        x = reshape(x, sh, s);
      }
      in[i] = x;
    }
  }
  Shape shape;
  for (const auto& x : in) shape = broadcast_shapes(shape, x.shape(), name());
  std::vector<Shape> shapes(program_->outputs.size(), shape);
  std::vector<Dtype> dtypes;
  for (int o : program_->outputs) dtypes.push_back(program_->steps[o].dtype);
  auto outs = make_nodes<Compiled>(shapes, dtypes, in, s, program_);
  return {outs, std::vector<int>(outs.size(), batched ? 0 : -1)};
}

// ---- the pass -------------------------------------------------------------------

namespace {

struct Info {
  Node* node;
  array out;                   // the (first reached) output array of the node
  std::vector<int> producers;  // per input: the producing node's index, -1 a leaf
  std::vector<int> consumers;  // nodes using this node's output (once per use)
  bool fusable = false;
  int row_reduce = -1;  // a sum/max/min over the last axis (kept): 0 sum, 1 max, 2 min
  bool is_output = false;
  int group = -1;
};

// A reduction a row program computes: Reduce sum/max/min over the last axis
// only (kept, size 1), float32/float64 in and out.
int row_reduce_kind(const Node& n, const array& out) {
  auto red = dynamic_cast<const Reduce*>(n.prim.get());
  if (!red || n.outputs.size() != 1 || n.inputs.size() != 1) return -1;
  const array& in = n.inputs[0];
  if (in.ndim() == 0 || in.dtype() != out.dtype()) return -1;
  if (out.dtype() != Dtype::float32 && out.dtype() != Dtype::float64) return -1;
  if (red->axes() != std::vector<int>{in.ndim() - 1}) return -1;
  Shape rs = in.shape();
  rs.back() = 1;
  if (out.shape() != rs) return -1;
  switch (red->kind()) {
    case Reduce::Sum: return 0;
    case Reduce::Max: return 1;
    case Reduce::Min: return 2;
    default: return -1;
  }
}

}  // namespace

std::vector<array> fuse(const std::vector<array>& inputs, const std::vector<array>& outputs, bool* rewrote) {
  if (rewrote) *rewrote = false;
  if (!compiler_available()) {
    load_kernel({}, 0);  // the one warning
    return outputs;
  }
  std::unordered_set<const ArrayDesc*> leaves;
  for (const auto& x : inputs) leaves.insert(x.desc().get());
  auto is_leaf = [&](const array& a) {
    return leaves.count(a.desc().get()) || !a.has_primitive() || a.buffer() != nullptr;
  };
  // post-order walk with an explicit stack: every node after its inputs
  std::vector<Info> info;
  std::unordered_map<const Node*, int> index;
  {
    std::vector<std::pair<array, size_t>> stack;
    std::unordered_set<const Node*> seen;
    for (const auto& o : outputs) {
      if (is_leaf(o) || seen.count(o.desc()->node.get())) continue;
      seen.insert(o.desc()->node.get());
      stack.push_back({o, 0});
      while (!stack.empty()) {
        auto& [a, next] = stack.back();
        Node* n = a.desc()->node.get();
        if (next < n->inputs.size()) {
          const array& in = n->inputs[next++];
          if (!is_leaf(in) && !seen.count(in.desc()->node.get())) {
            seen.insert(in.desc()->node.get());
            stack.push_back({in, 0});
          }
          continue;
        }
        Info inf;
        inf.node = n;
        inf.out = a;
        index[n] = static_cast<int>(info.size());
        info.push_back(std::move(inf));
        stack.pop_back();
      }
    }
  }
  const int N = static_cast<int>(info.size());
  for (int i = 0; i < N; ++i) {
    Info& inf = info[i];
    for (const auto& in : inf.node->inputs) {
      int p = -1;
      if (!is_leaf(in)) p = index.at(in.desc()->node.get());
      inf.producers.push_back(p);
      if (p >= 0) info[p].consumers.push_back(i);
    }
    const Primitive& prim = *inf.node->prim;
    if (inf.node->outputs.size() == 1 && prim.is_elementwise() && !prim.is_view()) {
      std::vector<Dtype> dt;
      for (const auto& in : inf.node->inputs) dt.push_back(in.dtype());
      inf.fusable = fusable(prim, dt, inf.out.dtype());
    } else {
      inf.row_reduce = row_reduce_kind(*inf.node, inf.out);
    }
  }
  for (const auto& o : outputs) {
    if (!is_leaf(o)) info[index.at(o.desc()->node.get())].is_output = true;
  }
  // groups, from the outputs back: a node joins its consumers' group when
  // they all are in one group and its shape fits the group's: the group's
  // full shape F, or F's row scalars (F with the last axis 1; a reduction
  // over the last axis takes F to them). A group holding no reduction keeps
  // one shape: its row scalars leave it for a group of their own.
  constexpr int kMaxGroupSteps = 256;
  std::vector<int> group_root, group_size;
  std::vector<Shape> group_full;
  std::vector<bool> group_reduces;
  auto row_of = [](Shape s) {
    if (!s.empty()) s.back() = 1;
    return s;
  };
  for (int i = N - 1; i >= 0; --i) {
    Info& inf = info[i];
    if (!inf.fusable && inf.row_reduce < 0) continue;
    const Shape& shape = inf.out.shape();
    int g = -1;
    if (!inf.consumers.empty()) {
      g = info[inf.consumers[0]].group;
      for (int c : inf.consumers) {
        if (info[c].group != g) g = -1;
        if (g < 0) break;
      }
      if (g >= 0) {
        const Shape& full = group_full[g];
        const bool fits = inf.row_reduce >= 0
                              ? inf.node->inputs[0].shape() == full
                              : shape == full || (!full.empty() && shape == row_of(full));
        if (!fits || group_size[g] >= kMaxGroupSteps) g = -1;  // the size bounds one kernel's compile time
      }
    }
    if (g < 0) {
      g = static_cast<int>(group_root.size());
      group_root.push_back(i);
      group_size.push_back(0);
      group_full.push_back(inf.row_reduce >= 0 ? inf.node->inputs[0].shape() : shape);
      group_reduces.push_back(false);
    }
    inf.group = g;
    ++group_size[g];
    if (inf.row_reduce >= 0) group_reduces[g] = true;
  }
  // row scalars of a group without a reduction: a group of their own (only
  // row scalars feed them, and they feed only the group they leave)
  {
    const int G = static_cast<int>(group_root.size());
    std::vector<int> split(G, -1);
    for (int i = 0; i < N; ++i) {
      const int g = info[i].group;
      if (g < 0 || g >= G || group_reduces[g] || info[i].out.shape() == group_full[g]) continue;
      if (split[g] < 0) {
        split[g] = static_cast<int>(group_root.size());
        group_root.push_back(i);
        group_size.push_back(0);
        group_full.push_back(info[i].out.shape());
        group_reduces.push_back(false);
      }
      const int h = split[g];
      info[i].group = h;
      group_root[h] = std::max(group_root[h], i);  // its last member: the order of the groups
      ++group_size[h];
      --group_size[g];
    }
  }
  std::vector<std::vector<int>> members(group_root.size());
  for (int i = 0; i < N; ++i) {
    if (info[i].group >= 0) members[info[i].group].push_back(i);
  }
  // replacements of the fused outputs, by descriptor
  std::unordered_map<const ArrayDesc*, array> repl;
  auto mapped = [&](const array& a) {
    auto it = repl.find(a.desc().get());
    return it == repl.end() ? a : it->second;
  };
  std::vector<bool> fused(N, false);
  // groups in the order of their roots: a group's inputs come from earlier ones
  std::vector<int> order(group_root.size());
  for (size_t g = 0; g < order.size(); ++g) order[g] = static_cast<int>(g);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return group_root[a] < group_root[b]; });
  for (int g : order) {
    const auto& mem = members[g];
    const bool rows = group_reduces[g];
    if (mem.size() < 2) continue;
    auto prog = std::make_shared<FusedProgram>();
    prog->rows = rows;
    const Shape& full = group_full[g];
    std::unordered_map<int, int> step_of;
    std::unordered_map<const ArrayDesc*, int> input_of;
    std::unordered_map<std::string, int> const_of;
    std::vector<array> ext;
    std::string label = "Compiled[";
    for (int i : mem) {
      const Info& inf = info[i];
      FusedProgram::Step st;
      st.prim = inf.node->prim;
      st.dtype = inf.out.dtype();
      for (size_t k = 0; k < inf.node->inputs.size(); ++k) {
        int p = inf.producers[k];
        if (p >= 0 && info[p].group == g) {
          st.args.push_back(step_of.at(p));
        } else {
          const array& x = inf.node->inputs[k];
          auto [it, fresh] = input_of.emplace(x.desc().get(), static_cast<int>(ext.size()));
          if (fresh) {
            // equal 0-d constants (the scalars of x * 2 + 2) share one input
            std::string key;
            if (x.ndim() == 0 && x.buffer() && !x.has_primitive()) {
              key.assign(x.data<char>(), x.itemsize());
              key += static_cast<char>(x.dtype());
            }
            auto [ct, cfresh] = key.empty() ? std::make_pair(const_of.end(), true)
                                            : const_of.emplace(key, static_cast<int>(ext.size()));
            if (cfresh) {
              ext.push_back(mapped(x));
              prog->in_dtypes.push_back(x.dtype());
              prog->in_row_bcast.push_back(x.ndim() == 0 || x.shape().back() == 1);
              prog->in_scalar.push_back(x.size() == 1);
            } else {
              it->second = ct->second;
            }
          }
          st.args.push_back(-it->second - 1);
        }
      }
      step_of[i] = static_cast<int>(prog->steps.size());
      prog->step_reduce.push_back(inf.row_reduce);
      prog->row_scalar.push_back(inf.row_reduce >= 0 || inf.out.shape() != full);
      if (prog->steps.size()) label += ",";
      label += inf.node->prim->name();
      prog->steps.push_back(std::move(st));
    }
    // outputs: the graph's outputs and the values used outside the group
    std::vector<int> outs_idx;
    for (int i : mem) {
      bool out = i == group_root[g] || info[i].is_output;
      for (int c : info[i].consumers) out = out || info[c].group != g;
      if (out) {
        outs_idx.push_back(i);
        prog->outputs.push_back(step_of.at(i));
      }
    }
    label += "]";
    prog->label = label;
    prog->source = generate_kernel(*prog);
    if (prog->source.empty() || !prog->kernel(cpu::isa_level())) continue;
    std::vector<Shape> shapes;
    std::vector<Dtype> dtypes;
    for (int i : outs_idx) {
      shapes.push_back(info[i].out.shape());
      dtypes.push_back(info[i].out.dtype());
    }
    auto node_outs = make_nodes<Compiled>(shapes, dtypes, ext, info[group_root[g]].node->prim->stream(),
                                          std::shared_ptr<const FusedProgram>(prog));
    for (size_t k = 0; k < outs_idx.size(); ++k) repl[info[outs_idx[k]].out.desc().get()] = node_outs[k];
    for (int i : mem) fused[i] = true;
  }
  if (repl.empty()) return outputs;
  if (rewrote) *rewrote = true;
  // rewire the consumers left outside the groups
  for (int i = 0; i < N; ++i) {
    if (fused[i]) continue;
    for (auto& in : info[i].node->inputs) {
      auto it = repl.find(in.desc().get());
      if (it != repl.end()) in = it->second;
    }
  }
  std::vector<array> result;
  for (const auto& o : outputs) result.push_back(mapped(o));
  return result;
}

}  // namespace ember::compile
