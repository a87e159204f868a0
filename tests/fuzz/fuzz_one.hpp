// SPDX-License-Identifier: MIT
// One fuzz input through the mesh decoders, shared by the libFuzzer target (frame_fuzz.cpp) and the
// corpus runner that CTest runs in every build (corpus_runner.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ditask::fuzz {

/// The frame limit of the fuzzed FrameDecoder.
inline constexpr std::size_t kFuzzMaxFrameBytes = std::size_t{1} << 20;

/// Runs `data` through the decoders. The first byte picks the mode: below 0x80 the rest is a byte
/// stream fed to a FrameDecoder(kFuzzMaxFrameBytes) in chunks of (first byte + 1) bytes, and every
/// frame's payload goes to decode_hello, decode_event_args and verify_proof; from 0x80 on the rest
/// is given to decode_hello and decode_event_args directly. ditask::Error from a decoder is the
/// expected answer to bad input. Errors: prints the broken invariant and calls std::abort (so the
/// fuzzer records the input); any other exception escapes.
void fuzz_one(std::span<const std::uint8_t> data);

}  // namespace ditask::fuzz
