// SPDX-License-Identifier: MIT
// Finding, inspecting and loading modules (the test modules of plugins/, built next to faults).
#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <catch2/catch.hpp>

#include "error_of.hpp"
#include "fixtures.hpp"

#include <ditask/ditask.hpp>
#include <ditask/runtime/worker.hpp>

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

using ditask::test::error_of;
using ditask::test::TempDir;

const std::string kModuleDir = DITASK_MODULE_DIR;

std::string module_path(const std::string& name) { return kModuleDir + "/lib" + name + ".so"; }

/// Changes the working directory for one scope.
struct InDirectory {
  explicit InDirectory(const fs::path& dir) : old(fs::current_path()) { fs::current_path(dir); }
  ~InDirectory() { fs::current_path(old); }
  fs::path old;
};

}  // namespace

TEST_CASE("resolve_package looks in the working directory and the plugins directory", "[loader]") {
  const std::string faults = module_path("faults");
  CHECK(ditask::resolve_package(faults, kModuleDir) == faults);
  CHECK(ditask::resolve_package("faults", kModuleDir) == kModuleDir + "/libfaults.so");
  CHECK(ditask::resolve_package("libfaults.so", kModuleDir) == kModuleDir + "/libfaults.so");
  // Not found anywhere, but a library file name: the dynamic loader's search path decides.
  CHECK(ditask::resolve_package("libm.so.6", kModuleDir) == "libm.so.6");
  CHECK(ditask::resolve_package("faults.so", kModuleDir) == "faults.so");

  TempDir dir;
  dir.write("faults", "a local file wins over the plugins directory");
  InDirectory here(dir.path());
  CHECK(ditask::resolve_package("faults", kModuleDir) == "./faults");
}

TEST_CASE("resolve_package says where it looked", "[loader]") {
  auto e = error_of([] { ditask::resolve_package("nosuch", "/plugins"); });
  CHECK(std::string(e.what()) == "cannot find package 'nosuch'");
  CHECK_THAT(e.hint(), Contains("./nosuch") && Contains("/plugins/nosuch") &&
                           Contains("/plugins/libnosuch.so") && Contains("/plugins/nosuch.so"));

  e = error_of([] { ditask::resolve_package("./nosuch.so", "/plugins"); });
  CHECK(std::string(e.what()) == "cannot find package './nosuch.so'");
  CHECK(e.hint() == "no such file: check the path");

  e = error_of([] { ditask::resolve_package("", "/plugins"); });
  CHECK(std::string(e.what()) == "the package name is empty");
}

TEST_CASE("list_entries reads the DITASK_MAIN entries without loading", "[loader]") {
  CHECK(ditask::list_entries(module_path("faults")) ==
        std::vector<std::string>{"dial_finished_peer", "exit_code", "fail_first_attempt", "fail_on_node", "hang",
                                 "hang_ready", "ignore_int_ready", "kill_self", "noop",
                                 "orphan_then_hang", "restart_after_peer_finished", "segv", "segv_on_node", "spam",
                                 "stderr_then_die", "throw_error", "ticks_then_hang", "usr1_event"});
  CHECK(ditask::list_entries(module_path("greeting")) ==
        std::vector<std::string>{"main", "main_entry"});
  CHECK(ditask::list_entries(module_path("echo_env")) == std::vector<std::string>{"crash_first_attempt", "main"});
}

TEST_CASE("load_entry returns a callable entry", "[loader]") {
  ditask::EntryFn noop = ditask::load_entry(module_path("faults"), "noop");
  REQUIRE(noop != nullptr);
  noop();
  // Loading again (never unloaded) gives the same function.
  CHECK(ditask::load_entry(module_path("faults"), "noop") == noop);
  CHECK(ditask::probe_main(module_path("faults"), "noop") == 0);
}

