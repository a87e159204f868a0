// SPDX-License-Identifier: MIT
// Reply to whoever asked: a handler's trailing `const ditask::EventMeta&` names the sender, and
// emit_to_node(meta.sender, ...) answers it. The request/response pattern RPC is built on.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "mesh_tests.hpp"

using namespace mesh_tests;

namespace {

std::string labels_text(const ditask::EventMeta& meta) {
  std::string out;
  for (const auto& label : meta.labels) {
    out += (out.empty() ? "" : ";") + label;
  }
  return out;
}

}  // namespace

// Every node but 0 sends "ask" to node 0; node 0 answers each sender from the meta of its
// request with what it learned (sender, attempt, labels, transport, remote), and each asker
// reports that answer and the meta of the answer itself. Prints "RESULT answered=<n>" on node 0
// and "RESULT asked_as=<id> attempt=<a> labels=<l> transport=<t> remote=<0|1> answer_from=<id>
// answer_remote=<0|1>" on the others.
DITASK_MAIN(reply) {
  auto& task = ditask::task();
  Shared<std::int64_t> answered;
  Shared<std::string> answer;
  auto running = task.start();
  const auto peers = static_cast<std::int64_t>(task.router().peers().size());
  if (node_id() == 0) {
    task.on("ask", [&](std::int64_t asker, const ditask::EventMeta& meta) {
      if (asker != meta.sender) {
        throw std::runtime_error("ask from node " + std::to_string(asker) + " came with sender " +
                                 std::to_string(meta.sender));
      }
      task.emit_to_node(meta.sender, "answer", std::int64_t{meta.sender}, std::int64_t{meta.attempt},
                        labels_text(meta), meta.transport, meta.remote);
      answered.update([](auto& n) { ++n; });
    });
    task.ready();
    answered.wait([&](auto n) { return n >= peers; }, "an ask from every peer");
    result("answered=" + std::to_string(answered.get()));
    return;
  }
  task.on("answer", [&](std::int64_t sender, std::int64_t attempt, const std::string& labels,
                        const std::string& transport, bool remote, const ditask::EventMeta& meta) {
    answer.update([&](auto& text) {
      text = "asked_as=" + std::to_string(sender) + " attempt=" + std::to_string(attempt) + " labels=" + labels +
             " transport=" + transport + " remote=" + std::to_string(int{remote}) +
             " answer_from=" + std::to_string(meta.sender) + " answer_remote=" + std::to_string(int{meta.remote});
    });
  });
  task.ready();
  task.emit_to_node(0, "ask", node_id());
  answer.wait([](const auto& text) { return !text.empty(); }, "node 0's answer");
  result(answer.get());
}

// The same pattern for an event this node emitted itself (`emit_local`): its meta names this
// node, and emit_to_node(meta.sender, ...) answers it here. Prints "RESULT answer=42 from=<id>
// transport=<t>" with the answer's own meta.
DITASK_MAIN(reply_local) {
  auto& task = ditask::task();
  Shared<std::string> answer;
  auto running = task.start();
  task.on("ask", [&](std::int64_t question, const ditask::EventMeta& meta) {
    task.emit_to_node(meta.sender, "answer", question * 2);
  });
  task.on("answer", [&](std::int64_t value, const ditask::EventMeta& meta) {
    answer.update([&](auto& text) {
      text = "answer=" + std::to_string(value) + " from=" + std::to_string(meta.sender) + " transport=" + meta.transport;
    });
  });
  task.ready();
  task.emit_local("ask", std::int64_t{21});
  answer.wait([](const auto& text) { return !text.empty(); }, "the answer to this node's own ask");
  result(answer.get());
}
