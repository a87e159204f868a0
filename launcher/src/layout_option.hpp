// SPDX-License-Identifier: MIT
// --layout: a named rank layout (biggraph:machines=M,partition_servers=P) turned into --roles and
// the worker count.
#pragma once

#include <string>

#include "ditask/launcher/options.hpp"
#include "ditask/layout.hpp"

namespace ditask::launcher {

/// The layout `text` names. Errors: ditask::Error naming the unknown layout, key or value.
RankLayout parse_layout(const std::string& text);

/// Sets `o.roles`, `o.layout`, `o.layout_text` and (unless `workers_given` or `world_size`)
/// `o.parallel_workers` from --layout `text`. Errors: ditask::Error when --roles is given too
/// (`roles_given`) or the job's size (--world-size, else --parallel-workers) is not the layout's.
void apply_layout(Options& o, const std::string& text, bool workers_given, const std::string* world_size,
                  bool roles_given);

}  // namespace ditask::launcher
