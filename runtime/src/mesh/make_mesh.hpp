// SPDX-License-Identifier: MIT
// The mesh as a Transport, without the Asio headers of mesh.hpp (make_transport includes this).
#pragma once

#include <memory>

#include "../transport/make_transport.hpp"
#include "../transport/transport.hpp"
#include "settings.hpp"

namespace ditask::detail::mesh {

/// A started mesh. Errors: ditask::Error as Mesh::start (e.g. the listening address is taken).
std::shared_ptr<Transport> make_mesh(const MeshSettings& settings);

/// The transport table's entry for tcp:// and ipc://: reads the mesh's settings (addresses,
/// DITASK_TOKEN, DITASK_LISTEN_FD). Errors: ditask::Error naming a malformed one.
TransportStarter mesh_starter(const WorkerEnv& env);

/// A plan for the mesh `settings` describe (tests, which build settings themselves).
TransportPlan mesh_plan(const MeshSettings& settings);

}  // namespace ditask::detail::mesh
