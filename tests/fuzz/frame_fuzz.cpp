// SPDX-License-Identifier: MIT
// libFuzzer entry for the mesh decoders (built with DITASK_FUZZ=ON and clang; scripts/fuzz.sh).
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz_one.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ditask::fuzz::fuzz_one(std::span<const std::uint8_t>(data, size));
  return 0;
}
