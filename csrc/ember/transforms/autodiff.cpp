// Reverse and forward mode, stop_gradient, depends, custom functions.
//
// Both modes trace the function on copies of the primals (Identity nodes
// marked as tracers), order the traced graph topologically, and then run each
// primitive's rule node by node: vjp from the outputs back, jvp from the
// inputs forward. Only nodes that depend on a primal are visited, and only
// inexact (floating or complex) values carry derivatives.
#include <atomic>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "ember/ops.h"
#include "ember/transforms/graph.h"
#include "ember/transforms/transforms.h"

namespace ember {

namespace detail {

std::vector<std::shared_ptr<Node>> topo_order(const std::vector<array>& outputs,
                                              const std::function<bool(const array&)>& stop) {
  std::vector<std::shared_ptr<Node>> order;
  std::unordered_set<const Node*> seen;
  std::vector<std::pair<std::shared_ptr<Node>, size_t>> stack;
  auto push = [&](const array& a) {
    if (!a.valid() || stop(a)) return;
    const auto& n = a.desc()->node;
    if (!n || !seen.insert(n.get()).second) return;
    stack.emplace_back(n, 0);
  };
  for (auto& o : outputs) {
    push(o);
    while (!stack.empty()) {
      auto& [n, i] = stack.back();
      if (i < n->inputs.size()) {
        const array& in = n->inputs[i++];
        push(in);  // may reallocate the stack: n and i are not used after this
      } else {
        order.push_back(std::move(stack.back().first));
        stack.pop_back();
      }
    }
  }
  return order;
}

std::vector<array> node_outputs(const Node& n) {
  std::vector<array> outs;
  for (auto& w : n.outputs) outs.emplace_back(w.lock());
  return outs;
}

}  // namespace detail

namespace {

using DescMap = std::unordered_map<const ArrayDesc*, array>;

bool inexact(Dtype d) { return is_inexact(d); }

// Copies of the primals that the graph walk recognizes (and stops at).
std::vector<array> tracer_copies(const std::vector<array>& primals) {
  std::vector<array> out;
  for (auto& p : primals) {
    array c = make_node<Identity>(p.shape(), p.dtype(), {p}, to_stream({}));
    c.set_tracer(true);
    out.push_back(std::move(c));
  }
  return out;
}

// a's primitive's cheaper graph for a + b, if it offers one
std::optional<array> cheaper_sum(const array& a, const array& b) {
  if (a.is_evaluated() || !a.has_primitive()) return std::nullopt;
  return a.primitive().sum_with(a, b);
}

void accumulate(DescMap& m, const array& key, const array& v) {
  auto it = m.find(key.desc().get());
  if (it == m.end()) {
    m.emplace(key.desc().get(), v);
  } else if (auto merged = cheaper_sum(it->second, v)) {
    it->second = *merged;
  } else if (auto swapped = cheaper_sum(v, it->second)) {  // whichever came first
    it->second = *swapped;
  } else {
    it->second = add(it->second, v);
  }
}

bool stops_gradient(const array& a) {
  return a.desc()->node && a.desc()->node->prim->stops_gradient();
}

// Checks a rule's results against the inputs they belong to.
void check_rule(const char* mode, const Node& n, const std::vector<array>& got, size_t want,
                const std::vector<array>& like) {
  if (got.size() != want) {
    std::ostringstream os;
    os << "[" << mode << "] Primitive " << n.prim->name() << " returned " << got.size() << " results for " << want
       << ".";
    throw std::logic_error(os.str());
  }
  for (size_t k = 0; k < want; ++k) {
    if (!like[k].valid()) continue;
    if (!got[k].valid() || got[k].shape() != like[k].shape()) {
      std::ostringstream os;
      os << "[" << mode << "] Primitive " << n.prim->name() << " returned a result of shape "
         << (got[k].valid() ? shape_str(got[k].shape()) : std::string("(none)")) << " for an array of shape "
         << shape_str(like[k].shape()) << ".";
      throw std::logic_error(os.str());
    }
  }
}

array zeros_for(const Node& n, const std::vector<array>& outs, size_t j) {
  if (outs[j].valid()) return zeros_like(outs[j]);
  return zeros(n.out_shapes.at(j), n.out_dtypes.at(j));
}

}  // namespace

namespace {
std::atomic<DerivativeFuser> g_derivative_fuser{nullptr};
}

void set_derivative_fuser(DerivativeFuser fuser) { g_derivative_fuser.store(fuser); }

std::vector<array> fuse_derivative(const std::vector<array>& from, const std::vector<array>& cotangents,
                                   const std::vector<array>& results, int64_t min_size) {
  DerivativeFuser f = g_derivative_fuser.load(std::memory_order_relaxed);
  if (!f) return results;
  std::vector<array> inputs = from;
  inputs.insert(inputs.end(), cotangents.begin(), cotangents.end());
  return f(inputs, results, min_size);
}

std::pair<std::vector<array>, std::vector<array>> vjp(const Fun& fun, const std::vector<array>& primals,
                                                      const std::vector<array>& cotangents) {
  TraceScope scope;
  std::vector<array> xs = tracer_copies(primals);
  std::vector<array> outputs = fun(xs);
  if (outputs.size() != cotangents.size()) {
    throw std::invalid_argument("[vjp] Number of outputs to compute gradients for (" +
                                std::to_string(outputs.size()) + ") does not match number of cotangents (" +
                                std::to_string(cotangents.size()) + ").");
  }
  std::unordered_set<const ArrayDesc*> primal_ids;
  for (auto& x : xs) primal_ids.insert(x.desc().get());
  auto is_primal = [&](const array& a) { return primal_ids.count(a.desc().get()) > 0; };

  auto order = detail::topo_order(outputs, [&](const array& a) { return is_primal(a) || stops_gradient(a); });
  // Which nodes lie on a path from a primal.
  std::unordered_set<const Node*> active;
  auto depends_on_primal = [&](const array& in) {
    if (is_primal(in)) return true;
    const auto& n = in.desc()->node;
    return n && active.count(n.get()) > 0 && !stops_gradient(in);
  };
  for (auto& n : order) {
    for (auto& in : n->inputs) {
      if (depends_on_primal(in)) {
        active.insert(n.get());
        break;
      }
    }
  }

  DescMap ct;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const array& o = outputs[i];
    array c = cotangents[i];
    if (c.shape() != o.shape()) {
      throw std::invalid_argument("[vjp] Output shape " + shape_str(o.shape()) +
                                  " does not match cotangent shape " + shape_str(c.shape()) + ".");
    }
    if (c.dtype() != o.dtype()) c = astype(c, o.dtype());
    accumulate(ct, o, c);
  }

  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node& n = **it;
    if (!active.count(&n)) continue;
    std::vector<array> outs = detail::node_outputs(n);
    std::vector<array> cts(outs.size());
    bool any = false;
    for (size_t j = 0; j < outs.size(); ++j) {
      if (!outs[j].valid()) continue;
      auto f = ct.find(outs[j].desc().get());
      if (f != ct.end() && inexact(outs[j].dtype())) {
        cts[j] = f->second;
        any = true;
      }
    }
    for (auto& o : outs)
      if (o.valid()) ct.erase(o.desc().get());
    if (!any) continue;
    std::vector<int> argnums;
    std::vector<array> like;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const array& in = n.inputs[i];
      if (inexact(in.dtype()) && depends_on_primal(in)) {
        argnums.push_back(static_cast<int>(i));
        like.push_back(in);
      }
    }
    if (argnums.empty()) continue;
    for (size_t j = 0; j < outs.size(); ++j)
      if (!cts[j].valid()) cts[j] = zeros_for(n, outs, j);
    std::vector<array> vjps = n.prim->vjp(n.inputs, cts, argnums, outs);
    check_rule("vjp", n, vjps, argnums.size(), like);
    for (size_t k = 0; k < argnums.size(); ++k) {
      const array& in = n.inputs[argnums[k]];
      array v = vjps[k].dtype() == in.dtype() ? vjps[k] : astype(vjps[k], in.dtype());
      accumulate(ct, in, v);
    }
  }

  std::vector<array> grads;
  for (size_t i = 0; i < xs.size(); ++i) {
    auto f = ct.find(xs[i].desc().get());
    grads.push_back(f != ct.end() && inexact(xs[i].dtype()) ? f->second : zeros_like(primals[i]));
  }
  return {outputs, grads};
}

