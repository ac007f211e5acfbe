// vmap: trace the function on one example of each batched input (a
// Placeholder of the unbatched shape), then rebuild the traced graph for the
// whole batch, node by node, with each primitive's vmap rule. Nodes that
// depend on no batched input are kept as they are.
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "ember/ops.h"
#include "ember/transforms/graph.h"
#include "ember/transforms/transforms.h"

namespace ember {

int64_t batch_size(const std::vector<array>& inputs, const std::vector<int>& axes, const char* op) {
  int64_t B = -1;
  size_t first = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (axes[i] < 0) continue;
    int64_t b = inputs[i].shape(axes[i]);
    if (B < 0) {
      B = b;
      first = i;
    } else if (b != B) {
      std::ostringstream os;
      os << "[vmap] ";
      if (std::string(op) != "vmap") os << op << ": ";
      os << "Inconsistent sizes along the mapped axes: input " << i << " has size " << b
         << " (axis " << axes[i] << " of shape " << shape_str(inputs[i].shape()) << ") but input " << first
         << " has size " << B << " (axis " << axes[first] << " of shape " << shape_str(inputs[first].shape())
         << ").";
      throw std::invalid_argument(os.str());
    }
  }
  return B;
}

bool any_batched(const std::vector<int>& axes) {
  for (int a : axes) {
    if (a >= 0) return true;
  }
  return false;
}

int example_axis(int axis, int b) { return b >= 0 && b <= axis ? axis + 1 : axis; }

array batch_axis_to(const array& a, int from, int to, int64_t B, const StreamOrDevice& s) {
  if (from >= 0) return from == to ? a : moveaxis(a, from, to, s);
  if (B < 0) throw std::invalid_argument("[vmap] No batched input to take the batch size from.");
  Shape shape = a.shape();
  shape.insert(shape.begin() + to, B);
  return broadcast_to(expand_dims(a, {to}, s), shape, s);
}

array batch_axis_or_1_to(const array& a, int from, int to, const StreamOrDevice& s) {
  if (from >= 0) return from == to ? a : moveaxis(a, from, to, s);
  return expand_dims(a, {to}, s);
}

std::pair<std::vector<array>, std::vector<array>> vmap_trace(const Fun& fun, const std::vector<array>& inputs,
                                                             const std::vector<int>& in_axes) {
  if (inputs.size() != in_axes.size()) {
    throw std::invalid_argument("[vmap] Got " + std::to_string(in_axes.size()) + " in_axes for " +
                                std::to_string(inputs.size()) + " inputs.");
  }
  batch_size(inputs, in_axes, "vmap");
  std::vector<array> traced;
  for (size_t i = 0; i < inputs.size(); ++i) {
    int ax = in_axes[i];
    if (ax < 0) {
      traced.push_back(inputs[i]);
      continue;
    }
    if (ax >= inputs[i].ndim()) {
      throw std::invalid_argument("[vmap] Axis " + std::to_string(ax) + " is out of bounds for input " +
                                  std::to_string(i) + " of shape " + shape_str(inputs[i].shape()) + ".");
    }
    Shape shape = inputs[i].shape();
    shape.erase(shape.begin() + ax);
    array p = make_node<Placeholder>(shape, inputs[i].dtype(), {}, to_stream({}));
    p.set_tracer(true);
    traced.push_back(std::move(p));
  }
  TraceScope scope;
  std::vector<array> outputs = fun(traced);
  return {traced, outputs};
}

