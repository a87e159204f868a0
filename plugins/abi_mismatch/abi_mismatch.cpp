// SPDX-License-Identifier: MIT
// A module "built for" a future entry ABI, so the loader's version check has something to refuse,
// and an entry written by hand without its ABI symbol (`--main by_hand`), which the loader names.
#include <ditask/ditask.hpp>

#undef DITASK_ABI_VERSION
#define DITASK_ABI_VERSION 999

DITASK_MAIN(main) {}

extern "C" __attribute__((visibility("default"), used)) void ditask_entry_by_hand() {}
