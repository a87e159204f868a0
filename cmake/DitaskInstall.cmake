# SPDX-License-Identifier: MIT
# Installs bin/ditask, lib/libditask_runtime.so, include/ditask/ and a CMake package so that a
# user project can find_package(ditask) and link ditask::runtime.
include(CMakePackageConfigHelpers)
install(TARGETS ditask_runtime ditask_launcher EXPORT ditaskTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY runtime/include/ditask launcher/include/ditask DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT ditaskTargets NAMESPACE ditask:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ditask)
configure_package_config_file(cmake/ditaskConfig.cmake.in
  ${PROJECT_BINARY_DIR}/ditaskConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ditask)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ditaskConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ditaskConfig.cmake ${PROJECT_BINARY_DIR}/ditaskConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ditask)
