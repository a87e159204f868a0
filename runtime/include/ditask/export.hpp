// SPDX-License-Identifier: MIT
#pragma once

/// Marks a declaration as part of libditask_runtime's exported surface (hidden by default).
#if defined(DITASK_RUNTIME_BUILDING)
#define DITASK_API __attribute__((visibility("default")))
#else
#define DITASK_API
#endif
