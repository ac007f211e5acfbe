// Matrix multiplication (batched, broadcast batch dims handled by the op).
// Kernel in backend/cpu/matmul.cpp, transform rules in primitives/linalg.cpp.
#pragma once

#include "ember/primitive.h"

namespace ember {

// inputs: a (..., M, K), b (..., K, N) with equal batch shapes -> (..., M, N)
class Matmul final : public Primitive {
 public:
  using Primitive::Primitive;
  const char* name() const override { return "Matmul"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::pair<std::vector<array>, std::vector<int>> vmap(const std::vector<array>& inputs,
                                                       const std::vector<int>& axes) override;
  bool is_equivalent(const Primitive& o) const override { return dynamic_cast<const Matmul*>(&o); }
};

}  // namespace ember
