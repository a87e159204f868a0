#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fails when a layer includes what it must not (docs/design.md "Layout"): runtime/ never includes the
# launcher, Boost.Process or CLI11; plugins/ use only the public runtime headers; launcher/ never
# includes CLI11; modules (plugins/, torch/examples/) never include the SDK's ditask/detail/.
set -u
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
status=0
check() {  # check <folder> <regex> <what is wrong>
  local hits
  hits="$(grep -rnE "$2" "$root/$1" --include='*.hpp' --include='*.cpp' 2>/dev/null)"
  if [[ -n "$hits" ]]; then
    echo "layer violation: $3"
    echo "$hits"
    status=1
  fi
}
check runtime '#include [<"](ditask/launcher/|boost/process|CLI/)' "runtime/ includes the launcher, Boost.Process or CLI11"
check plugins '#include [<"](ditask/launcher/|ditask/runtime/|.*src/|boost/)' "plugins/ go beyond the public runtime API"
check launcher '#include [<"]CLI/' "launcher/ includes CLI11"
check plugins '#include [<"]ditask/detail/' "plugins/ include the SDK's mechanism headers (ditask/detail/: rpc.hpp and task.hpp bring what a module needs)"
check torch/examples '#include [<"](ditask/detail/|ditask/runtime/|.*src/)' "torch/examples/ go beyond the public API"
((status == 0)) && echo "layers ok"
exit $status
