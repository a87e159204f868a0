// SPDX-License-Identifier: MIT
// A module "built for" a future entry ABI, so the loader's version check has something to refuse.
#include <ditask/ditask.hpp>

#undef DITASK_ABI_VERSION
#define DITASK_ABI_VERSION 999

DITASK_MAIN(main) {}
