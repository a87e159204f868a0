// SPDX-License-Identifier: MIT
#pragma once

/// Marks a declaration as part of libditask_runtime's exported surface (hidden by default).
#if defined(DITASK_RUNTIME_BUILDING)
#define DITASK_API __attribute__((visibility("default")))
#else
#define DITASK_API
#endif

/// Keeps a member of an exported class out of the exported surface: private members that only
/// the runtime's own code calls (never an inline function of a header).
#define DITASK_LOCAL __attribute__((visibility("hidden")))
