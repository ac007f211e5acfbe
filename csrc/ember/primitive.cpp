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

}  // namespace ember
