// SPDX-License-Identifier: MIT
#include "ditask/router.hpp"

#include <mutex>

#include "internal_access.hpp"
#include "transport/transport.hpp"

namespace ditask {

struct Router::State {
  mutable std::mutex mutex;
  bool active = false;  // guarded by mutex, like identity
  detail::RouterIdentity identity;
  std::weak_ptr<detail::Transport> transport;  // guarded by mutex: the worker's, once a task joined it
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
    meta->sender = id.node_id;
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
  auto transport = detail::RouterAccess::transport(*this);
  return transport ? transport->peers() : std::vector<PeerInfo>{};
}

TransportStats Router::stats() const {
  auto transport = detail::RouterAccess::transport(*this);
  return transport ? transport->stats() : TransportStats{};
}

std::shared_ptr<detail::Transport> detail::RouterAccess::transport(const Router& router) {
  std::lock_guard lock(router.state_->mutex);
  return router.state_->active ? router.state_->transport.lock() : nullptr;
}

void detail::RouterAccess::set_transport(Router& router, const std::shared_ptr<Transport>& transport) {
  std::lock_guard lock(router.state_->mutex);
  router.state_->transport = transport;
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
  router.state_->transport.reset();
}

}  // namespace ditask
