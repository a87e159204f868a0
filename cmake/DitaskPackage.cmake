# SPDX-License-Identifier: MIT
# Debian packages with CPack: `cpack -G DEB` in a build dir (scripts/package.sh does it for
# build/release) writes two packages next to CPackConfig.cmake:
#   ditask_<version>_<arch>.deb      bin/ditask, libditask_runtime.so.<major>.<minor> (+ the file
#                                    it points to), lib/ditask/plugins/, share/ditask/configs/;
#   ditask-dev_<version>_<arch>.deb  include/ditask/, the libditask_runtime.so link,
#                                    libditask_launcher.a, lib/cmake/ditask/.
#   python3-ditask_<version>_<arch>.deb  the package ditask in lib/python3/dist-packages/ (where
#                                    the Python component is built).
# Both install under /usr. Depends of ditask comes from dpkg-shlibdeps (dpkg-dev; `file` too);
# ditask-dev depends on ditask of the same version and on what lib/cmake/ditask/ditaskConfig.cmake
# finds (find_dependency in cmake/ditaskConfig.cmake.in: nlohmann_json; Threads is libc's).
# tests/package/deb_test.sh checks the packages (scripts/test.sh runs scripts/package.sh, then it).
#
# The install components (cmake/DitaskInstall.cmake) map to the packages through two groups:
#   ditask      = runtime + Unspecified (install rules without a COMPONENT: bin/ditask, configs)
#   ditask-dev  = development

# Packaging is the top-level project's business (as a subproject, ditask installs into its parent's).
if(NOT DITASK_TOP_LEVEL)
  return()
endif()

# bin/ditask finds the runtime through RUNPATH $ORIGIN/../lib and the plugins in
# <bin>/../lib/ditask/plugins (apps/ditask): both assume the plain "lib" that GNUInstallDirs picks
# for the default prefix. A multiarch libdir (CMAKE_INSTALL_PREFIX=/usr at configure time gives
# lib/x86_64-linux-gnu) would still load the runtime through ld.so's default path, but
# `--package greeting` would no longer find the example plugins.
if(NOT CMAKE_INSTALL_LIBDIR STREQUAL "lib")
  message(WARNING "CMAKE_INSTALL_LIBDIR is '${CMAKE_INSTALL_LIBDIR}', not 'lib': the installed "
          "bin/ditask looks for its plugins in <prefix>/lib/ditask/plugins and its runtime in "
          "$ORIGIN/../lib. Configure without CMAKE_INSTALL_PREFIX=/usr (the package installs under "
          "/usr anyway) or with -DCMAKE_INSTALL_LIBDIR=lib.")
endif()

set(DITASK_PACKAGE_MAINTAINER "ditask developers <dev@ditask.invalid>" CACHE STRING
    "Maintainer field of the Debian packages (cpack -G DEB)")

set(CPACK_PACKAGE_NAME ditask)
set(CPACK_PACKAGE_VENDOR ditask)
set(CPACK_PACKAGE_CONTACT "${DITASK_PACKAGE_MAINTAINER}")
# No CPACK_PACKAGE_DESCRIPTION_SUMMARY: CPackDeb would put that one line above both packages'
# descriptions; the first line of each CPACK_DEBIAN_<GROUP>_DESCRIPTION is its synopsis instead.
# CPACK_PACKAGE_VERSION defaults to project()'s VERSION; so does the Debian version (no revision).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ONE_PER_GROUP)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${DITASK_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)

# The runtime package.
set(CPACK_DEBIAN_DITASK_PACKAGE_NAME ditask)
set(CPACK_DEBIAN_DITASK_PACKAGE_SECTION utils)
# DEBIAN/shlibs (and an ldconfig trigger) for libditask_runtime.so.<major>.<minor>, so that
# dpkg-shlibdeps of a package holding a user module finds "ditask (= <version>)". Only ditask has
# shared objects (ditask-dev's .so is a link). The plugins have no SONAME: CPack says so in a
# "CMake Warning (dev)" per plugin and leaves them out, which is right for dlopen'ed modules.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_DITASK_DESCRIPTION
    "launcher and runtime for multi-process task pipelines
