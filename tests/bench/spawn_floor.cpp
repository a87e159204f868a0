// SPDX-License-Identifier: MIT
// The floor of the launch benchmark (scripts/bench.sh launch): fork+exec N copies of a program
// (default /bin/true), all started before any is waited for, then wait for every one.
// Nothing else: no pipes, no signals, no environment changes. ditask's launch of N workers is
// timed against this.
//
//   ditask_spawn_floor N [program [args...]]
//
// Exit: 0 when every child exited 0, 1 when one did not, 2 on a usage error or a failed fork.
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

int usage() {
  std::fputs("usage: ditask_spawn_floor N [program [args...]]   (N >= 1, program /bin/true)\n",
             stderr);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    return usage();
  }
  const std::string_view count_text(argv[1]);
  int count = 0;
  auto [end, ec] = std::from_chars(count_text.data(), count_text.data() + count_text.size(), count);
  if (ec != std::errc() || end != count_text.data() + count_text.size() || count < 1) {
    return usage();
  }
  std::vector<char*> child_argv;
  static char default_program[] = "/bin/true";
  if (argc > 2) {
    child_argv.assign(argv + 2, argv + argc);
  } else {
    child_argv.push_back(default_program);
  }
  child_argv.push_back(nullptr);

  std::vector<pid_t> children;
  children.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      std::fprintf(stderr, "ditask_spawn_floor: fork: %s\n", std::strerror(errno));
      return 2;
    }
    if (pid == 0) {
      ::execv(child_argv[0], child_argv.data());
      _exit(127);
    }
    children.push_back(pid);
  }
  int failed = 0;
  for (const pid_t pid : children) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ++failed;
    }
  }
  if (failed > 0) {
    std::fprintf(stderr, "ditask_spawn_floor: %d of %d children failed\n", failed, count);
    return 1;
  }
  return 0;
}
