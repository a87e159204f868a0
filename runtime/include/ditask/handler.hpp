// SPDX-License-Identifier: MIT
// The forms a handler may take (Task::on, Rpc::define): a callable with concrete parameter types,
// each taking one positional argument, with an optional trailing `const Kwargs&` for the named
// ones and an optional trailing `const EventMeta&` for the sender; or one `const EventArgs&`
// parameter taking everything. The erasure itself is in ditask/detail/handler_erasure.hpp.
#pragma once

#include <functional>

#include "ditask/detail/handler_erasure.hpp"
#include "ditask/event_args.hpp"
#include "ditask/event_meta.hpp"

namespace ditask {

/// A handler that takes the raw arguments of one event (any handler form is accepted by on()).
using RawHandler = std::function<void(const EventArgs&)>;

}  // namespace ditask
