// SPDX-License-Identifier: MIT
#include "hostlist.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "ditask/error.hpp"

namespace ditask::launcher {
namespace {

constexpr const char* kHostlistHint =
    "a Slurm host list looks like node[01-04],gpu[1-2]-ib; give the nodes explicitly with "
    "--platform-spec if this one is right and we read it wrong";

[[noreturn]] void bad_hostlist(std::string_view text, const std::string& why) {
  throw Error("malformed Slurm host list '" + std::string(text) + "': " + why, kHostlistHint);
}

// 'text', in single quotes. Appended rather than `"'" + std::string(text)`: that form trips GCC
// 12's -Wrestrict false positive in libstdc++ (GCC bug 105329) in Release builds.
std::string quoted(std::string_view text) {
  std::string out(1, '\'');
  out.append(text).push_back('\'');
  return out;
}

bool is_sep(char c) { return c == ',' || std::isspace(static_cast<unsigned char>(c)) != 0; }

std::uint64_t to_number(std::string_view whole, std::string_view digits) {
  if (digits.empty() || digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    bad_hostlist(whole, quoted(digits) + " is not a number");
  }
  std::uint64_t v = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), v);
  return v;
}

std::string padded(std::uint64_t v, std::size_t width) {
  std::string s = std::to_string(v);
  return s.size() < width ? std::string(width - s.size(), '0') + s : s;
}

/// The values of one bracket group's "1,3-5,08-10" as zero-padded strings.
std::vector<std::string> expand_ranges(std::string_view whole, std::string_view ranges) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= ranges.size()) {
    const auto comma = std::min(ranges.find(',', at), ranges.size());
    const std::string_view range = ranges.substr(at, comma - at);
    if (range.empty()) {
      bad_hostlist(whole, "an empty range in '[" + std::string(ranges) + "]'");
    }
    const auto dash = range.find('-');
    const std::string_view lo_text = range.substr(0, dash);
    const std::uint64_t lo = to_number(whole, lo_text);
    const std::uint64_t hi = dash == std::string_view::npos ? lo : to_number(whole, range.substr(dash + 1));
    if (hi < lo) {
      bad_hostlist(whole, "the range '" + std::string(range) + "' ends before it starts");
    }
    if (hi - lo + 1 > kMaxHosts || out.size() + (hi - lo + 1) > kMaxHosts) {
      bad_hostlist(whole, "more than " + std::to_string(kMaxHosts) + " hosts");
    }
    for (std::uint64_t v = lo; v <= hi; ++v) {
      out.push_back(padded(v, lo_text.size()));
    }
    at = comma + 1;
  }
  return out;
}

/// Appends the hosts of one token (its bracket groups expanded, leftmost outermost) to `out`.
void expand_token(std::string_view whole, std::string_view token, std::vector<std::string>& out) {
  const auto open = token.find('[');
  if (open == std::string_view::npos) {
    if (token.find(']') != std::string_view::npos) {
      bad_hostlist(whole, "a ']' without '[' in '" + std::string(token) + "'");
    }
    out.emplace_back(token);
    return;
  }
  const auto close = token.find(']', open);
  if (close == std::string_view::npos) {
    bad_hostlist(whole, "'[' without ']' in '" + std::string(token) + "'");
  }
  const std::string prefix(token.substr(0, open));
  const auto values = expand_ranges(whole, token.substr(open + 1, close - open - 1));
  std::vector<std::string> rest;
  expand_token(whole, token.substr(close + 1), rest);
  if (values.size() * rest.size() + out.size() > kMaxHosts) {
    bad_hostlist(whole, "more than " + std::to_string(kMaxHosts) + " hosts");
  }
  for (const auto& v : values) {
    for (const auto& r : rest) {
      out.push_back(prefix + v + r);
    }
  }
}

}  // namespace

std::vector<std::string> expand_hostlist(std::string_view text) {
  if (text.find('{') != std::string_view::npos) {
    throw Error("Slurm host list '" + std::string(text) + "' uses a host list function ('{...}')",
                "expand it with scontrol show hostnames and give the hosts with --platform-spec");
  }
  std::vector<std::string> hosts;
  std::size_t at = 0;
  while (at < text.size()) {
    while (at < text.size() && is_sep(text[at])) {
      ++at;
    }
    std::size_t end = at;
    int depth = 0;
    while (end < text.size() && (depth > 0 || !is_sep(text[end]))) {
      depth += text[end] == '[' ? 1 : text[end] == ']' ? -1 : 0;
      if (depth > 1) {
        bad_hostlist(text, "nested '['");
      }
      ++end;
    }
    if (end > at) {
      expand_token(text, text.substr(at, end - at), hosts);
    }
    at = end;
  }
  if (hosts.empty()) {
    bad_hostlist(text, "no host");
  }
  return hosts;
}

std::vector<std::int64_t> parse_tasks_per_node(std::string_view text) {
  const auto bad = [&](const std::string& why) -> void {
    throw Error("malformed Slurm tasks-per-node list '" + std::string(text) + "': " + why,
                "it looks like 2(x3),1: a count per node, (xN) repeating it");
  };
  const auto number = [&](std::string_view digits) {
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || v < 1) {
      bad(quoted(digits) + " is not a positive number");
    }
    return v;
  };
  std::vector<std::int64_t> counts;
  std::size_t at = 0;
  while (at <= text.size()) {
    const auto comma = std::min(text.find(',', at), text.size());
    const std::string_view item = text.substr(at, comma - at);
    const auto paren = item.find('(');
    const std::int64_t count = number(item.substr(0, paren));
    std::int64_t repeat = 1;
    if (paren != std::string_view::npos) {
      if (item.size() < paren + 4 || item[paren + 1] != 'x' || item.back() != ')') {
        bad(quoted(item) + " is not COUNT(xREPEAT)");
      }
      repeat = number(item.substr(paren + 2, item.size() - paren - 3));
    }
    if (static_cast<std::size_t>(repeat) + counts.size() > kMaxHosts) {
      bad("more than " + std::to_string(kMaxHosts) + " nodes");
    }
    counts.insert(counts.end(), static_cast<std::size_t>(repeat), count);
    at = comma + 1;
  }
  return counts;
}

std::vector<TaskPlace> place_tasks(const std::vector<std::int64_t>& counts, Distribution distribution) {
  std::vector<TaskPlace> places;
  if (distribution == Distribution::block) {
    for (std::size_t h = 0; h < counts.size(); ++h) {
      for (std::int64_t k = 0; k < counts[h]; ++k) {
        places.push_back({h, k});
      }
    }
    return places;
  }
  std::vector<std::int64_t> used(counts.size(), 0);
  bool placed = true;
  while (placed) {
    placed = false;
    for (std::size_t h = 0; h < counts.size(); ++h) {
      if (used[h] < counts[h]) {
        places.push_back({h, used[h]++});
        placed = true;
      }
    }
  }
  return places;
}

}  // namespace ditask::launcher
