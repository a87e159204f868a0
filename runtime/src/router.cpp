// SPDX-License-Identifier: MIT
#include "ditask/router.hpp"

#include <mutex>

#include "internal_access.hpp"
#include "mesh/mesh.hpp"

namespace ditask {

struct Router::State {
  mutable std::mutex mutex;
  bool active = false;  // guarded by mutex, like identity
  detail::RouterIdentity identity;
};

Router::Router() : state_(std::make_unique<State>()) {}
Router::~Router() = default;

bool Router::is_active() const noexcept {
  std::lock_guard lock(state_->mutex);
  return state_->active;
}

std::int64_t Router::node_id() const noexcept {
  std::lock_guard lock(state_->mutex);
  return state_->active ? state_->identity.node_id : 0;
}

std::int64_t Router::local_id() const noexcept {
  std::lock_guard lock(state_->mutex);
  return state_->active ? state_->identity.local_id : 0;
}

std::int64_t Router::parallel_workers() const noexcept {
  std::lock_guard lock(state_->mutex);
  return state_->active ? state_->identity.parallel_workers : 1;
}

std::set<std::string> Router::labels() const {
  std::lock_guard lock(state_->mutex);
  return state_->active ? state_->identity.labels : std::set<std::string>{};
}

std::shared_ptr<const EventMeta> detail::RouterAccess::local_meta(const Router& router) {
  std::lock_guard lock(router.state_->mutex);
  auto meta = std::make_shared<EventMeta>();
  if (router.state_->active) {
    const auto& id = router.state_->identity;
    meta->sender = static_cast<int>(id.node_id);
    meta->attempt = static_cast<int>(id.attempt);
    auto labels = id.labels;
    labels.insert("node." + std::to_string(id.node_id));  // as its hello announces it
    meta->labels.assign(labels.begin(), labels.end());
  } else {
    meta->sender = 0;  // a standalone task is node 0, as node_id() says
  }
  return meta;
}

std::set<std::string> Router::roles() const {
  std::lock_guard lock(state_->mutex);
  return state_->active ? state_->identity.roles : std::set<std::string>{};
}

std::vector<PeerInfo> Router::peers() const {
  auto mesh = is_active() ? detail::mesh::worker_mesh(false) : nullptr;
  return mesh ? mesh->peers() : std::vector<PeerInfo>{};
}

MeshStats Router::stats() const {
  auto mesh = is_active() ? detail::mesh::worker_mesh(false) : nullptr;
  return mesh ? mesh->stats() : MeshStats{};
}

void detail::RouterAccess::activate(Router& router, RouterIdentity identity) {
  std::lock_guard lock(router.state_->mutex);
  router.state_->identity = std::move(identity);
  router.state_->active = true;
}

void detail::RouterAccess::deactivate(Router& router) noexcept {
  std::lock_guard lock(router.state_->mutex);
  router.state_->active = false;
  router.state_->identity = RouterIdentity{};
}

}  // namespace ditask
