// SPDX-License-Identifier: MIT
#pragma once

/// The one header a ditask module includes.

#include "ditask/context.hpp"
#include "ditask/error.hpp"
#include "ditask/event_args.hpp"
#include "ditask/event_meta.hpp"
#include "ditask/group.hpp"
#include "ditask/handler.hpp"
#include "ditask/layout.hpp"
#include "ditask/metrics.hpp"
#include "ditask/middleware.hpp"
#include "ditask/module.hpp"
#include "ditask/router.hpp"
#include "ditask/rpc.hpp"
#include "ditask/runtime/log.hpp"
#include "ditask/task.hpp"
#include "ditask/version.hpp"
#include "ditask/waiter.hpp"
