# What a C++ program needs from an install (the wheel puts it in
# site-packages/ember): libember.a in ember/lib, the headers in
# ember/include/ember, the CMake package in ember/lib/cmake/Ember and
# ember.pc in ember/lib/pkgconfig. The same layout results from
# `cmake --install <build> --prefix <dir>` outside scikit-build.
include(CMakePackageConfigHelpers)

# the package version: the one EMBER_VERSION (CMakeLists.txt)
set(EMBER_PACKAGE_VERSION "${EMBER_VERSION}")
string(REGEX MATCH "^[0-9]+(\\.[0-9]+)*" _ember_numeric_version "${EMBER_PACKAGE_VERSION}")

# Where the installed package finds OpenBLAS: a wheel only next to itself in
# site-packages (or through Python, see EmberConfig.cmake.in); another
# install also where this build found it.
if(SKBUILD)
  set(EMBER_OPENBLAS_RECORDED "")
  set(EMBER_PC_OPENBLAS "\${prefix}/../scipy_openblas32/lib")
else()
  set(EMBER_OPENBLAS_RECORDED "${EMBER_OPENBLAS_LIBDIR}")
  set(EMBER_PC_OPENBLAS "${EMBER_OPENBLAS_LIBDIR}")
endif()
set(EMBER_ISA_DEFS_LIST "${EMBER_ISA_DEFS}")
set(EMBER_PC_DEFS "")
foreach(_d IN LISTS EMBER_ISA_DEFS)
  string(APPEND EMBER_PC_DEFS " -D${_d}")
endforeach()

set(_ember_pkg_out "${CMAKE_CURRENT_BINARY_DIR}/package")
configure_file("${CMAKE_CURRENT_LIST_DIR}/EmberConfig.cmake.in" "${_ember_pkg_out}/EmberConfig.cmake" @ONLY)
write_basic_package_version_file("${_ember_pkg_out}/EmberConfigVersion.cmake"
                                 VERSION "${_ember_numeric_version}" COMPATIBILITY SameMinorVersion)
configure_file("${CMAKE_CURRENT_LIST_DIR}/ember.pc.in" "${_ember_pkg_out}/ember.pc" @ONLY)

install(TARGETS ember ARCHIVE DESTINATION ember/lib)
install(DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}/csrc/ember" DESTINATION ember/include
        FILES_MATCHING PATTERN "*.h" PATTERN "*.inc")
install(FILES "${_ember_pkg_out}/EmberConfig.cmake" "${_ember_pkg_out}/EmberConfigVersion.cmake"
        DESTINATION ember/lib/cmake/Ember)
install(FILES "${_ember_pkg_out}/ember.pc" DESTINATION ember/lib/pkgconfig)