namespace {

// The batched form of every traced array that depends on a batched input.
struct Batched {
  std::unordered_map<const ArrayDesc*, std::pair<array, int>> map;
  const std::pair<array, int>* find(const array& a) const {
    auto it = map.find(a.desc().get());
    return it == map.end() ? nullptr : &it->second;
  }
};

std::pair<std::vector<array>, std::vector<int>> rebuild(const std::vector<array>& inputs,
                                                        const std::vector<array>& traced_inputs,
                                                        const std::vector<array>& traced_outputs,
                                                        const std::vector<int>& in_axes) {
  Batched b;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (in_axes[i] >= 0) b.map[traced_inputs[i].desc().get()] = {inputs[i], in_axes[i]};
  }
  auto order = detail::topo_order(traced_outputs, [&](const array& a) { return b.find(a) != nullptr; });
  for (auto& np : order) {
    Node& n = *np;
    std::vector<array> ins;
    std::vector<int> axes;
    bool any = false;
    for (auto& in : n.inputs) {
      if (auto f = b.find(in)) {
        ins.push_back(f->first);
        axes.push_back(f->second);
        any |= f->second >= 0;
      } else {
        ins.push_back(in);
        axes.push_back(-1);
      }
    }
    if (!any) {
      bool replaced = false;
      for (auto& in : n.inputs) replaced |= b.find(in) != nullptr;
      if (!replaced) continue;  // untouched by the batch: keep the node
    }
    auto [outs, oaxes] = n.prim->vmap(ins, axes);
    std::vector<array> traced = detail::node_outputs(n);
    if (outs.size() != traced.size() || oaxes.size() != traced.size()) {
      std::ostringstream os;
      os << "[vmap] Primitive " << n.prim->name() << " returned " << outs.size() << " outputs and "
         << oaxes.size() << " axes for " << traced.size() << " outputs.";
      throw std::logic_error(os.str());
    }
    for (size_t j = 0; j < traced.size(); ++j) {
      if (traced[j].valid()) b.map[traced[j].desc().get()] = {outs[j], oaxes[j]};
    }
  }
  std::vector<array> outs;
  std::vector<int> axes;
  for (auto& o : traced_outputs) {
    if (auto f = b.find(o)) {
      outs.push_back(f->first);
      axes.push_back(f->second);
    } else {
      outs.push_back(o);
      axes.push_back(-1);
    }
  }
  return {outs, axes};
}

}  // namespace

std::vector<array> vmap_replace(const std::vector<array>& inputs, const std::vector<array>& traced_inputs,
                                const std::vector<array>& traced_outputs, const std::vector<int>& in_axes,
                                const std::vector<int>& out_axes) {
  if (out_axes.size() != traced_outputs.size()) {
    throw std::invalid_argument("[vmap] Got " + std::to_string(out_axes.size()) + " out_axes for " +
                                std::to_string(traced_outputs.size()) + " outputs.");
  }
  int64_t B = batch_size(inputs, in_axes, "vmap");
  auto [outs, axes] = rebuild(inputs, traced_inputs, traced_outputs, in_axes);
  std::vector<array> result;
  for (size_t j = 0; j < outs.size(); ++j) {
    int oa = out_axes[j];
    int nd = traced_outputs[j].ndim() + 1;
    if (oa < -nd || oa >= nd) {
      throw std::invalid_argument("[vmap] out_axes " + std::to_string(oa) + " is out of bounds for output " +
                                  std::to_string(j) + " of " + std::to_string(nd) + " dimensions (with the batch).");
    }
    if (oa < 0) oa += nd;
    result.push_back(batch_axis_to(outs[j], axes[j], oa, B));
  }
  return result;
}

Fun vmap(const Fun& fun, const std::vector<int>& in_axes, const std::vector<int>& out_axes) {
  return [fun, in_axes, out_axes](const std::vector<array>& inputs) {
    auto [ti, to] = vmap_trace(fun, inputs, in_axes);
    std::vector<int> oa = out_axes;
    if (oa.size() == 1 && to.size() != 1) oa.assign(to.size(), out_axes[0]);
    return vmap_replace(inputs, ti, to, in_axes, oa);
  };
}

std::pair<std::vector<array>, std::vector<int>> vmap_rule(const Fun& fun, const std::vector<array>& inputs,
                                                          const std::vector<int>& in_axes) {
  auto [ti, to] = vmap_trace(fun, inputs, in_axes);
  return rebuild(inputs, ti, to, in_axes);
}

}  // namespace ember
