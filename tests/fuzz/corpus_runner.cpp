// SPDX-License-Identifier: MIT
// Runs every file of the given folders (or the given files) through fuzz_one, so the seed corpus
// and any crash input saved by libFuzzer replay in a normal (gcc, ASan) build: CTest fuzz.corpus.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_one.hpp"

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> inputs_of(int argc, char** argv) {
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg(argv[i]);
    if (fs::is_directory(arg)) {
      for (const auto& entry : fs::directory_iterator(arg)) {
        if (entry.is_regular_file()) {
          files.push_back(entry.path());
        }
      }
    } else {
      files.push_back(arg);
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::uint8_t> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error("cannot read '" + path.string() + "'");
  }
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

int main(int argc, char** argv) {
  const auto files = inputs_of(argc, argv);
  if (files.empty()) {
    std::fprintf(stderr, "usage: %s <corpus folder or file>... (found no input files)\n", argv[0]);
    return 2;
  }
  for (const auto& file : files) {
    // Named before it runs, so an abort in fuzz_one shows which input caused it.
    std::printf("fuzz.corpus: %s\n", file.filename().c_str());
    std::fflush(stdout);
    try {
      ditask::fuzz::fuzz_one(read_file(file));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fuzz.corpus: %s: unexpected exception: %s\n", file.c_str(), e.what());
      return 1;
    }
  }
  std::printf("fuzz.corpus: %zu inputs ok\n", files.size());
  return 0;
}
