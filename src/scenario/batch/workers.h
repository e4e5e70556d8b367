// Runs independent tasks (the points of a sweep, the variants of an experiment) in
// worker processes: up to `jobs` at once, each a fork of this process that runs one
// task and exits with its status. A crash or an out-of-memory in one point cannot take
// the others down, and nothing is shared but the files each task writes. A worker dies
// with the process that forked it (a killed sweep leaves no point running on its own).
//
//   auto status = run_in_workers(points.size(), 2, [&](std::size_t i) { return run_point(i); },
//                                [&](std::size_t i, int code) { report(i, code); });
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace fabriclab::scenario {

// task(i) runs in a child process; its return value is the child's exit status. An
// InputError escaping it prints "point i: message" and exits 2, another exception exits
// 3, a signal reports 128 + its number. `done(i, status)` runs in this process as each
// child is reaped (in completion order). Returns every status, indexed by task.
std::vector<int> run_in_workers(std::size_t n, unsigned jobs, const std::function<int(std::size_t)>& task,
                                const std::function<void(std::size_t, int)>& done = {});

// The worker processes of one caller, one task each: start() forks, reap() collects.
class Workers {
 public:
  explicit Workers(std::function<int(std::size_t)> task) : task_(std::move(task)) {}
  // Forks a worker for task i; false if the system is out of processes for now (with
  // none running: std::runtime_error).
  bool start(std::size_t i);
  // A finished worker's (task, status); waits for one when `block`, else none if none has
  // finished. Nothing when none is running.
  std::optional<std::pair<std::size_t, int>> reap(bool block);
  std::size_t running() const { return running_.size(); }

 private:
  std::function<int(std::size_t)> task_;
  std::map<pid_t, std::size_t> running_;
};

}  // namespace fabriclab::scenario
