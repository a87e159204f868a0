// SPDX-License-Identifier: MIT
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

namespace ditask::detail {

/// Writes a file that readers see whole or not at all: `write(out)` fills `path`.tmp, which then
/// replaces `path`. Errors: std::runtime_error "cannot write <what> to '<file>'[: why]" (the
/// temporary file is removed); what `write` throws.
template <typename Write>
void replace_file(const std::string& path, const std::string& what, Write&& write) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc | std::ios::binary);
    write(out);
    out.close();
    if (!out) {
      std::remove(temporary.c_str());
      throw std::runtime_error("cannot write " + what + " to '" + temporary + "'");
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(temporary.c_str());
    throw std::runtime_error("cannot write " + what + " to '" + path + "': " + why);
  }
}

}  // namespace ditask::detail
