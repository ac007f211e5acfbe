// Graph walks shared by the transforms (internal).
#pragma once

#include <functional>
#include <memory>
#include <unordered_set>
#include <vector>

#include "ember/array.h"

namespace ember::detail {

// The nodes behind `outputs` in topological order (every node after the
// nodes of its inputs), found with an explicit stack. The walk does not go
// behind an array for which stop(a) is true, nor behind computed arrays whose
// graph is gone.
std::vector<std::shared_ptr<Node>> topo_order(const std::vector<array>& outputs,
                                              const std::function<bool(const array&)>& stop);

// The outputs of a node, in order; an output nobody holds any more is an
// empty handle (!valid()).
std::vector<array> node_outputs(const Node& n);

}  // namespace ember::detail