TEST_CASE("a missing entry suggests the closest one or lists them", "[loader]") {
  const std::string faults = module_path("faults");
  auto e = error_of([&] { ditask::load_entry(faults, "sgev"); });
  CHECK(std::string(e.what()) == "cannot find entry 'sgev' in '" + faults + "'");
  CHECK(e.hint() == "did you mean 'segv'?");

  e = error_of([] { ditask::load_entry(module_path("greeting"), "something_else"); });
  CHECK(e.hint() == "it exports: main, main_entry");

  // The ABI symbol of an entry is not an entry of its own.
  e = error_of([&] { ditask::load_entry(faults, "abi_noop"); });
  CHECK(std::string(e.what()) == "cannot find entry 'abi_noop' in '" + faults + "'");

  CHECK(ditask::probe_main(faults, "sgev") == 2);
}

TEST_CASE("a module built for another ABI is refused", "[loader]") {
  const std::string path = module_path("abi_mismatch");
  auto e = error_of([&] { ditask::load_entry(path, "main"); });
  CHECK(std::string(e.what()) == "'" + path +
                                     "' was built for ditask ABI 999, this runtime speaks " +
                                     std::to_string(DITASK_ABI_VERSION));
  CHECK_THAT(e.hint(), Contains("rebuild"));
}

TEST_CASE("an entry exported by hand without its ABI symbol names the missing symbol", "[loader]") {
  const std::string path = module_path("abi_mismatch");
  auto e = error_of([&] { ditask::load_entry(path, "by_hand"); });
  CHECK(std::string(e.what()) == "'" + path +
                                     "' exports ditask_entry_by_hand but not ditask_entry_abi_by_hand, "
                                     "the ditask ABI version it was built for");
  CHECK(e.hint() == "define the entry with DITASK_MAIN(by_hand) from <ditask/ditask.hpp>");
  // It is not listed as an entry either.
  CHECK(ditask::list_entries(path) == std::vector<std::string>{"main"});
}

TEST_CASE("files that are not modules are refused with a reason", "[loader]") {
  TempDir dir;
  const std::string text = dir.write("notes.txt", "just some text, long enough for a header\n");
  auto e = error_of([&] { ditask::load_entry(text, "main"); });
  CHECK(std::string(e.what()) == "'" + text + "' is not a shared library");
  CHECK_THAT(e.hint(), Contains("ditask_add_module"));
  e = error_of([&] { ditask::list_entries(text); });
  CHECK(std::string(e.what()) == "'" + text + "' is not a shared library");
  e = error_of([&] { ditask::load_entry(dir.write("empty.so", ""), "main"); });
  CHECK_THAT(e.what(), Contains("is not a shared library"));
  e = error_of([&] { ditask::load_entry(dir.path(), "main"); });
  CHECK_THAT(e.what(), Contains("is not a shared library"));

  const std::string missing = dir.file("libgone.so");
  e = error_of([&] { ditask::load_entry(missing, "main"); });
  CHECK(std::string(e.what()) == "cannot find package '" + missing + "'");
  e = error_of([&] { ditask::list_entries(missing); });
  CHECK(std::string(e.what()) == "cannot find package '" + missing + "'");
}

TEST_CASE("a library dlopen refuses reports dlerror's text", "[loader]") {
  const std::string path = module_path("missing_dep");
  auto e = error_of([&] { ditask::load_entry(path, "main"); });
  CHECK(std::string(e.what()) == "cannot load '" + path +
                                     "': libditask_missing_dep.so: cannot open shared object "
                                     "file: No such file or directory");
  CHECK(e.hint() == "check the libraries it needs with 'ldd " + path + "'");
  // Reading its symbols needs no dependency.
  CHECK(ditask::list_entries(path) == std::vector<std::string>{"main"});

  e = error_of([] { ditask::load_entry("libditask_no_such_module.so", "main"); });
  CHECK_THAT(e.what(), StartsWith("cannot load 'libditask_no_such_module.so': ") &&
                           Contains("cannot open shared object file"));
  CHECK_THAT(e.hint(), Contains("LD_LIBRARY_PATH"));
}
