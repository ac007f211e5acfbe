// ember::linalg — MLX's mx.linalg: norms, inverses, solves and
// factorizations over the last two axes, batched over the leading ones.
// LAPACK ops take float32/float64 (det/slogdet also accept integer and half
// inputs, computed in float32); errors name the op as MLX does
// ("[linalg::inv] ..."), and a singular matrix where the result would be
// meaningless raises instead of returning garbage.
#pragma once

#include <string>
#include <variant>

#include "ember/ops.h"

namespace ember::linalg {

#define EMBER_S const StreamOrDevice& s = {}

// ord: none (2-norm / Frobenius), a number (incl. +-inf) or "fro" / "nuc".
using NormOrd = std::optional<std::variant<double, std::string>>;
array norm(const array& a, const NormOrd& ord = {}, std::optional<Axes> axis = {}, bool keepdims = false, EMBER_S);

array inv(const array& a, EMBER_S);
array tri_inv(const array& a, bool upper = false, EMBER_S);
array pinv(const array& a, EMBER_S);
array solve(const array& a, const array& b, EMBER_S);
array solve_triangular(const array& a, const array& b, bool upper = false, EMBER_S);
array cholesky(const array& a, bool upper = false, EMBER_S);
// The inverse of A = L L^T (or U^T U) given its Cholesky factor.
array cholesky_inv(const array& a, bool upper = false, EMBER_S);
std::pair<array, array> qr(const array& a, EMBER_S);
// {U, S, Vt} (full U and Vt), or {S} when !compute_uv.
std::vector<array> svd(const array& a, bool compute_uv = true, EMBER_S);
std::pair<array, array> eig(const array& a, EMBER_S);
array eigvals(const array& a, EMBER_S);
std::pair<array, array> eigh(const array& a, const std::string& uplo = "L", EMBER_S);
array eigvalsh(const array& a, const std::string& uplo = "L", EMBER_S);
// {P, L, U} with A = L[P] @ U (P: uint32 row indices).
std::vector<array> lu(const array& a, EMBER_S);
// {LU, pivots}: LAPACK's packed factors and 0-based row swaps (uint32).
std::pair<array, array> lu_factor(const array& a, EMBER_S);
array det(const array& a, EMBER_S);
std::pair<array, array> slogdet(const array& a, EMBER_S);
array cross(const array& a, const array& b, int axis = -1, EMBER_S);

#undef EMBER_S

}  // namespace ember::linalg
