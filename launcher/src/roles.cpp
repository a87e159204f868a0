// SPDX-License-Identifier: MIT
#include "ditask/launcher/roles.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "ditask/error.hpp"
#include "ditask/runtime/suggest.hpp"

namespace ditask::launcher {
namespace {

constexpr const char* kRolesHint =
    "give role:ids entries, e.g. --roles learner:0,evaluator:1,collector:2- (ids N, N-M or N-; "
    "learner+evaluator:0 gives one node two roles)";

[[noreturn]] void bad_roles(const std::string& what) { throw Error("--roles: " + what, kRolesHint); }

bool valid_role(const std::string& role) {
  return !role.empty() && role.size() <= 64 && std::all_of(role.begin(), role.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' || c == '-';
         });
}

std::optional<std::int64_t> to_id(const std::string& text) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < 0) {
    return std::nullopt;
  }
  return v;
}

RoleEntry::Ids parse_ids(const std::string& piece, const std::string& entry_text) {
  const auto dash = piece.find('-');
  RoleEntry::Ids ids;
  auto first = to_id(piece.substr(0, dash));
  if (!first) {
    bad_roles("'" + piece + "' in '" + entry_text + "' is not a node id, N-M or N-");
  }
  ids.first = *first;
  if (dash != std::string::npos && dash + 1 < piece.size()) {
    auto last = to_id(piece.substr(dash + 1));
    if (!last) {
      bad_roles("'" + piece + "' in '" + entry_text + "' is not a node id, N-M or N-");
    }
    if (*last < ids.first) {
      bad_roles("the range '" + piece + "' in '" + entry_text + "' ends before it starts");
    }
    ids.last = last;
  } else if (dash == std::string::npos) {
    ids.last = ids.first;
  }
  return ids;
}

std::string trimmed(const std::string& s) {
  const auto a = s.find_first_not_of(" \t");
  const auto b = s.find_last_not_of(" \t");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

}  // namespace

std::vector<RoleEntry> parse_roles(const std::string& text) {
  std::vector<RoleEntry> entries;
  // Comma-separated pieces; a piece with ':' starts an entry, the pieces after it add ids to it.
  std::size_t at = 0;
  while (at <= text.size()) {
    const auto comma = std::min(text.find(',', at), text.size());
    const std::string piece = trimmed(text.substr(at, comma - at));
    at = comma + 1;
    if (piece.empty()) {
      bad_roles("an empty entry in '" + text + "'");
    }
    if (const auto colon = piece.find(':'); colon != std::string::npos) {
      RoleEntry entry;
      entry.text = piece;
      std::string names = piece.substr(0, colon);
      for (std::size_t p = 0; p <= names.size();) {
        const auto plus = std::min(names.find('+', p), names.size());
        const std::string role = trimmed(names.substr(p, plus - p));
        if (!valid_role(role)) {
          bad_roles("'" + role + "' in '" + piece + "' is not a role name (1-64 of A-Z a-z 0-9 _ . -)");
        }
        entry.roles.push_back(role);
        p = plus + 1;
      }
      entry.ids.push_back(parse_ids(trimmed(piece.substr(colon + 1)), piece));
      entries.push_back(std::move(entry));
    } else if (entries.empty()) {
      bad_roles("'" + piece + "' is not role:ids");
    } else {
      entries.back().ids.push_back(parse_ids(piece, entries.back().text + "," + piece));
      entries.back().text += "," + piece;
    }
    if (comma == text.size()) {
      break;
    }
  }
  return entries;
}

std::vector<std::string> roles_of(const std::vector<RoleEntry>& entries, std::int64_t node_id) {
  const RoleEntry* found = nullptr;
  for (const auto& entry : entries) {
    if (std::none_of(entry.ids.begin(), entry.ids.end(), [&](const auto& ids) { return ids.contains(node_id); })) {
      continue;
    }
    if (found != nullptr) {
      auto both = found->roles;
      both.insert(both.end(), entry.roles.begin(), entry.roles.end());
      throw Error("--roles: node " + std::to_string(node_id) + " is in two entries, '" + found->text + "' and '" +
                      entry.text + "'",
                  "one node gets several roles only when asked: " + join(both, "+") + ":" + std::to_string(node_id));
    }
    found = &entry;
  }
  if (found == nullptr) {
    std::vector<std::string> texts;
    for (const auto& e : entries) {
      texts.push_back(e.text);
    }
    throw Error("--roles: node " + std::to_string(node_id) + " has no role in '" + join(texts, ",") + "'",
                "cover every node id, e.g. with an open range such as collector:2-");
  }
  auto roles = found->roles;
  std::sort(roles.begin(), roles.end());
  roles.erase(std::unique(roles.begin(), roles.end()), roles.end());
  return roles;
}

}  // namespace ditask::launcher
