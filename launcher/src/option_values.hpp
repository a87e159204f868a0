// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>

#include "ditask/launcher/options.hpp"

namespace ditask::launcher::detail {

/// The most seconds any duration option takes (about 31 years): far below where a
/// steady_clock deadline in nanoseconds would wrap around.
inline constexpr double kMaxSeconds = 1e9;
/// The most workers one launcher starts (each worker's environment lists every peer, so the
/// plan grows with the square of N); larger jobs span several launchers.
inline constexpr std::int64_t kMaxLocalWorkers = 1024;
/// The largest node id the launcher hands out: 2^53-1, exact as a JSON number anywhere.
inline constexpr std::int64_t kMaxNodeId = (std::int64_t{1} << 53) - 1;

/// Converts and validates chosen raw values (absent = default) into Options.
/// Errors: ditask::Error naming the option, the bad value and, where it helps, the choices.
Options build_options(const RawValues& values);

/// Splits a comma list, trimming blanks and dropping empty items.
std::vector<std::string> split_list(const std::string& text);

/// `text` as a finite number of seconds, at most kMaxSeconds. Errors: ditask::Error naming --<name> and the text.
double to_seconds(const std::string& name, const std::string& text);

/// `text` as true/false (also 1/0, yes/no, on/off). Errors: ditask::Error naming --<name>.
bool to_bool(const std::string& name, const std::string& text);

/// Checks `value` against option `name`'s choices. Errors: ditask::Error with "did you mean".
void require_choice(const std::string& name, const std::string& value);

/// Checks that every '{' of a --tag-format starts one of its placeholders ({node}, {rank},
/// {local}, {attempt}). Errors: ditask::Error naming the unknown one, with a did-you-mean.
void check_tag_format(const std::string& format);

/// Checks a run id: 1..128 characters of A-Z a-z 0-9 . _ : -, and not "." or "..".
/// `what` names its origin ("--run-id", "DITASK_RUN_ID"). Errors: ditask::Error with `hint`.
void check_run_id(const std::string& what, const std::string& value, const std::string& hint);

/// Converts and checks --redis-url, --redis-host, --redis-port, --redis-db and --redis-password
/// into `o.redis`. Errors: ditask::Error (never showing a password).
void apply_redis_values(const RawValues& values, Options& o);

/// Parses redis://[[user]:password@]host[:port][/db]. Errors: ditask::Error naming what is wrong
/// (the password never shown).
RedisServer parse_redis_url(const std::string& url);

/// Converts and checks the mesh settings (--run-id, --token, --startup-timeout,
/// --max-frame-bytes, --send-queue-bytes, --send-timeout, --send-policy, --relay) into `o`,
/// whose topology is already set. Errors: ditask::Error (never showing a token).
void apply_mesh_values(const RawValues& values, Options& o);

}  // namespace ditask::launcher::detail
