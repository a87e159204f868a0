// SPDX-License-Identifier: MIT
#include "hello.hpp"

#include <limits>
#include <map>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "ditask/error.hpp"
#include "ditask/msgpack.hpp"
#include "../codec/json_msgpack.hpp"

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

using Kind = Reader::Kind;

/// "not valid MessagePack (at byte N)", N counting the offending byte (as one past it).
[[noreturn]] void not_msgpack(const Reader::Failure& f) {
  if (f.why == Reader::Why::too_deep) {
    malformed("nested deeper than " + std::to_string(kMaxHelloNesting) + " levels");
  }
  const bool at_missing = f.why == Reader::Why::truncated;
  malformed("not valid MessagePack (at byte " + std::to_string(f.at + (at_missing ? 1 : 0)) + ")");
}

/// Steps over the elements of the container `item` whose header was just read, which may hold
/// `levels` more levels. Errors: as not_msgpack.
void skip_contents(Reader& reader, const Reader::Item& item, std::size_t levels) {
  const bool is_map = item.kind == Kind::map;
  if (!reader.need(is_map ? 2 * item.count : item.count)) {
    not_msgpack(reader.failure());
  }
  for (std::uint64_t i = 0; i < item.count; ++i) {
    Reader::Item key;
    if (is_map && !reader.next(key)) {
      not_msgpack(reader.failure());
    }
    if (is_map && key.kind != Kind::str) {
      not_msgpack(Reader::Failure{Reader::Why::key_not_string, reader.offset()});
    }
    if (!reader.skip(levels)) {
      not_msgpack(reader.failure());
    }
  }
}

/// One top-level value of the hello map, where the top map is level 1 of kMaxHelloNesting:
/// scalars whole, an array with its scalar elements (nested containers as empty placeholders),
/// a map as an empty placeholder.
json field_value(Reader& reader) {
  constexpr std::size_t kLevels = kMaxHelloNesting - 1;  // levels a top-level value may hold
  Reader::Item item;
  if (!reader.next(item)) {
    not_msgpack(reader.failure());
  }
  if (item.kind != Kind::array && item.kind != Kind::map) {
    return codec::scalar_json(item);
  }
  if (item.kind == Kind::map) {
    skip_contents(reader, item, kLevels - 1);
    return json::object();
  }
  if (!reader.need(item.count)) {
    not_msgpack(reader.failure());
  }
  json out = json::array();
  for (std::uint64_t i = 0; i < item.count; ++i) {
    Reader::Item element;
    if (!reader.next(element)) {
      not_msgpack(reader.failure());
    }
    if (element.kind == Kind::array || element.kind == Kind::map) {
      if (kLevels < 2) {
        not_msgpack(Reader::Failure{Reader::Why::too_deep, reader.offset()});
      }
      skip_contents(reader, element, kLevels - 2);
    }
    out.push_back(codec::scalar_json(element));
  }
  return out;
}

std::string kind_name(const Reader::Item& item) { return kind(codec::scalar_json(item)); }

/// The top-level map of a hello payload: each key's field_value. Refuses duplicate keys.
FieldMap read_fields(std::span<const std::uint8_t> payload) {
  Reader reader(payload);
  Reader::Item top;
  if (!reader.next(top)) {
    not_msgpack(reader.failure());
  }
  if (top.kind != Kind::map) {
    malformed("expected a map, got " + kind_name(top));
  }
  FieldMap fields;
  for (std::uint64_t i = 0; i < top.count; ++i) {
    Reader::Item key;
    if (!reader.next(key)) {
      not_msgpack(reader.failure());
    }
    if (key.kind != Kind::str) {
      not_msgpack(Reader::Failure{Reader::Why::key_not_string, reader.offset()});
    }
    std::string name(reinterpret_cast<const char*>(key.data), static_cast<std::size_t>(key.count));
    if (fields.count(name) != 0) {
      malformed("duplicate key '" + printable(name) + "'");
    }
    json value = field_value(reader);
    fields.emplace(std::move(name), std::move(value));
  }
  if (!reader.at_end()) {
    not_msgpack(Reader::Failure{Reader::Why::truncated, reader.offset()});
  }
  return fields;
}

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

std::vector<std::uint8_t> encode_hello(const Hello& hello) {
  check_for_encode(hello);
  std::vector<std::uint8_t> out;
  Packer p(out);
  p.map(12);
  p.string("v");
  p.unsigned_int(hello.version);
  p.string("n");
  p.integer(hello.node_id);
  p.string("i");
  p.unsigned_int(hello.instance);
  p.string("m");
  p.unsigned_int(hello.max_frame_bytes);
  p.string("r");
  p.string(hello.run_id);
  p.string("rx");
  p.value(hello.run_id_explicit);
  p.string("a");
  p.integer(hello.attempt);
  p.string("l");
  p.array(hello.labels.size());
  for (const auto& label : hello.labels) {
    p.string(label);
  }
  p.string("la");
  p.string(hello.listen);
  p.string("c");
  p.string(hello.nonce);
  p.string("au");
  p.value(hello.auth);
  p.string("w");
  p.integer(hello.world_size);
  return out;
}

Hello decode_hello(std::span<const std::uint8_t> payload) {
  if (payload.size() > kMaxHelloBytes) {
    malformed("payload of " + std::to_string(payload.size()) + " bytes exceeds the limit of " +
              std::to_string(kMaxHelloBytes) + " bytes");
  }
  const FieldMap f = read_fields(payload);
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
  if (const json* w = field(f, "w", "world size", false)) {
    h.world_size = get_signed(*w, "w", "world size");
    if (h.world_size < 0) {
      malformed("\"w\" (world size) is negative: " + std::to_string(h.world_size));
    }
  }
  return h;
}


}  // namespace ditask::detail::mesh
