# `cmake --install BUILD --prefix P`: libhoop.so, the public headers (hoop/hoop.h with hoop/hoop_elastic.h and hoop/hoop_fusion.h, hoop/hoop.hpp),
# hooprun, hoop-perf, hoop-info and hoop-doctor (and hoop-train where built), a CMake package (find_package(hoop) gives hoop::hoop) and
# hoop.pc for pkg-config. Both the package and hoop.pc find the prefix from where they lie, so
# the tree works wherever it is installed. Included from the top CMakeLists.txt after the targets.
include(CMakePackageConfigHelpers)

target_include_directories(hoop INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
                                          $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>)
# libhoop finds libhoop_signals (transport/signals/at_load.c) next door, wherever it is installed.
set_target_properties(hoop PROPERTIES INSTALL_RPATH "$ORIGIN")
# The exported target carries C++20: hoop.hpp needs it (std::span), and a C consumer is untouched.
target_compile_features(hoop INTERFACE cxx_std_20)
install(TARGETS hoop hoop_signals EXPORT hoopTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES include/hoop/hoop.h include/hoop/hoop_elastic.h include/hoop/hoop_fusion.h include/hoop/hoop.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hoop)
# The tools are in the package too (hoop::hooprun, ...): the Python package built standalone puts
# hooprun beside its hoop-parallelize.
install(TARGETS hooprun hoop-perf hoop-info hoop-doctor EXPORT hoopTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# hoop-train, the reference trainer, where it is built: what a job started from the prefix on many
# hosts runs. Outside the package's targets (nothing links it); besides libhoop next door it keeps
# the folders of the libraries it was linked with (OpenBLAS's variant, CUDA's) in its RPATH.
if(TARGET hoop-train)
  set_target_properties(hoop-train PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
  install(TARGETS hoop-train RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

set(hoop_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/hoop)
install(EXPORT hoopTargets NAMESPACE hoop:: DESTINATION ${hoop_cmake_dir})
# The build tree is a package too (-Dhoop_DIR=BUILD): the Python package for more interpreters
# (cmake/more_pythons.cmake) builds against it without an install.
export(EXPORT hoopTargets NAMESPACE hoop:: FILE ${CMAKE_BINARY_DIR}/hoopTargets.cmake)
configure_package_config_file(cmake/hoopConfig.cmake.in ${CMAKE_BINARY_DIR}/hoopConfig.cmake
  INSTALL_DESTINATION ${hoop_cmake_dir})
# 0.x releases change the API between minors: a request for 0.1 is met by 0.1.* only.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/hoopConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/hoopConfig.cmake ${CMAKE_BINARY_DIR}/hoopConfigVersion.cmake
  DESTINATION ${hoop_cmake_dir})

# hoop.pc: the prefix relative to the .pc file's own folder.
file(RELATIVE_PATH hoop_pc_to_prefix /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" hoop_pc_to_prefix "${hoop_pc_to_prefix}")
configure_file(cmake/hoop.pc.in ${CMAKE_BINARY_DIR}/hoop.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/hoop.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
