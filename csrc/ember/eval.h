// Evaluation: computes arrays by walking their graph (explicit stack, never
// recursion) in topological order, running each node's primitive, then
// detaches every computed node. It belongs to the graph layer (array, Node,
// Primitive): it needs nothing but the primitive contract, and array::eval
// calls it.
#pragma once

#include <vector>

#include "ember/array.h"

namespace ember {

void eval(const std::vector<array>& outputs);
// Ember evaluates on the calling thread; async_eval computes now as well, so
// a later eval of the same arrays is free. Its errors are not raised there
// but at the next synchronisation (the failed arrays stay uncomputed), and
// arrays a transform is tracing are refused (invalid_argument).
void async_eval(const std::vector<array>& outputs);

}  // namespace ember
