// SPDX-License-Identifier: MIT
// The C++ side of python/tests/test_mixed.py: node 0 of a job whose node 1 runs Python
// (jobs/mixed.py). Events and remote calls cross between the two languages both ways.
#include <cstdint>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <ditask/ditask.hpp>

namespace {

/// A C++ class Python creates here with rpc.remote(0, "Tally", args=(5,)) and calls.
struct Tally {
  std::int64_t total = 0;
  Tally() = default;
  explicit Tally(std::int64_t start) : total(start) {}
  std::int64_t add(std::int64_t n) { return total += n; }
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Tally, total)

}  // namespace

DITASK_MAIN(peer) {
  auto& task = ditask::task();
  ditask::rpc().define("cpp_add", [](std::int64_t a, std::int64_t b) { return a + b; });
  ditask::rpc().define("cpp_sum", [](const std::vector<double>& values) {
    double sum = 0;
    for (double v : values) {
      sum += v;
    }
    return sum;
  });
  ditask::rpc().define_class<Tally>("Tally").constructor<std::int64_t>().method("add", &Tally::add);
  ditask::rpc().define("tally_total", [](const ditask::RRef<Tally>& tally) { return tally.local_value()->total; });
  auto running = task.start();
  auto done = task.waiter("done");
  task.on("py_values", [&task](const std::string& text, std::int64_t number, const std::vector<double>& values,
                               const std::vector<std::uint8_t>& bytes, const ditask::Kwargs& named,
                               const ditask::EventMeta& meta) {
    std::cout << ("cpp got py_values: " + text + " " + std::to_string(number) + " " + std::to_string(values.size()) +
                  " values, " + std::to_string(bytes.size()) + " bytes, flag=" +
                  (named.get<bool>("flag") ? "true" : "false") + "\n");
    task.emit_to_node(meta.sender, "cpp_values", std::string("from C++"),
                      std::map<std::string, std::int64_t>{{"a", 1}, {"b", 2}}, std::vector<std::uint8_t>{1, 2, 3},
                      ditask::kw("pi", 3.25));
  });
  task.ready();
  const auto product = ditask::rpc().call<std::int64_t>(1, "py_mul", std::int64_t{6}, std::int64_t{7});
  std::cout << ("cpp called py_mul: " + std::to_string(product) + "\n") << std::flush;
  done.wait();
}
