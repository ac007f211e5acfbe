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
  EMBER_TRANSFORM_RULES
  bool is_equivalent(const Primitive& o) const override { return dynamic_cast<const Matmul*>(&o); }
};

// The Matmul node of a (..., M, K) and b (..., K, N) with equal batch shapes
// and one dtype (the op layer broadcasts and casts): (..., M, N).
array matmul_node(const array& a, const array& b, Stream s);

}  // namespace ember