std::pair<std::vector<array>, std::vector<array>> jvp(const Fun& fun, const std::vector<array>& primals,
                                                      const std::vector<array>& tangents) {
  if (primals.size() != tangents.size()) {
    throw std::invalid_argument("[jvp] Number of inputs (" + std::to_string(primals.size()) +
                                ") does not match number of tangents (" + std::to_string(tangents.size()) + ").");
  }
  for (size_t i = 0; i < primals.size(); ++i) {
    if (primals[i].shape() != tangents[i].shape()) {
      throw std::invalid_argument("[jvp] Input shape " + shape_str(primals[i].shape()) +
                                  " does not match the shape " + shape_str(tangents[i].shape()) +
                                  " of its tangent.");
    }
  }
  TraceScope scope;
  std::vector<array> xs = tracer_copies(primals);
  std::vector<array> outputs = fun(xs);
  DescMap tan;
  for (size_t i = 0; i < xs.size(); ++i) {
    // A tangent keeps its own dtype (as MLX's): the rules promote it with
    // the primal values they combine it with.
    if (!inexact(xs[i].dtype())) continue;
    tan.emplace(xs[i].desc().get(), tangents[i]);
  }
  std::unordered_set<const ArrayDesc*> primal_ids;
  for (auto& x : xs) primal_ids.insert(x.desc().get());
  auto order = detail::topo_order(
      outputs, [&](const array& a) { return primal_ids.count(a.desc().get()) > 0 || stops_gradient(a); });
  for (auto& np : order) {
    Node& n = *np;
    std::vector<int> argnums;
    std::vector<array> ts;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (stops_gradient(n.inputs[i])) continue;
      auto f = tan.find(n.inputs[i].desc().get());
      if (f != tan.end()) {
        argnums.push_back(static_cast<int>(i));
        ts.push_back(f->second);
      }
    }
    if (argnums.empty()) continue;
    std::vector<array> outs = detail::node_outputs(n);
    bool any_inexact = false;
    for (size_t j = 0; j < outs.size(); ++j)
      any_inexact |= inexact(outs[j].valid() ? outs[j].dtype() : n.out_dtypes.at(j));
    if (!any_inexact) continue;
    std::vector<array> touts = n.prim->jvp(n.inputs, ts, argnums, outs);
    check_rule("jvp", n, touts, outs.size(), outs);
    for (size_t j = 0; j < outs.size(); ++j) {
      if (!outs[j].valid() || !inexact(outs[j].dtype())) continue;
      tan.emplace(outs[j].desc().get(), touts[j]);
    }
  }
  std::vector<array> result;
  for (auto& o : outputs) {
    auto f = tan.find(o.desc().get());
    result.push_back(f != tan.end() ? f->second : zeros_like(o));
  }
  return {outputs, result};
}

