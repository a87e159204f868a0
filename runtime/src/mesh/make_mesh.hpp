// SPDX-License-Identifier: MIT
// The mesh as a Transport, without the Asio headers of mesh.hpp (make_transport includes this).
#pragma once

#include <memory>

#include "../transport/transport.hpp"
#include "settings.hpp"

namespace ditask::detail::mesh {

/// A started mesh. Errors: ditask::Error as Mesh::start (e.g. the listening address is taken).
std::shared_ptr<Transport> make_mesh(const MeshSettings& settings);

}  // namespace ditask::detail::mesh
