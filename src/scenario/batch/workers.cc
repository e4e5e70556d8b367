#include "scenario/batch/workers.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>

#include "core/error.h"

namespace fabriclab::scenario {

namespace {
[[noreturn]] void child(std::size_t i, const std::function<int(std::size_t)>& task, pid_t parent) {
  // Die with the parent: a sweep killed (or a rank of it) leaves no point writing on.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(128 + SIGKILL);
  int code = 3;
  try {
    code = task(i);
  } catch (const NegativeAnswer& e) {  // a "no" (exit 1), as the command says it
    std::fprintf(stderr, "fabriclab: error: point %zu: %s\n", i, e.what());
    code = 1;
  } catch (const InputError& e) {
    std::fprintf(stderr, "fabriclab: error: point %zu: %s\n", i, e.what());
    code = 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "fabriclab: error: point %zu: out of memory\n", i);
    code = 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fabriclab: internal error: point %zu: %s\n", i, e.what());
    code = 3;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(code);  // no atexit handlers or static destructors of the parent's state
}
}  // namespace

bool Workers::start(std::size_t i) {
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    if (running_.empty()) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    return false;  // out of processes for now: wait for one
  }
  if (pid == 0) child(i, task_, parent);
  running_.emplace(pid, i);
  return true;
}

std::optional<std::pair<std::size_t, int>> Workers::reap(bool block) {
  while (!running_.empty()) {
    int ws = 0;
    const pid_t pid = waitpid(-1, &ws, block ? 0 : WNOHANG);
    if (pid == 0) return std::nullopt;
    if (pid < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
    }
    const auto it = running_.find(pid);
    if (it == running_.end()) continue;  // not ours
    const std::size_t i = it->second;
    running_.erase(it);
    return std::make_pair(i, WIFEXITED(ws) ? WEXITSTATUS(ws) : WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : 3);
  }
  return std::nullopt;
}

}  // namespace fabriclab::scenario
