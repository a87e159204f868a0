// SPDX-License-Identifier: MIT
// Tensors on the wire (torch/src/tensor_wire.cpp): every dtype, shape and layout round-trips
// exactly, through JSON too; what cannot travel is refused with a reason; bytes that are not a
// tensor are refused, never read past their end.
#include <catch2/catch.hpp>

#include <ditask/torch.hpp>
#include <torch/torch.h>

namespace {

using ditask::tensor_wire::decode;
using ditask::tensor_wire::encode;

at::Tensor round_trip(const at::Tensor& t) {
  const auto bytes = encode(t);
  return decode(std::span<const std::uint8_t>(bytes.data(), bytes.size()));
}

bool identical(const at::Tensor& a, const at::Tensor& b) {
  return a.scalar_type() == b.scalar_type() && a.sizes() == b.sizes() && at::equal(a, b);
}

}  // namespace

TEST_CASE("tensor wire: every dtype and shape round-trips exactly", "[torch][unit]") {
  torch::manual_seed(3);
  const std::vector<at::Tensor> cases = {
      torch::randn({3, 4}),
      torch::randn({2, 3, 4}, torch::kDouble),
      torch::randint(-100, 100, {7}, torch::kLong),
      torch::randint(-100, 100, {2, 2}, torch::kInt),
      torch::randint(0, 200, {5}, torch::kByte),
      torch::randint(-100, 100, {5}, torch::kChar),
      torch::randint(-100, 100, {5}, torch::kShort),
      torch::randn({4}).to(torch::kHalf),
      torch::randn({4}).to(torch::kBFloat16),
      torch::randn({3}, torch::kComplexFloat),
      torch::randn({3}, torch::kComplexDouble),
      torch::randint(0, 2, {6}).to(torch::kBool),
      torch::tensor(2.5),            // a scalar: no dimensions
      torch::empty({0, 3}),          // no elements
  };
  for (const auto& t : cases) {
    CAPTURE(t.scalar_type(), t.sizes());
    CHECK(identical(round_trip(t), t));
  }
}

TEST_CASE("tensor wire: a view, a transpose and a slice travel as their values", "[torch][unit]") {
  const auto base = torch::arange(24, torch::kFloat).reshape({4, 6});
  const auto transposed = base.t();
  const auto sliced = base.index({torch::indexing::Slice(), torch::indexing::Slice(1, 6, 2)});
  CHECK_FALSE(transposed.is_contiguous());
  CHECK(at::equal(round_trip(transposed), transposed));
  CHECK(at::equal(round_trip(sliced), sliced));
  const auto out = round_trip(sliced);
  CHECK(out.is_contiguous());
  CHECK(out.data_ptr() != sliced.data_ptr());  // its own memory
}

TEST_CASE("tensor wire: requires_grad travels, and outside a context nothing is recorded", "[torch][unit]") {
  const auto w = torch::randn({3}, torch::requires_grad());
  const auto y = w * 2;
  const auto out = round_trip(y);
  CHECK(out.requires_grad());
  CHECK_FALSE(out.grad_fn());  // a leaf on the receiving side
  CHECK(at::allclose(out, y.detach()));
  CHECK_FALSE(round_trip(torch::randn({3})).requires_grad());
}

TEST_CASE("tensor wire: through ditask's JSON, as calls carry it", "[torch][unit]") {
  const auto t = torch::randn({2, 5}, torch::kDouble);
  ditask::json j = t;
  CHECK(j.is_binary());
  CHECK(j.get_binary().subtype() == ditask::tensor_wire::kSubtype);
  CHECK(identical(j.get<at::Tensor>(), t));
  const std::vector<at::Tensor> list = {torch::ones({2}), torch::zeros({1, 1}, torch::kLong)};
  ditask::json many = list;
  const auto back = many.get<std::vector<at::Tensor>>();
  REQUIRE(back.size() == 2);
  CHECK(identical(back[0], list[0]));
  CHECK(identical(back[1], list[1]));
}

TEST_CASE("tensor wire: what cannot travel is refused with its reason", "[torch][unit]") {
  CHECK_THROWS_WITH(encode(at::Tensor()), "cannot send an undefined tensor");
  CHECK_THROWS_WITH(encode(torch::randn({2}).to_sparse()), "cannot send a sparse tensor (layout Sparse)");
  CHECK_THROWS_WITH(encode(torch::zeros({2}, torch::kComplexHalf)), "cannot send a tensor of dtype ComplexHalf");
}

TEST_CASE("tensor wire: bytes that are not a tensor are refused, never read past their end", "[torch][unit]") {
  const auto good = encode(torch::randn({3, 2}));
  auto check_refused = [](std::vector<std::uint8_t> bytes, const std::string& why) {
    CAPTURE(why);
    CHECK_THROWS_WITH(decode(std::span<const std::uint8_t>(bytes.data(), bytes.size())),
                      Catch::Matchers::StartsWith("not a tensor: "));
  };
  check_refused({}, "empty");
  check_refused({'D', 'T', 'T'}, "short header");
  auto magic = good;
  magic[0] = 'X';
  check_refused(magic, "magic");
  auto dtype = good;
  dtype[4] = 200;
  check_refused(dtype, "dtype");
  auto dims = good;
  dims[6] = 65;
  check_refused(dims, "dimensions");
  for (std::size_t cut = 1; cut < good.size(); cut += 3) {
    check_refused(std::vector<std::uint8_t>(good.begin(), good.end() - static_cast<std::ptrdiff_t>(cut)), "cut");
  }
  auto size = good;
  size[8 + 7] = 0x80;  // a negative size
  check_refused(size, "negative size");
  auto extra = good;
  extra.push_back(0);
  check_refused(extra, "trailing byte");
}
