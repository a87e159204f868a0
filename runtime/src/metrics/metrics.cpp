// SPDX-License-Identifier: MIT
#include "ditask/metrics.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <string>

#include "ditask/runtime/log.hpp"
#include "tfrecord.hpp"

namespace ditask {
namespace {

/// The event file, opened at the first record. Guarded by its mutex.
struct EventFile {
  std::mutex mutex;
  bool resolved = false;  // DITASK_METRICS_DIR was looked at
  int fd = -1;
  std::string path;
};

EventFile& event_file() {
  static EventFile file;
  return file;
}

double wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string("localhost");
}

void fail_locked(EventFile& f, const std::string& why) {
  DITASK_LOG(warn, "metrics") << why << "; later values are not recorded";
  if (f.fd >= 0) {
    ::close(f.fd);
  }
  f.fd = -1;
}

bool write_locked(EventFile& f, const std::string& event) {
  const std::string record = detail::tfrecord(event);
  std::size_t done = 0;
  while (done < record.size()) {
    const ssize_t n = ::write(f.fd, record.data() + done, record.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      fail_locked(f, "cannot write to '" + f.path + "': " + std::strerror(errno));
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

/// True when the file is open (opening it at the first call).
bool open_locked(EventFile& f) {
  if (f.resolved) {
    return f.fd >= 0;
  }
  f.resolved = true;
  const char* dir = std::getenv("DITASK_METRICS_DIR");
  if (dir == nullptr || *dir == '\0') {
    return false;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  f.path = std::string(dir) + "/events.out.tfevents." + std::to_string(std::time(nullptr)) + "." + host_name() +
           "." + std::to_string(::getpid());
  f.fd = ::open(f.path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (f.fd < 0) {
    fail_locked(f, "cannot open the metrics file '" + f.path + "': " + std::strerror(errno));
    return false;
  }
  return write_locked(f, detail::file_version_event(wall_time()));
}

void record(const std::string& event) {
  auto& f = event_file();
  std::lock_guard lock(f.mutex);
  if (open_locked(f)) {
    write_locked(f, event);
  }
}

}  // namespace

void Metrics::scalar(std::string_view tag, std::int64_t step, double value) {
  if (enabled()) {
    record(detail::scalar_event(wall_time(), step, tag, static_cast<float>(value)));
  }
}

void Metrics::histogram(std::string_view tag, std::int64_t step, std::span<const double> values) {
  if (enabled()) {
    record(detail::histogram_event(wall_time(), step, tag, values));
  }
}

bool Metrics::enabled() const noexcept {
  // Once the file is open, or known not to be, no lock: modules call this per value.
  static std::atomic<int> known{-1};  // -1 not yet, 0 off, 1 on
  if (const int k = known.load(std::memory_order_acquire); k >= 0) {
    return k == 1;  // after a failed write still true: record() drops what comes
  }
  auto& f = event_file();
  std::lock_guard lock(f.mutex);
  const bool on = open_locked(f);
  known.store(on ? 1 : 0, std::memory_order_release);
  return on;
}

Metrics& metrics() {
  static Metrics instance;
  return instance;
}

}  // namespace ditask
