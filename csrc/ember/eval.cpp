#include "ember/eval.h"

#include <mutex>

#include "ember/primitive.h"

namespace ember {

namespace {
// One evaluation at a time: graphs may share nodes across Python threads, and
// kernels already use every core through the thread pool.
std::recursive_mutex& eval_mutex() {
  static std::recursive_mutex m;
  return m;
}
uint64_t g_epoch = 0;

// Run one node's primitive and detach it (its outputs become plain data).
void run_node(Node* n) {
  std::vector<array> outs;
  outs.reserve(n->outputs.size());
  for (size_t i = 0; i < n->outputs.size(); ++i) {
    auto d = n->outputs[i].lock();
    if (d) {
      outs.emplace_back(std::move(d));
    } else {
      // Output dropped by everyone: compute it into scratch.
      auto s = std::make_shared<ArrayDesc>();
      s->shape = n->out_shapes.at(i);
      s->strides = row_strides(s->shape);
      s->size = checked_size(s->shape, "eval");
      s->dtype = n->out_dtypes.at(i);
      s->position = static_cast<int>(i);
      outs.emplace_back(std::move(s));
    }
  }
  try {
    n->prim->eval_cpu(n->inputs, outs);
  } catch (...) {
    // A failed kernel may have given its outputs storage already: take it
    // back, so that the outputs still count as not computed (and a later
    // evaluation raises again instead of reading garbage).
    for (auto& o : outs) o.desc()->buf.reset();
    throw;
  }
  // A tracer keeps its graph for the transform that is tracing it.
  if (in_tracing()) {
    for (auto& o : outs)
      if (o.desc()->tracer) return;
  }
  std::shared_ptr<Node> keep = outs[0].desc()->node;  // n stays alive until here
  for (auto& o : outs) o.desc()->node.reset();
  // `keep` is released last: the node and, if unshared, its inputs go now.
}

// The node that still has to run for `a`, or null (computed, or a constant).
// A computed array whose graph was kept for tracing drops it here once no
// transform is tracing it any more.
Node* pending(const array& a) {
  Node* n = a.desc()->node.get();
  if (n && a.desc()->buf) {
    if (!a.is_tracer()) a.detach();
    return nullptr;
  }
  return n;
}
}  // namespace

void eval(const std::vector<array>& outputs) {
  std::lock_guard<std::recursive_mutex> lock(eval_mutex());
  uint64_t epoch = ++g_epoch;
  std::vector<Node*> order;
  std::vector<std::pair<Node*, size_t>> stack;
  for (auto& a : outputs) {
    if (!a.valid()) continue;
    Node* n = pending(a);
    if (!n || n->mark == epoch) continue;
    n->mark = epoch;
    stack.emplace_back(n, 0);
    while (!stack.empty()) {
      Node* top = stack.back().first;
      size_t i = stack.back().second;
      if (i < top->inputs.size()) {
        stack.back().second = i + 1;
        Node* m = pending(top->inputs[i]);
        if (m && m->mark != epoch) {
          m->mark = epoch;
          stack.emplace_back(m, 0);
        }
      } else {
        order.push_back(top);
        stack.pop_back();
      }
    }
  }
  for (Node* n : order) run_node(n);
}

void async_eval(const std::vector<array>& outputs) {
  // as MLX: an array that depends on a transform's traced inputs cannot be
  // evaluated asynchronously (eval inside grad is allowed, async_eval is not)
  for (const array& a : outputs) {
    if (a.is_tracer()) throw std::invalid_argument("[async_eval] Not allowed inside a graph transformation.");
  }
  // An error surfaces at the next synchronisation point (eval, item,
  // conversion), as in MLX: a failed node keeps its outputs uncomputed, so
  // evaluating them again raises the same error there.
  try {
    eval(outputs);
  } catch (const std::exception&) {
  }
}

}  // namespace ember
