// SPDX-License-Identifier: MIT
// The public entry points of ditask/rpc.hpp and ditask/rref.hpp: they find the running task's
// engine and hand over.
#include <atomic>
#include <typeindex>

#include "ditask/error.hpp"
#include "ditask/rpc.hpp"
#include "rpc_engine.hpp"
#include "rpc_registry.hpp"
#include "../transport/make_transport.hpp"

namespace ditask {
namespace detail {
namespace {

std::atomic<std::int64_t> g_default_timeout_ms{60'000};

// Why there is no engine: not a worker at all, or no task started (or it stopped).
std::pair<std::string, std::string> no_engine_reason() {
  if (!in_worker_mode()) {
    return {"this process is not a ditask worker",
            "remote calls travel between the workers of a job: run the module with ditask --package ... "
            "--parallel-workers N"};
  }
  return {"no task is running in this worker", "call ditask::task().start() first"};
}

std::shared_ptr<RpcEngine> engine_or_throw(const char* what) {
  auto engine = current_rpc_engine();
  if (!engine) {
    auto [reason, hint] = no_engine_reason();
    throw Error(std::string("cannot ") + what + ": " + reason, hint);
  }
  return engine;
}

// Refuses a name of the runtime's own functions ("ditask.group").
void check_user_name(const char* verb, std::string_view name) {
  if (name.starts_with("ditask.")) {
    throw Error(std::string("cannot ") + verb + " '" + std::string(name) +
                "': names starting with 'ditask.' are the runtime's");
  }
}

}  // namespace

std::chrono::milliseconds rpc_default_timeout() noexcept {
  return std::chrono::milliseconds(g_default_timeout_ms.load());
}

OutgoingCall begin_call(const Callee& to, std::string_view display) {
  auto engine = current_rpc_engine();
  if (!engine) {
    OutgoingCall call;
    call.state = std::make_shared<CallState>();
    auto [reason, hint] = no_engine_reason();
    call.state->fail(std::make_exception_ptr(
        RpcError(RpcError::Kind::stopped, to.node.value_or(-1), std::string(display), reason, hint)));
    return call;
  }
  return engine->begin(to, display);
}

void send_call_packed(const OutgoingCall& call, const std::vector<std::uint8_t>& wire) {
  if (auto engine = current_rpc_engine()) {
    engine->send(call, &wire, nullptr);
  } else {
    abort_call(call, std::make_exception_ptr(Error("the task stopped")));
  }
}

void send_call_args(const OutgoingCall& call, EventArgs args) {
  if (auto engine = current_rpc_engine()) {
    engine->send(call, nullptr, &args);
  } else {
    abort_call(call, std::make_exception_ptr(Error("the task stopped")));
  }
}

void abort_call(const OutgoingCall& call, std::exception_ptr error) noexcept {
  if (auto engine = current_rpc_engine()) {
    engine->abort(call, error);
  } else {
    call.state->fail(error);
  }
}

// ---- handles ----

RefRecord::RefRecord(std::int64_t owner, std::uint64_t id, std::string class_name, std::shared_ptr<void> local,
                     std::weak_ptr<ObjectTable> table) noexcept
    : owner_(owner), id_(id), class_name_(std::move(class_name)), local_(std::move(local)), table_(std::move(table)) {}

RefRecord::~RefRecord() {
  if (auto table = table_.lock()) {
    table->record_dropped(*this);
  }
}

json rref_to_json(const std::shared_ptr<RefRecord>& record) {
  const std::int64_t dest = rref_destination();
  if (dest == kNoDestination) {
    throw Error("an RRef can travel only as an argument or the result of a remote call",
                "pass it to rpc().call(...) or return it from a defined function");
  }
  return engine_or_throw("pass an RRef")->objects().to_json(record, dest);
}

std::shared_ptr<RefRecord> rref_from_json(const json& value, const std::string* expected_class) {
  return engine_or_throw("receive an RRef")->objects().from_json(value, expected_class);
}

const std::string* defined_class_name(const std::type_info& type) noexcept {
  return rpc_registry().class_name(std::type_index(type));
}

const std::string& class_name_of(const std::type_info& type) {
  if (const auto* name = defined_class_name(type)) {
    return *name;
  }
  throw Error(std::string("class ") + type.name() + " is not defined for remote calls",
              "call rpc().define_class<T>(\"Name\") on every node first");
}

std::shared_ptr<RefRecord> adopt_object(std::shared_ptr<void> object, const std::type_info& type) {
  const std::string& name = class_name_of(type);
  return engine_or_throw("make a remote-object handle")->objects().adopt(std::move(object), name);
}

std::shared_ptr<RefRecord> adopt_named_object(std::shared_ptr<void> object, const std::string& class_name) {
  if (!rpc_registry().has_class(class_name)) {
    throw Error("class '" + class_name + "' is not defined for remote calls", "define it on every node first");
  }
  return engine_or_throw("make a remote-object handle")->objects().adopt(std::move(object), class_name);
}

void check_class_name(const std::string& name) {
  if (name.empty() || name.find(' ') != std::string::npos) {
    throw Error("a class for remote calls needs a name without spaces, got '" + name + "'");
  }
}

void define_named_class(const std::string& name, Handlers constructor) {
  check_class_name(name);
  rpc_registry().define_named_class(name);
  rpc_registry().define("new " + name, std::move(constructor), false);
}

void define_named_method(const std::string& class_name, std::string method, Handlers handlers, bool concurrent) {
  rpc_registry().define_method(class_name, std::move(method), std::move(handlers), concurrent);
}

}  // namespace detail

// ---- Rpc ----

bool Rpc::undefine(std::string_view name) {
  detail::check_user_name("undefine", name);
  return detail::rpc_registry().undefine(name);
}

void Rpc::set_default_timeout(std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) {
    throw Error("the default call timeout must be positive, got " + std::to_string(timeout.count()) + " ms");
  }
  detail::g_default_timeout_ms = timeout.count();
}

std::chrono::milliseconds Rpc::default_timeout() const { return detail::rpc_default_timeout(); }

RpcStats Rpc::stats() const {
  auto engine = detail::current_rpc_engine();
  return engine ? engine->stats() : RpcStats{};
}

void Rpc::define_entry(std::string name, detail::Handlers handlers, bool concurrent, bool on_arrival) {
  if (name.empty()) {
    throw Error("a remote function needs a name");
  }
  detail::check_user_name("define", name);
  detail::rpc_registry().define(std::move(name), std::move(handlers), concurrent, on_arrival);
}

void Rpc::define_class_entry(const std::type_info& type, const std::string& name) {
  detail::check_class_name(name);
  detail::rpc_registry().define_class(std::type_index(type), name);
}

void Rpc::define_method(const std::string& class_name, std::string method, detail::Handlers handlers,
                        bool concurrent) {
  detail::rpc_registry().define_method(class_name, std::move(method), std::move(handlers), concurrent);
}

Rpc& rpc() {
  static Rpc instance;
  return instance;
}

}  // namespace ditask
