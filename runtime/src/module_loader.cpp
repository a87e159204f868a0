// SPDX-License-Identifier: MIT
// Finding, inspecting and loading modules (Boost.DLL; never unloaded).
#include "module_loader.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include <boost/dll/library_info.hpp>
#include <boost/dll/shared_library.hpp>

#include "ditask/error.hpp"
#include "ditask/module.hpp"
#include "ditask/runtime/suggest.hpp"
#include "ditask/runtime/worker.hpp"

namespace ditask {
namespace fs = std::filesystem;

namespace detail {

std::vector<std::string> entries_from_symbols(const std::vector<std::string>& symbols) {
  const std::set<std::string> all(symbols.begin(), symbols.end());
  std::set<std::string> entries;
  for (const auto& symbol : all) {
    if (symbol.size() > kEntryPrefix.size() && symbol.starts_with(kEntryPrefix)) {
      std::string name = symbol.substr(kEntryPrefix.size());
      if (all.count(std::string(kEntryAbiPrefix) + name) != 0) {
        entries.insert(std::move(name));
      }
    }
  }
  return {entries.begin(), entries.end()};
}

std::string missing_entry_hint(const std::string& wanted, const std::vector<std::string>& entries) {
  if (entries.empty()) {
    return "it exports no DITASK_MAIN entry";
  }
  if (auto best = closest_match(wanted, entries)) {
    return "did you mean '" + *best + "'?";
  }
  return "it exports: " + join(entries);
}

}  // namespace detail

namespace {

constexpr const char* kNotSharedHint =
    "a module is a shared library built with ditask_add_module() (or -shared -fPIC) that "
    "defines DITASK_MAIN entries";

// A path with a '/' names a file; a bare name (e.g. "libfoo.so") is for the loader's search path.
bool is_bare_name(const std::string& path) { return path.find('/') == std::string::npos; }

// Refuses what dlopen would refuse with a worse message: no file, no permission, not an ELF
// shared object (ELF magic and e_type ET_DYN, read without running anything).
void check_shared_library_file(const std::string& path) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!fs::exists(status)) {
    throw Error("cannot find package '" + path + "'", "no such file: check the path");
  }
  if (fs::is_directory(status)) {
    throw Error("'" + path + "' is not a shared library", "it is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error("cannot read '" + path + "': " + std::strerror(errno),
                "check the file's permissions");
  }
  std::array<char, 18> header{};
  in.read(header.data(), header.size());
  constexpr std::array<char, 4> kElfMagic = {'\x7f', 'E', 'L', 'F'};
  const bool elf = in.gcount() == static_cast<std::streamsize>(header.size()) &&
                   std::equal(kElfMagic.begin(), kElfMagic.end(), header.begin());
  // e_type sits at offset 16; EI_DATA (offset 5) says its byte order. ET_DYN is 3.
  const auto lo = static_cast<unsigned char>(header[header[5] == 2 ? 17 : 16]);
  const auto hi = static_cast<unsigned char>(header[header[5] == 2 ? 16 : 17]);
  if (!elf || lo != 3 || hi != 0) {
    throw Error("'" + path + "' is not a shared library", kNotSharedHint);
  }
}

// Boost.DLL reports "<what> (dlerror system message: <text>): <errc>"; keep only <text>, minus a
// leading "<path>: " that would repeat the path.
std::string dlerror_text(const std::string& what, const std::string& path) {
  const std::string marker = "(dlerror system message: ";
  const auto begin = what.find(marker);
  const auto end = what.rfind(')');
  if (begin == std::string::npos || end == std::string::npos || end < begin + marker.size()) {
    return what;
  }
  std::string text = what.substr(begin + marker.size(), end - begin - marker.size());
  if (text.starts_with(path + ": ")) {
    text.erase(0, path.size() + 2);
  }
  return text;
}

// Loaded modules, kept forever: unloading a module can run its destructors after the runtime's
// and makes LeakSanitizer report `<unknown module>` frames (google/sanitizers#89). Deliberately
// leaked so no static destructor ever dlcloses them.
boost::dll::shared_library& keep_forever(boost::dll::shared_library library) {
  static std::mutex mutex;
  static auto& kept = *new std::vector<std::unique_ptr<boost::dll::shared_library>>();
  std::lock_guard lock(mutex);
  kept.push_back(std::make_unique<boost::dll::shared_library>(std::move(library)));
  return *kept.back();
}