array stop_gradient(const array& a) {
  return make_node<StopGradient>(a.shape(), a.dtype(), {a}, to_stream({}));
}

std::vector<array> depends(const std::vector<array>& inputs, const std::vector<array>& dependencies) {
  if (inputs.empty()) return {};  // nothing to tie the dependencies to
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  for (auto& a : inputs) {
    shapes.push_back(a.shape());
    dtypes.push_back(a.dtype());
  }
  std::vector<array> all = inputs;
  all.insert(all.end(), dependencies.begin(), dependencies.end());
  return make_nodes<Depends>(shapes, dtypes, all, to_stream({}), static_cast<int>(inputs.size()));
}

Fun custom_function(Fun fun, std::optional<VjpFun> vjp_fun, std::optional<JvpFun> jvp_fun,
                    std::optional<VmapFun> vmap_fun) {
  return [fun, vjp_fun, jvp_fun, vmap_fun](const std::vector<array>& args) {
    std::vector<array> outs = fun(args);
    if (outs.empty()) return outs;  // no outputs: no node
    std::vector<Shape> shapes;
    std::vector<Dtype> dtypes;
    std::vector<array> inputs = args;
    for (auto& o : outs) {
      shapes.push_back(o.shape());
      dtypes.push_back(o.dtype());
      inputs.push_back(stop_gradient(o));
    }
    return make_nodes<CustomTransforms>(shapes, dtypes, inputs, to_stream({}), static_cast<int>(args.size()), fun,
                                        vjp_fun, jvp_fun, vmap_fun);
  };
}

Fun checkpoint(Fun fun) {
  VjpFun recompute = [fun](const std::vector<array>& primals, const std::vector<array>& cotangents,
                           const std::vector<array>& outputs) {
    // The recomputation waits for the forward outputs, so the forward's
    // intermediates are freed before the backward rebuilds them.
    return vjp(fun, depends(primals, outputs), cotangents).second;
  };
  return custom_function(fun, recompute);
}

array sum_to_shape(const array& x, const Shape& shape, const StreamOrDevice& s) {
  if (x.shape() == shape) return x;
  const int lead = x.ndim() - static_cast<int>(shape.size());
  Axes axes;
  for (int i = 0; i < x.ndim(); ++i) {
    if (i < lead || (shape[i - lead] == 1 && x.shape(i) != 1)) axes.push_back(i);
  }
  array r = axes.empty() ? x : sum(x, axes, true, s);
  return reshape(astype(r, x.dtype(), s), shape, s);
}

}  // namespace ember
