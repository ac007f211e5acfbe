// Ember's version and the build facts a program may want to print.
#pragma once

#include <string>

namespace ember {

// The package version ("0.1.0"): pyproject.toml's `version`, the one source
// that the wheel, ember.__version__ and the CMake package read too.
std::string version();

// The BLAS library the kernels call (the scipy-openblas32 package's OpenBLAS).
struct BlasInfo {
  std::string name;     // "OpenBLAS"
  std::string config;   // OpenBLAS's build string (version and options)
  std::string core;     // the kernel set OpenBLAS chose for this CPU
  int threads = 1;      // OpenBLAS's own thread count
};
BlasInfo blas_info();

}  // namespace ember
