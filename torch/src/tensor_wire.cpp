// SPDX-License-Identifier: MIT
// A tensor's bytes (docs/autograd.md "Tensors on the wire"):
//   "DTT1" | dtype (1) | flags (1: requires grad 1, autograd record 2) | dimensions (2) |
//   sizes (8 each) | [context id (8) | message id (8)] | elements, contiguous, native order.
// Integers are little-endian; the elements are the machine's (x86-64 and arm64: little-endian).
#include "ditask/torch/tensor_wire.hpp"

#include <cstring>
#include <sstream>
#include <string>

#include <ATen/ATen.h>
#include <ditask/error.hpp>
#include <ditask/detail/rpc_wire.hpp>

#include "contexts.hpp"

namespace ditask::tensor_wire {

namespace {

constexpr char kMagic[4] = {'D', 'T', 'T', '1'};
constexpr std::uint8_t kRequiresGrad = 1;
constexpr std::uint8_t kRecorded = 2;
constexpr std::size_t kHeader = 4 + 1 + 1 + 2;
constexpr std::size_t kMaxDims = 64;

void put_u64(std::vector<std::uint8_t>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
}

std::uint64_t get_u64(const std::uint8_t* at) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    v |= static_cast<std::uint64_t>(at[i]) << (8 * i);
  }
  return v;
}

// The dtypes a tensor may travel as (c10::ScalarType's numbers, stable in LibTorch's ABI).
bool travels(at::ScalarType type) {
  switch (type) {
    case at::kByte:
    case at::kChar:
    case at::kShort:
    case at::kInt:
    case at::kLong:
    case at::kHalf:
    case at::kFloat:
    case at::kDouble:
    case at::kComplexFloat:
    case at::kComplexDouble:
    case at::kBool:
    case at::kBFloat16:
      return true;
    default:
      return false;
  }
}

[[noreturn]] void malformed(const std::string& why) {
  throw Error("not a tensor: " + why, "send tensors as at::Tensor (torch::Tensor) arguments or results");
}

}  // namespace

std::vector<std::uint8_t> encode(const at::Tensor& tensor) {
  if (!tensor.defined()) {
    throw Error("cannot send an undefined tensor", "give the call a tensor that holds values");
  }
  if (tensor.layout() != at::kStrided) {
    std::ostringstream layout;
    layout << tensor.layout();
    throw Error("cannot send a sparse tensor (layout " + layout.str() + ")", "send tensor.to_dense()");
  }
  if (!tensor.device().is_cpu()) {
    throw Error("cannot send a tensor on " + tensor.device().str(), "move it to the CPU first: tensor.cpu()");
  }
  if (!travels(tensor.scalar_type())) {
    throw Error(std::string("cannot send a tensor of dtype ") + at::toString(tensor.scalar_type()),
                "convert it to a plain dtype (float, double, integers, bool, half, bfloat16, complex)");
  }
  if (tensor.dim() > static_cast<std::int64_t>(kMaxDims)) {
    throw Error("cannot send a tensor of " + std::to_string(tensor.dim()) + " dimensions (at most 64)");
  }
  // Inside a context, a tensor that requires grad and goes to another worker is recorded.
  std::int64_t context_id = 0, message = 0;
  const std::int64_t to = ditask::detail::encoding_destination();
  if (tensor.requires_grad() && to >= 0) {
    if (auto context = dist_autograd::detail::current()) {
      dist_autograd::detail::define_remote_functions();
      message = dist_autograd::detail::Registry::get().next_message();
      context->add_send(tensor, to, message);
      context_id = context->id();
    }
  }
  const at::Tensor values = tensor.detach().contiguous();
  const std::size_t bytes = static_cast<std::size_t>(values.numel()) * static_cast<std::size_t>(values.element_size());
  std::vector<std::uint8_t> out;
  out.reserve(kHeader + 8 * static_cast<std::size_t>(values.dim()) + 16 + bytes);
  out.insert(out.end(), kMagic, kMagic + 4);
  out.push_back(static_cast<std::uint8_t>(values.scalar_type()));
  out.push_back(static_cast<std::uint8_t>((tensor.requires_grad() ? kRequiresGrad : 0) | (message != 0 ? kRecorded : 0)));
  out.push_back(static_cast<std::uint8_t>(values.dim()));
  out.push_back(0);
  for (const auto size : values.sizes()) {
    put_u64(out, static_cast<std::uint64_t>(size));
  }
  if (message != 0) {
    put_u64(out, static_cast<std::uint64_t>(context_id));
    put_u64(out, static_cast<std::uint64_t>(message));
  }
  const auto at = out.size();
  out.resize(at + bytes);
  if (bytes > 0) {
    std::memcpy(out.data() + at, values.data_ptr(), bytes);
  }
  return out;
}

at::Tensor decode(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < kHeader || std::memcmp(bytes.data(), kMagic, 4) != 0) {
    malformed("no tensor header");
  }
  const auto type = static_cast<at::ScalarType>(bytes[4]);
  if (bytes[4] >= static_cast<std::uint8_t>(at::ScalarType::NumOptions) || !travels(type)) {
    malformed("unknown dtype " + std::to_string(bytes[4]));
  }
  const std::uint8_t flags = bytes[5];
  const std::size_t dims = bytes[6] | (static_cast<std::size_t>(bytes[7]) << 8);
  if (dims > kMaxDims) {
    malformed(std::to_string(dims) + " dimensions");
  }
  const bool recorded = (flags & kRecorded) != 0;
  std::size_t at = kHeader;
  if (bytes.size() < at + 8 * dims + (recorded ? 16 : 0)) {
    malformed("its sizes are cut short");
  }
  std::vector<std::int64_t> sizes(dims);
  std::uint64_t numel = 1;
  for (std::size_t d = 0; d < dims; ++d) {
    sizes[d] = static_cast<std::int64_t>(get_u64(bytes.data() + at));
    at += 8;
    if (sizes[d] < 0 || (sizes[d] > 0 && numel > (std::uint64_t{1} << 62) / static_cast<std::uint64_t>(sizes[d]))) {
      malformed("a size out of range");
    }
    numel *= static_cast<std::uint64_t>(sizes[d]);
  }
  std::int64_t context_id = 0, message = 0;
  if (recorded) {
    context_id = static_cast<std::int64_t>(get_u64(bytes.data() + at));
    message = static_cast<std::int64_t>(get_u64(bytes.data() + at + 8));
    at += 16;
  }
  at::Tensor tensor = at::empty(sizes, at::TensorOptions().dtype(type));
  const auto element = static_cast<std::size_t>(tensor.element_size());
  if (bytes.size() - at != numel * element) {
    malformed("it has " + std::to_string(bytes.size() - at) + " bytes of elements for " + std::to_string(numel) +
              " elements of " + std::to_string(element));
  }
  if (numel > 0) {
    std::memcpy(tensor.data_ptr(), bytes.data() + at, numel * element);
  }
  if ((flags & kRequiresGrad) != 0 && (tensor.is_floating_point() || tensor.is_complex())) {
    tensor.requires_grad_(true);
  }
  if (recorded) {
    // A late message of a context released here does not bring it back: a plain tensor then.
    if (auto context = dist_autograd::detail::Registry::get().join(context_id)) {
      context->add_recv(tensor, message, dist_autograd::detail::node_of(message));
    }
  }
  return tensor;
}

}  // namespace ditask::tensor_wire
