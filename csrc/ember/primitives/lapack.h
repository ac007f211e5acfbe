// Dense linear algebra through LAPACK (OpenBLAS from scipy-openblas32): one
// primitive whose kind selects the factorization. Every kind works on the
// last two axes and is batched over the leading ones (all inputs share the
// same leading shape: the op layer broadcasts). Inputs are float32/float64;
// kernels live in backend/cpu/lapack.cpp, the transform rules in
// primitives/lapack.cpp, the public ops in ops/lapack.h.
#pragma once

#include "ember/primitive.h"

namespace ember {

class Lapack final : public Primitive {
 public:
  enum Kind {
    Inv,       // (n,n) -> inverse; singular raises
    TriInv,    // triangle of (n,n) selected by `upper` -> its inverse (other triangle zero)
    Cholesky,  // triangle selected by `upper` of (n,n) -> factor L (or U), other triangle zero
    Det,       // (n,n) -> determinant
    SlogDet,   // (n,n) -> sign, log|det|
    Solve,     // (n,n), (n,k) -> (n,k); singular raises
    SolveTri,  // triangle of (n,n), (n,k) -> (n,k); singular raises
    QR,        // (m,n) -> Q (m,K), R (K,n), K = min(m,n)
    SVD,       // (m,n) -> U (m,m), S (K), Vt (n,n)
    SVDVals,   // (m,n) -> S (K), descending
    Eigh,      // triangle selected by `upper` of (n,n) -> w (n) ascending, V (n,n)
    EigvalsH,  // -> w (n)
    Eig,       // (n,n) -> w (n), V (n,n), complex64
    Eigvals,   // -> w (n), complex64
    LUFactor,  // (m,n) -> LU (m,n), pivots (K) uint32, 0-based LAPACK row swaps
    LU,        // (m,n) -> P (m) uint32 with A = L[P] @ U, L (m,K), U (K,n)
  };
  Lapack(Stream s, Kind k, bool upper = false) : Primitive(s), kind_(k), upper_(upper) {}
  const char* name() const override;
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  bool is_equivalent(const Primitive& o) const override;
  EMBER_TRANSFORM_RULES
  Kind kind() const { return kind_; }
  bool upper() const { return upper_; }

 private:
  Kind kind_;
  bool upper_;
};

// Builds the node of `kind` on inputs already validated, cast and broadcast
// (used by the ops and by the vmap rules).
std::vector<array> lapack_node(Lapack::Kind kind, bool upper, const std::vector<array>& inputs, Stream s);

}  // namespace ember