The ditask launcher starts N worker processes of a user module, connects them
with a mesh (events emitted in one worker reach the handlers of its peers),
supervises them and reports what happened. This package holds the launcher,
the shared runtime library that modules link against, the example modules
(/usr/lib/ditask/plugins, run as `ditask --package greeting`) and example
launch configs (/usr/share/ditask/configs).")

# The development package.
set(CPACK_DEBIAN_DEV_PACKAGE_NAME ditask-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# ditaskConfig.cmake: find_dependency(nlohmann_json 3.11) and find_dependency(Threads) (libc6-dev,
# which every C++ compiler brings).
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "ditask (= ${PROJECT_VERSION}), nlohmann-json3-dev (>= 3.11)")
set(CPACK_DEBIAN_DEV_PACKAGE_RECOMMENDS "cmake (>= 3.22), g++ (>= 4:12)")
set(CPACK_DEBIAN_DEV_DESCRIPTION
    "launcher and runtime for multi-process task pipelines - development files
Headers, the libditask_runtime.so link, the static launcher library
libditask_launcher.a (ditask::Parallel::runner) and the CMake package, for
find_package(ditask) and target_link_libraries(... ditask::runtime) or
ditask::launcher, to build modules for the ditask launcher.")

# The torch component (where it is built) stays out of the packages: it would need LibTorch's
# 160 packages as dependencies, and dpkg-shlibdeps would have to look into ditask's own package
# for libditask_runtime.so. Build from source for it (docs/building.md).
set(CPACK_COMPONENTS_ALL runtime Unspecified development)

# The Python package (where the Python component is built): python3-ditask, the package `ditask`
# in /usr/lib/python3/dist-packages (python/CMakeLists.txt). Its Depends are written here:
# dpkg-shlibdeps cannot see libditask_runtime in another package being built. The extension is
# built for the one Python version found (its ABI tag names it); NumPy is optional (imported when
# an array travels).
if(DITASK_WITH_PYTHON)
  list(APPEND CPACK_COMPONENTS_ALL python)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-ditask)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_SHLIBDEPS OFF)
  math(EXPR ditask_python_next "${Python3_VERSION_MINOR} + 1")
  set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS
      "ditask (= ${PROJECT_VERSION}), python3 (>= ${Python3_VERSION_MAJOR}.${Python3_VERSION_MINOR}), \
python3 (<< ${Python3_VERSION_MAJOR}.${ditask_python_next}), libc6, libstdc++6, libgcc-s1")
  set(CPACK_DEBIAN_PYTHON_PACKAGE_RECOMMENDS "python3-numpy")
  set(CPACK_DEBIAN_PYTHON_DESCRIPTION
      "launcher and runtime for multi-process task pipelines - Python package
The Python package ditask: DI-engine's task and Parallel API (task.on, emit,
use, run, Parallel.runner), remote calls and objects, and groups, on the
ditask runtime. With it, `ditask --package my_pkg.py --main my_pkg.main`
runs Python workers, beside C++ ones in one job if wanted.")
endif()
include(CPack)
cpack_add_component_group(ditask)
cpack_add_component_group(dev)
cpack_add_component(runtime DISPLAY_NAME "ditask launcher, runtime and examples" GROUP ditask)
cpack_add_component(Unspecified DISPLAY_NAME "ditask launcher and configs" GROUP ditask)
cpack_add_component(development DISPLAY_NAME "ditask development files" GROUP dev
                    DEPENDS runtime)
if(DITASK_WITH_PYTHON)
  cpack_add_component_group(python)
  cpack_add_component(python DISPLAY_NAME "ditask Python package" GROUP python DEPENDS runtime)
endif()
