// SPDX-License-Identifier: MIT
#include "ditask/runtime/trace_part.hpp"

#include <array>
#include <charconv>
#include <fstream>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

namespace ditask::detail::trace {
namespace {

const char* phase_text(Phase p) {
  switch (p) {
    case Phase::begin:
      return "B";
    case Phase::end:
      return "E";
    case Phase::instant:
      return "i";
    case Phase::async_begin:
      return "b";
    case Phase::async_end:
      return "e";
    case Phase::flow_start:
      return "s";
    case Phase::flow_end:
      return "f";
  }
  return "i";
}

const char* category_text(Category c) {
  switch (c) {
    case Category::task:
      return "task";
    case Category::event:
      return "event";
    case Category::rpc:
      return "rpc";
    case Category::group:
      return "group";
    case Category::mesh:
      return "mesh";
  }
  return "task";
}

/// `text` as a JSON string; bytes that are not UTF-8 become U+FFFD.
std::string json_text(std::string_view text) {
  return nlohmann::json(std::string(text))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// `value` in decimal.
template <typename Integer>
void append_number(std::string& out, Integer value) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  out.append(digits, end);
}

/// `{"ph":"X","pid":P,"tid":T,"ts":micros.nnn`
void append_head(std::string& out, const char* ph, std::int64_t pid, std::int64_t tid,
                 std::uint64_t ts_ns) {
  out += "{\"ph\":\"";
  out += ph;
  out += "\",\"pid\":";
  append_number(out, pid);
  out += ",\"tid\":";
  append_number(out, tid);
  out += ",\"ts\":";
  append_number(out, ts_ns / 1000);
  out += '.';
  const auto fraction = ts_ns % 1000;
  out += static_cast<char>('0' + fraction / 100);
  out += static_cast<char>('0' + fraction / 10 % 10);
  out += static_cast<char>('0' + fraction % 10);
}

/// Reads a part block by block and formats its records.
class PartReader {
 public:
  PartReader(const PartPlacement& placement, const std::function<void(const std::string&)>& put)
      : placement_(placement), put_(put), next_tid_(placement.first_tid) {}

  std::int64_t read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::array<char, kPartMagic.size()> magic{};
    if (!in.read(magic.data(), magic.size()) ||
        std::string_view(magic.data(), magic.size()) != kPartMagic) {
      return next_tid_;
    }
    BlockHead head{};
    while (in.read(reinterpret_cast<char*>(&head), sizeof head)) {
      if (!block(in, head)) {
        break;  // cut by a crash, or not a block: what came before stays
      }
    }
    for (const auto& [part_tid, tid] : tids_) {
      const auto named = thread_names_.find(part_tid);
      const std::string name = (named != thread_names_.end() ? named->second : "thread") + " " +
                               std::to_string(part_tid) + placement_.thread_suffix;
      line_.clear();
      append_head(line_, "M", placement_.pid, tid, 0);
      line_ += ",\"name\":\"thread_name\",\"args\":{\"name\":" + json_text(name) + "}}";
      put_(line_);
    }
    return next_tid_;
  }

 private:
  static constexpr std::uint64_t kLongestName = 1 << 20;

  bool block(std::ifstream& in, const BlockHead& head) {
    switch (head.kind) {
      case BlockKind::names:
      case BlockKind::thread: {
        if (head.b > kLongestName) {
          return false;
        }
        std::string text(head.b, '\0');
        if (!in.read(text.data(), static_cast<std::streamsize>(text.size()))) {
          return false;
        }
        if (head.kind == BlockKind::thread) {
          tid_of(head.a);
          thread_names_[head.a] = std::move(text);
        } else {
          if (names_.size() <= head.a) {
            names_.resize(head.a + 1, "\"?\"");
          }
          names_[head.a] = json_text(text);  // escaped once, not per record
        }
        return true;
      }
      case BlockKind::records:
        return records(in, tid_of(head.a), head.b);
      case BlockKind::dropped: {
        std::uint64_t ts = 0;
        if (!in.read(reinterpret_cast<char*>(&ts), sizeof ts)) {
          return false;
        }
        line_.clear();
        append_head(line_, "i", placement_.pid, tid_of(head.a), ts);
        line_ += ",\"cat\":\"trace\",\"s\":\"t\",\"name\":\"ring full: ";
        append_number(line_, head.b);
        line_ += " records dropped\"}";
        put_(line_);
        return true;
      }
    }
    return false;
  }

  bool records(std::ifstream& in, std::int64_t tid, std::uint64_t count) {
    std::vector<Record> batch(4096);
    while (count > 0) {
      const std::size_t want =
          count < batch.size() ? static_cast<std::size_t>(count) : batch.size();
      in.read(reinterpret_cast<char*>(batch.data()),
              static_cast<std::streamsize>(want * sizeof(Record)));
      const auto whole = static_cast<std::size_t>(in.gcount()) / sizeof(Record);
      for (std::size_t i = 0; i < whole; ++i) {
        record(batch[i], tid);
      }
      if (whole < want) {
        return false;
      }
      count -= want;
    }
    return true;
  }

  void record(const Record& r, std::int64_t tid) {
    line_.clear();
    append_head(line_, phase_text(r.phase), placement_.pid, tid, r.ts_ns);
    if (r.phase != Phase::end) {
      line_ += ",\"cat\":\"";
      line_ += category_text(r.category);
      line_ += "\",\"name\":";
      line_ += r.name < names_.size() ? names_[r.name] : std::string("\"?\"");
    }
    switch (r.phase) {
      case Phase::instant:
        line_ += ",\"s\":\"t\"";
        break;
      case Phase::async_begin:
      case Phase::async_end:
      case Phase::flow_start:
      case Phase::flow_end: {
        char hex[24];
        const auto end = std::to_chars(hex, hex + sizeof hex, r.id, 16).ptr;
        line_ += ",\"id\":\"0x";
        line_.append(hex, end);
        line_ += '"';
        if (r.phase == Phase::flow_end) {
          line_ += ",\"bp\":\"e\"";  // bound to the slice that encloses it: the served call
        }
        break;
      }
      default:
        break;
    }
    if (r.arg >= 0 && r.phase != Phase::end) {
      line_ += ",\"args\":{\"peer\":";
      append_number(line_, r.arg);
      line_ += '}';
    }
    line_ += '}';
    put_(line_);
  }

  /// The merged trace's id of the part's thread `part_tid`, given on first sight.
  std::int64_t tid_of(std::uint32_t part_tid) {
    const auto [it, added] = tids_.try_emplace(part_tid, next_tid_);
    next_tid_ += added ? 1 : 0;
    return it->second;
  }

  const PartPlacement& placement_;
  const std::function<void(const std::string&)>& put_;
  std::int64_t next_tid_;
  std::map<std::uint32_t, std::int64_t> tids_;
  std::map<std::uint32_t, std::string> thread_names_;
  std::vector<std::string> names_;
  std::string line_;
};

}  // namespace

std::int64_t part_to_json(const std::string& path, const PartPlacement& placement,
                          const std::function<void(const std::string&)>& put) {
  return PartReader(placement, put).read(path);
}

}  // namespace ditask::detail::trace
