#include "ember/primitive.h"

namespace ember {

void Primitive::no_rule(const char* transform) const {
  throw std::invalid_argument(std::string("[") + transform + "] Primitive " + name() + " has no " + transform +
                              " rule.");
}

std::vector<array> Primitive::vjp(const std::vector<array>&, const std::vector<array>&, const std::vector<int>&,
                                  const std::vector<array>&) {
  no_rule("vjp");
}
std::vector<array> Primitive::jvp(const std::vector<array>&, const std::vector<array>&, const std::vector<int>&,
                                  const std::vector<array>&) {
  no_rule("jvp");
}
std::pair<std::vector<array>, std::vector<int>> Primitive::vmap(const std::vector<array>&, const std::vector<int>&) {
  no_rule("vmap");
}

void Primitive::eval_cpu_batch(const std::vector<Primitive*>& prims, const std::vector<const std::vector<array>*>& inputs,
                               std::vector<std::vector<array>>& outputs) {
  for (size_t i = 0; i < prims.size(); ++i) prims[i]->eval_cpu(*inputs[i], outputs[i]);
}

}  // namespace ember
