// The fusion pass's entry point in compile's pipeline (compile.h): called by
// compile_graph on the simplified graph between the placeholders `inputs` and
// `outputs`, it returns the outputs of the rewritten graph, in which groups
// of elementwise nodes (and the reductions of a row program) are nodes of the
// Compiled primitive (fuse.h).
//
// First, one rewrite of that (private, rebuilt) graph: a transpose of the
// last two axes of a matrix product that nothing else uses, (a b)^T, becomes
// the product b^T a^T. The operands' transposes are views the matmul reads
// through its transpose flags, and the product comes out row-major in the
// transposed shape, so its consumers read it densely (the gradient of a
// Linear layer's weight, stored (out, in), and the optimizer's update of it).
#include <unordered_map>
#include <unordered_set>

#include "ember/compile/compile.h"
#include "ember/compile/fuse.h"
#include "ember/ops.h"
#include "ember/primitives/linalg.h"
#include "ember/primitives/shape.h"

namespace ember::compiler {

namespace {

bool lift_transposed_products(const std::vector<array>& inputs, const std::vector<array>& outputs) {
  std::unordered_set<const ArrayDesc*> leaves;
  for (const auto& x : inputs) leaves.insert(x.desc().get());
  auto is_leaf = [&](const array& a) {
    return leaves.count(a.desc().get()) || !a.has_primitive() || a.buffer() != nullptr;
  };
  // every node once (explicit stack), and the uses of each array
  std::vector<Node*> nodes;
  std::unordered_map<const ArrayDesc*, int> uses;
  std::unordered_set<const Node*> seen;
  std::vector<array> stack;
  for (const auto& o : outputs) {
    ++uses[o.desc().get()];
    if (!is_leaf(o)) stack.push_back(o);
  }
  while (!stack.empty()) {
    array a = stack.back();
    stack.pop_back();
    Node* n = a.desc()->node.get();
    if (!seen.insert(n).second) continue;
    nodes.push_back(n);
    for (const auto& in : n->inputs) {
      ++uses[in.desc().get()];
      if (!is_leaf(in)) stack.push_back(in);
    }
  }
  // inputs before their consumers (the reverse of the walk's discovery
  // order): a transpose of a transpose of a product, as the vjp of x @ W.T
  // builds it, folds twice, back to the product in its own layout
  bool lifted = false;
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    Node* n = *it;
    auto t = dynamic_cast<const Transpose*>(n->prim.get());
    if (!t || n->inputs.size() != 1 || n->outputs.size() != 1) continue;
    const array& p = n->inputs[0];
    if (is_leaf(p) || uses[p.desc().get()] != 1 || !t->swaps_last_two()) continue;
    Node* m = p.desc()->node.get();
    if (!dynamic_cast<const Matmul*>(m->prim.get()) || m->inputs.size() != 2 || m->outputs.size() != 1) continue;
    const array a = m->inputs[0], b = m->inputs[1];
    const Stream s = m->prim->stream();
    n->inputs = {swapaxes(b, -1, -2, s), swapaxes(a, -1, -2, s)};
    n->prim = m->prim;
    lifted = true;
  }
  return lifted;
}

}  // namespace

std::vector<array> run_fusion(const std::vector<array>& inputs, const std::vector<array>& outputs, bool* rewrote) {
  const bool lifted = lift_transposed_products(inputs, outputs);
  bool fused = false;
  auto result = compile::fuse(inputs, outputs, &fused);
  *rewrote = lifted || fused;
  return result;
}

}  // namespace ember::compiler
