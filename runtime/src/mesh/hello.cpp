// SPDX-License-Identifier: MIT
#include "hello.hpp"

#include <limits>
#include <map>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "ditask/error.hpp"

namespace ditask::detail::mesh {
namespace {

using FieldMap = std::map<std::string, json>;

[[noreturn]] void malformed(const std::string& why) { throw Error("malformed hello: " + why); }


std::string kind(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "nil";
    case json::value_t::boolean:
      return "bool";
    case json::value_t::number_integer:
      return "integer";
    case json::value_t::number_unsigned:
      return "unsigned integer";
    case json::value_t::number_float:
      return "float";
    case json::value_t::string:
      return "string";
    case json::value_t::binary:
      return "binary";
    case json::value_t::array:
      return "array";
    case json::value_t::object:
      return "map";
    case json::value_t::discarded:
      break;
  }
  return "nothing";
}

/// What is wrong with a string field, or nullopt: too long, a control byte, or (for nonces) not
/// lowercase hex. Nonces are hex so the NUL-separated auth message cannot be read two ways.
std::optional<std::string> string_problem(std::string_view value, std::size_t max, bool hex) {
  if (value.size() > max) {
    return "is " + std::to_string(value.size()) + " bytes long, at most " + std::to_string(max);
  }
  for (const char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    if (hex && !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return std::string("is not lowercase hex");
    }
    if (c < 0x20 || c == 0x7f) {
      return std::string("holds a control character");
    }
  }
  return std::nullopt;
}

/// Collects the top-level map of a MessagePack hello: each key's value, where containers below
/// the first level are kept as empty placeholders. Refuses nesting past kMaxHelloNesting before
/// nlohmann recurses into it, and duplicate keys.
class HelloSax final : public nlohmann::json_sax<json> {
 public:
  bool null() override { return put(json(nullptr)); }
  bool boolean(bool v) override { return put(json(v)); }
  bool number_integer(number_integer_t v) override { return put(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return put(json(v)); }
  bool number_float(number_float_t v, const string_t& /*text*/) override { return put(json(v)); }
  bool string(string_t& v) override { return put(json(std::move(v))); }
  bool binary(binary_t& v) override { return put(json(std::move(v))); }
  bool start_object(std::size_t /*elements*/) override { return open(json::object()); }
  bool start_array(std::size_t /*elements*/) override { return open(json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

  bool key(string_t& k) override {
    if (depth_ != 1) {
      return true;
    }
    if (fields_.count(k) != 0) {
      return fail("duplicate key '" + printable(k) + "'");
    }
    key_ = std::move(k);
    return true;
  }

  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& /*ex*/) override {
    return fail("not valid MessagePack (at byte " + std::to_string(position) + ")");
  }

  /// Why parsing stopped, when it did.
  const std::string& error() const noexcept { return error_; }
  /// The top-level keys and values, once parsing succeeded.
  FieldMap take() && { return std::move(fields_); }

 private:
  bool fail(std::string why) {
    if (error_.empty()) {
      error_ = std::move(why);
    }
    return false;
  }

  bool put(json v) {
    if (depth_ == 0) {
      return fail("expected a map, got " + kind(v));
    }
    if (depth_ == 1) {
      fields_.emplace(key_, std::move(v));
    } else if (depth_ == 2 && collecting_) {
      fields_[key_].push_back(std::move(v));
    }
    return true;
  }

  bool open(json container) {
    if (depth_ == 0 && !container.is_object()) {
      return fail("expected a map, got " + kind(container));
    }
    if (depth_ >= kMaxHelloNesting) {
      return fail("nested deeper than " + std::to_string(kMaxHelloNesting) + " levels");
    }
    if (depth_ == 1) {
      collecting_ = container.is_array();
    }
    if (depth_ >= 1) {
      put(std::move(container));
    }
    ++depth_;
    return true;
  }

  bool close() {
    --depth_;
    return true;
  }

  FieldMap fields_;
  std::string key_;
  std::size_t depth_ = 0;    // containers open now
  bool collecting_ = false;  // the value at depth 1 being read is an array
  std::string error_;
};

/// The field `key` (shown as `name` in errors), or nullptr when absent and not required.
const json* field(const FieldMap& f, const char* key, const char* name, bool required) {
  const auto it = f.find(key);
  if (it != f.end()) {
    return &it->second;
  }
  if (required) {
    malformed(std::string("missing key '") + key + "' (" + name + ")");
  }
  return nullptr;
}

[[noreturn]] void wrong(const char* key, const char* name, const std::string& why) {
  malformed(std::string("'") + key + "' (" + name + ") " + why);
}

[[noreturn]] void wrong_type(const char* key, const char* name, const char* want, const json& v) {
  wrong(key, name, std::string("must be ") + want + ", got " + kind(v));
}

std::uint64_t get_unsigned(const json& v, const char* key, const char* name, std::uint64_t max) {
  std::uint64_t n = 0;
  if (v.is_number_unsigned()) {
    n = v.get<std::uint64_t>();
  } else if (v.is_number_integer() && v.get<std::int64_t>() >= 0) {
    n = static_cast<std::uint64_t>(v.get<std::int64_t>());
  } else if (v.is_number_integer()) {
    wrong(key, name, "must not be negative, got " + std::to_string(v.get<std::int64_t>()));
  } else {
    wrong_type(key, name, "an unsigned integer", v);
  }
  if (n > max) {
    wrong(key, name, std::to_string(n) + " is out of range (at most " + std::to_string(max) + ")");
  }
  return n;
}

std::int64_t get_signed(const json& v, const char* key, const char* name) {
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (v.is_number_unsigned()) {
    return static_cast<std::int64_t>(get_unsigned(v, key, name, kMax));
  }
  if (!v.is_number_integer()) {
    wrong_type(key, name, "an integer", v);
  }
  return v.get<std::int64_t>();
}

bool get_bool(const json* v, const char* key, const char* name) {
  if (v == nullptr) {
    return false;
  }
  if (!v->is_boolean()) {
    wrong_type(key, name, "a bool", *v);
  }
  return v->get<bool>();
}

std::string get_string(const json* v, const char* key, const char* name, std::size_t max,
                       bool hex = false) {
  if (v == nullptr) {
    return {};
  }
  if (!v->is_string()) {
    wrong_type(key, name, "a string", *v);
  }
  auto s = v->get<std::string>();
  if (auto problem = string_problem(s, max, hex)) {
    wrong(key, name, *problem);
  }
  return s;
}

std::set<std::string> get_labels(const json* v) {
  if (v == nullptr) {
    return {};
  }
  if (!v->is_array()) {
    wrong_type("l", "labels", "an array", *v);
  }
  if (v->size() > kMaxHelloLabels) {
    wrong("l", "labels",
          "has " + std::to_string(v->size()) + " entries, at most " +
              std::to_string(kMaxHelloLabels));
  }
  std::set<std::string> labels;
  for (const auto& label : *v) {
    if (!label.is_string()) {
      wrong_type("l", "labels", "strings", label);
    }
    if (auto problem = string_problem(label.get_ref<const std::string&>(), kMaxLabelBytes, false)) {
      wrong("l", "labels",
            "entry '" + printable(label.get_ref<const std::string&>()) + "' " + *problem);
    }
    labels.insert(label.get<std::string>());
  }
  return labels;
}

void check_for_encode(const Hello& h) {
  const std::pair<const char*, std::optional<std::string>> checks[] = {
      {"run id", string_problem(h.run_id, kMaxRunIdBytes, false)},
      {"listen address", string_problem(h.listen, kMaxListenBytes, false)},
      {"nonce", string_problem(h.nonce, kMaxNonceBytes, true)},
  };
  for (const auto& [name, problem] : checks) {
    if (problem) {
      throw Error(std::string("invalid hello: ") + name + " " + *problem);
    }
  }
  if (h.labels.size() > kMaxHelloLabels) {
    throw Error("invalid hello: " + std::to_string(h.labels.size()) + " labels, at most " +
                std::to_string(kMaxHelloLabels));
  }
  for (const auto& label : h.labels) {
    if (auto problem = string_problem(label, kMaxLabelBytes, false)) {
      throw Error("invalid hello: label '" + printable(label) + "' " + *problem);
    }
  }
}

}  // namespace

/// `text` for an error line: control bytes as \xNN, cut after `max` bytes.
std::string printable(std::string_view text, std::size_t max) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (const char ch : text.substr(0, max)) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      out += {'\\', 'x', kDigits[c >> 4], kDigits[c & 0x0f]};
    } else {
      out += ch;
    }
  }
  return text.size() > max ? out + "..." : out;
}

