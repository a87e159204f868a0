# SPDX-License-Identifier: MIT
# ditask::flags: warnings and sanitizers for every target of ours (plugins included).
add_library(ditask_flags INTERFACE)
add_library(ditask::flags ALIAS ditask_flags)
target_compile_features(ditask_flags INTERFACE cxx_std_20)
target_compile_options(ditask_flags INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion -Wold-style-cast
  -Wnon-virtual-dtor -Woverloaded-virtual -Wnull-dereference
  $<$<BOOL:${DITASK_WERROR}>:-Werror>)
# GCC runs these checks only after inlining, at -O1 and above, and with GCC 12 they fired only in
# Boost.Asio and libstdc++ code inlined into ours, which SYSTEM include directories cannot silence:
# a user's Release build printed 56 of them (scheduler.ipp, io_context.hpp, streambuf,
# char_traits.h), none about our code. Every -Werror build is Debug (-O0) and never ran them, so
# turning them off elsewhere loses no check that CI made. See docs/design.md, Decisions.
set(ditask_inlined_system_warnings -Wno-null-dereference -Wno-stringop-overflow -Wno-stringop-overread
    -Wno-array-bounds)
target_compile_options(ditask_flags INTERFACE
  "$<$<AND:$<CXX_COMPILER_ID:GNU>,$<NOT:$<CONFIG:Debug>>>:${ditask_inlined_system_warnings}>")
if(DITASK_SANITIZE)
  target_compile_options(ditask_flags INTERFACE -fsanitize=${DITASK_SANITIZE} -fno-omit-frame-pointer
                         -fno-sanitize-recover=all)
  target_link_options(ditask_flags INTERFACE -fsanitize=${DITASK_SANITIZE})
  if(DITASK_SANITIZE MATCHES "undefined")
    # UBSan's null and alignment checks put a descriptor on nearly every load and store: with them
    # a unity file compiled 45% longer and each process relocated 27 MB of descriptors at start
    # (0.35 s per process, most of an ASan test's time). ASan reports a null dereference itself
    # (SEGV with its stack), and x86-64 loads misaligned data; the codec reads and writes numbers
    # byte by byte (memcpy for floats).
    # Every other UBSan check stays. See docs/design.md, Decisions.
    target_compile_options(ditask_flags INTERFACE -fno-sanitize=alignment,null)
  endif()
  # Relative relocations packed (DT_RELR, glibc 2.36): a sanitizer build has a million of them
  # in the runtime library alone, read by every process at start.
  target_link_options(ditask_flags INTERFACE -Wl,-z,pack-relative-relocs)
  if(DITASK_SANITIZE MATCHES "thread")
    # GCC 12 warns about Asio's atomic_thread_fence under TSan, breaking -Werror.
    target_compile_options(ditask_flags INTERFACE -Wno-tsan)
  endif()
endif()

# Boost 1.81 header-only, std::filesystem for DLL. (The launcher reaps its workers itself, with
# wait4 on SIGCHLD: Boost.Process v2's wait gives no resource use; see docs/design.md.)
add_library(ditask_boost INTERFACE)
add_library(ditask::boost ALIAS ditask_boost)
target_link_libraries(ditask_boost INTERFACE Boost::headers Threads::Threads)
target_compile_definitions(ditask_boost INTERFACE
  BOOST_DLL_USE_STD_FS)

# ditask_add_module(name SOURCES...): a module (MODULE library, no 'lib' prefix) for ditask.
function(ditask_add_module name)
  add_library(${name} MODULE ${ARGN})
  target_link_libraries(${name} PRIVATE ditask::runtime ditask::flags)
  set_target_properties(${name} PROPERTIES PREFIX "lib" CXX_VISIBILITY_PRESET hidden
                        LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib/ditask/plugins)
endfunction()
