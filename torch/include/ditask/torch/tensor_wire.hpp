// SPDX-License-Identifier: MIT
#pragma once

/// LibTorch tensors as arguments and results of remote calls (and in events): any dtype, shape
/// and layout, sent as their raw bytes (MessagePack binary), never pickled. Inside a distributed
/// autograd context, a tensor that requires grad is recorded as it goes (dist_autograd.hpp).
/// docs/autograd.md.

#include <cstdint>
#include <span>
#include <vector>

#include <ATen/Tensor.h>
#include <nlohmann/json.hpp>

#include "ditask/torch/export.hpp"

namespace ditask::tensor_wire {

/// The MessagePack binary subtype a tensor travels with.
inline constexpr std::uint8_t kSubtype = 0x74;

/// A tensor's bytes: a header (dtype, shape, autograd record) and its elements, contiguous, in
/// the machine's byte order. Sent in a call inside a context, a tensor that requires grad is
/// recorded as a send of that context (its gradient comes back to it in backward).
/// Errors: ditask::Error for a tensor that is not on the CPU or of a dtype that cannot travel.
DITASK_TORCH_API std::vector<std::uint8_t> encode(const at::Tensor& tensor);
/// The tensor `bytes` hold (its own memory). A tensor sent inside a context arrives as a leaf
/// that requires grad, recorded as a receive of that context, which becomes the context of the
/// call being served. Errors: ditask::Error for bytes that are not a tensor.
DITASK_TORCH_API at::Tensor decode(std::span<const std::uint8_t> bytes);

}  // namespace ditask::tensor_wire

namespace nlohmann {

/// at::Tensor (torch::Tensor) converts to and from ditask's JSON: what rpc().call(),
/// define(), remote<T>() and RRef<at::Tensor>::to_here() use.
template <>
struct adl_serializer<at::Tensor> {
  static void to_json(json& j, const at::Tensor& tensor) {
    j = json::binary(ditask::tensor_wire::encode(tensor), ditask::tensor_wire::kSubtype);
  }
  static void from_json(const json& j, at::Tensor& tensor) {
    const auto& bytes = j.get_binary();
    tensor = ditask::tensor_wire::decode(std::span<const std::uint8_t>(bytes.data(), bytes.size()));
  }
};

}  // namespace nlohmann
