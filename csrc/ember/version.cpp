// ember::version() and ember::blas_info(). EMBER_VERSION comes from CMake
// (CMakeLists.txt defines it once, from scikit-build or pyproject.toml).
#include "ember/version.h"

#include <cblas.h>

#ifndef EMBER_VERSION
#error "EMBER_VERSION must be defined by the build (CMakeLists.txt)"
#endif

namespace ember {

std::string version() { return EMBER_VERSION; }

BlasInfo blas_info() {
  BlasInfo b;
  b.name = "OpenBLAS";
  const char* cfg = scipy_openblas_get_config();
  const char* core = scipy_openblas_get_corename();
  b.config = cfg ? cfg : "";
  b.core = core ? core : "";
  b.threads = scipy_openblas_get_num_threads();
  return b;
}

}  // namespace ember