std::vector<std::uint8_t> encode_hello(const Hello& hello) {
  check_for_encode(hello);
  const json j = {
      {"v", hello.version},         {"n", hello.node_id}, {"i", hello.instance},
      {"m", hello.max_frame_bytes}, {"r", hello.run_id},  {"rx", hello.run_id_explicit},
      {"a", hello.attempt},         {"l", hello.labels},  {"la", hello.listen},
      {"c", hello.nonce},           {"au", hello.auth},
  };
  return json::to_msgpack(j);
}

Hello decode_hello(std::span<const std::uint8_t> payload) {
  if (payload.size() > kMaxHelloBytes) {
    malformed("payload of " + std::to_string(payload.size()) + " bytes exceeds the limit of " +
              std::to_string(kMaxHelloBytes) + " bytes");
  }
  HelloSax sax;
  bool parsed = false;
  try {
    parsed = json::sax_parse(payload.begin(), payload.end(), &sax, json::input_format_t::msgpack,
                             /*strict=*/true);
  } catch (const json::exception& e) {
    // Our SAX never throws and the reader reports through it; this is a safety net.
    malformed(std::string("not valid MessagePack (") + e.what() + ")");
  }
  if (!parsed) {
    malformed(sax.error().empty() ? std::string("not valid MessagePack") : sax.error());
  }
  const FieldMap f = std::move(sax).take();
  Hello h;
  h.version = static_cast<std::uint32_t>(get_unsigned(
      *field(f, "v", "version", true), "v", "version", std::numeric_limits<std::uint32_t>::max()));
  if (h.version != kWireVersion) {
    return h;  // The rest may mean something else there; hello_refusal names the version.
  }
  h.node_id = get_signed(*field(f, "n", "node id", true), "n", "node id");
  h.instance = get_unsigned(*field(f, "i", "instance", true), "i", "instance",
                            std::numeric_limits<std::uint64_t>::max());
  h.max_frame_bytes = get_unsigned(*field(f, "m", "max frame bytes", true), "m", "max frame bytes",
                                   std::numeric_limits<std::uint64_t>::max());
  h.run_id = get_string(field(f, "r", "run id", false), "r", "run id", kMaxRunIdBytes);
  h.run_id_explicit = get_bool(field(f, "rx", "run id explicit", false), "rx", "run id explicit");
  if (const json* a = field(f, "a", "attempt", false)) {
    h.attempt = get_signed(*a, "a", "attempt");
  }
  h.labels = get_labels(field(f, "l", "labels", false));
  h.listen =
      get_string(field(f, "la", "listen address", false), "la", "listen address", kMaxListenBytes);
  h.nonce = get_string(field(f, "c", "nonce", false), "c", "nonce", kMaxNonceBytes, true);
  h.auth = get_bool(field(f, "au", "auth", false), "au", "auth");
  return h;
}


}  // namespace ditask::detail::mesh
