// SPDX-License-Identifier: MIT
#pragma once

/// Marks a declaration as part of libditask_torch's exported surface (hidden by default).
#if defined(DITASK_TORCH_BUILDING)
#define DITASK_TORCH_API __attribute__((visibility("default")))
#else
#define DITASK_TORCH_API
#endif
