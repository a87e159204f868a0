# SPDX-License-Identifier: MIT
# Installs bin/ditask, lib/libditask_runtime.so, include/ditask/ and a CMake package so that a
# user project can find_package(ditask) and link ditask::runtime.
#
# Two install components, which cmake/DitaskPackage.cmake turns into two Debian packages:
#   runtime      what `ditask --package M` needs at run time: the versioned runtime library
#                (libditask_runtime.so.0.1 and .0.1.0), the example plugins and configs; bin/ditask
#                and the configs have no COMPONENT of their own (apps/ditask, configs/), so they
#                are in CMake's default component "Unspecified", which the package puts with runtime;
#   development  what building a module or a self-supervising program needs: headers, the
#                unversioned libditask_runtime.so link, libditask_launcher.a, lib/cmake/ditask/;
#   torch        the LibTorch component where it is built (DITASK_TORCH): libditask_torch.so, its
#                headers (ditask/torch.hpp, ditask/torch/), its CMake targets (find_package(ditask
#                COMPONENTS torch) gives ditask::torch) and the rnn example plugin.
# A plain `cmake --install` installs every component.
include(CMakePackageConfigHelpers)
install(TARGETS ditask_runtime ditask_launcher EXPORT ditaskTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
                NAMELINK_COMPONENT development
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY runtime/include/ditask launcher/include/ditask DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT development)
install(EXPORT ditaskTargets NAMESPACE ditask:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ditask
        COMPONENT development)
configure_package_config_file(cmake/ditaskConfig.cmake.in
  ${PROJECT_BINARY_DIR}/ditaskConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ditask)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ditaskConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ditaskConfig.cmake ${PROJECT_BINARY_DIR}/ditaskConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ditask COMPONENT development)

if(TARGET ditask_torch)
  install(TARGETS ditask_torch EXPORT ditaskTorchTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT torch NAMELINK_COMPONENT torch)
  install(DIRECTORY torch/include/ditask DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT torch)
  install(EXPORT ditaskTorchTargets NAMESPACE ditask:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ditask
          COMPONENT torch)
endif()