boost::dll::shared_library& open_library(const std::string& path) {
  // rtld_now: an unresolved symbol fails here (in the probe, with dlerror's text) instead of
  // killing the worker mid-run. rtld_global: the module is this process's main program; code it
  // loads in turn (an embedded interpreter's extensions, its own plugins) must see its symbols.
  namespace mode = boost::dll::load_mode;
  auto flags = mode::rtld_now | mode::rtld_global;
  if (is_bare_name(path)) {
    flags = flags | mode::search_system_folders;
  }
  try {
    return keep_forever(boost::dll::shared_library(path, flags));
  } catch (const std::exception& e) {
    throw Error("cannot load '" + path + "': " + dlerror_text(e.what(), path),
                is_bare_name(path)
                    ? "searched the dynamic loader's path (LD_LIBRARY_PATH, ld.so.cache); "
                      "pass a path to the file instead"
                    : "check the libraries it needs with 'ldd " + path + "'");
  }
}

}  // namespace

std::string resolve_package(const std::string& package, const std::string& plugins_dir) {
  if (package.empty()) {
    throw Error("the package name is empty", "pass --package <path to a module, or its name>");
  }
  if (!is_bare_name(package)) {
    std::error_code ec;
    if (!fs::exists(package, ec)) {
      throw Error("cannot find package '" + package + "'", "no such file: check the path");
    }
    return package;
  }
  std::vector<std::string> candidates = {"./" + package};
  if (!plugins_dir.empty()) {
    const fs::path dir(plugins_dir);
    for (const auto& file : {package, "lib" + package + ".so", package + ".so"}) {
      candidates.push_back((dir / file).string());
    }
  }
  for (const auto& candidate : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) {
      return candidate;
    }
  }
  if (package.find(".so") != std::string::npos) {
    return package;  // left to the dynamic loader's search path
  }
  std::string looked;
  for (const auto& candidate : candidates) {
    looked += (looked.empty() ? "" : ", ") + candidate;
  }
  throw Error("cannot find package '" + package + "'",
              "looked for " + looked + "; pass a path, or a file name such as 'lib" + package +
                  ".so' to search the dynamic loader's path");
}

std::vector<std::string> list_entries(const std::string& path) {
  check_shared_library_file(path);
  std::vector<std::string> symbols;
  try {
    boost::dll::library_info info(path);
    symbols = info.symbols();
  } catch (const std::exception& e) {
    throw Error("cannot read '" + path + "': " + e.what(), kNotSharedHint);
  }
  return detail::entries_from_symbols(symbols);
}

EntryFn load_entry(const std::string& path, const std::string& entry) {
  if (entry.empty()) {
    throw Error("the entry name is empty", "pass --main <name> of a DITASK_MAIN(name) entry");
  }
  if (!is_bare_name(path)) {
    check_shared_library_file(path);
  }
  auto& library = open_library(path);
  const std::string entry_symbol = std::string(detail::kEntryPrefix) + entry;
  const std::string abi_symbol = std::string(detail::kEntryAbiPrefix) + entry;
  // Both symbols, as DITASK_MAIN exports them: `ditask_entry_abi_x` alone is x's ABI symbol.
  const bool is_abi_symbol = entry.starts_with("abi_") &&
                             library.has(std::string(detail::kEntryPrefix) + entry.substr(4));
  if (library.has(entry_symbol) && !library.has(abi_symbol) && !is_abi_symbol) {
    throw Error("'" + path + "' exports " + entry_symbol + " but not " + abi_symbol +
                    ", the ditask ABI version it was built for",
                "define the entry with DITASK_MAIN(" + entry + ") from <ditask/ditask.hpp>");
  }
  if (!library.has(entry_symbol) || !library.has(abi_symbol)) {
    std::vector<std::string> entries;
    try {
      entries = list_entries(is_bare_name(path) ? library.location().string() : path);
    } catch (const std::exception&) {
      // The hint then says there are none; the error itself stays right.
    }
    throw Error("cannot find entry '" + entry + "' in '" + path + "'",
                detail::missing_entry_hint(entry, entries));
  }
  const std::uint32_t abi = library.get<std::uint32_t()>(abi_symbol)();
  if (abi != DITASK_ABI_VERSION) {
    throw Error("'" + path + "' was built for ditask ABI " + std::to_string(abi) +
                    ", this runtime speaks " + std::to_string(DITASK_ABI_VERSION),
                "rebuild the module against this ditask's headers");
  }
  return &library.get<void()>(entry_symbol);
}

}  // namespace ditask
