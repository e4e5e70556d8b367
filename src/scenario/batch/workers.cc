#include "scenario/batch/workers.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <new>
#include <stdexcept>
#include <string>

#include "core/error.h"

namespace fabriclab::scenario {

namespace {
[[noreturn]] void child(std::size_t i, const std::function<int(std::size_t)>& task) {
  int code = 3;
  try {
    code = task(i);
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

std::vector<int> run_in_workers(std::size_t n, unsigned jobs, const std::function<int(std::size_t)>& task,
                                const std::function<void(std::size_t, int)>& done) {
  if (jobs == 0) jobs = 1;
  std::vector<int> status(n, -1);
  std::map<pid_t, std::size_t> running;
  std::size_t next = 0;
  std::fflush(stdout);
  std::fflush(stderr);
  while (next < n || !running.empty()) {
    while (next < n && running.size() < jobs) {
      const pid_t pid = fork();
      if (pid < 0) {
        if (running.empty()) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
        break;  // out of processes for now: wait for one
      }
      if (pid == 0) child(next, task);
      running.emplace(pid, next++);
    }
    int ws = 0;
    const pid_t pid = waitpid(-1, &ws, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
    }
    const auto it = running.find(pid);
    if (it == running.end()) continue;  // not ours
    const std::size_t i = it->second;
    running.erase(it);
    status[i] = WIFEXITED(ws) ? WEXITSTATUS(ws) : WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : 3;
    if (done) done(i, status[i]);
  }
  return status;
}

}  // namespace fabriclab::scenario
