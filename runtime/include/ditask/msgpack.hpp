// SPDX-License-Identifier: MIT
// ditask's one MessagePack codec: a writer (Packer) and a bounded reader (Reader). The runtime
// uses them for every payload it writes or reads (hellos, byes, event arguments, the JSON path);
// emit's fast path and typed handlers use them inline, in the module. Both sides must agree on
// every byte, so this code is versioned: it lives in the inline namespace wire_v1, which is part
// of every mangled name, and a change to what it writes or accepts needs a new inline namespace
// and a new DITASK_ABI_VERSION (module.hpp).
#pragma once

#include "ditask/detail/msgpack_packer.hpp"
#include "ditask/detail/msgpack_reader.hpp"
