// The fusion pass's entry point in compile's pipeline (compile.h): called by
// compile_graph on the simplified graph between the placeholders `inputs` and
// `outputs`, it returns the outputs of the rewritten graph, in which groups
// of elementwise nodes (and a closing reduction) are nodes of the Compiled
// primitive (fuse.h).
#include "ember/compile/compile.h"
#include "ember/compile/fuse.h"

namespace ember::compiler {

std::vector<array> run_fusion(const std::vector<array>& inputs, const std::vector<array>& outputs) {
  return compile::fuse(inputs, outputs);
}

}  // namespace ember::compiler
