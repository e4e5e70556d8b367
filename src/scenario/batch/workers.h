// Runs independent tasks (the points of a sweep, the variants of an experiment) in
// worker processes: up to `jobs` at once, each a fork of this process that runs one
// task and exits with its status. A crash or an out-of-memory in one point cannot take
// the others down, and nothing is shared but the files each task writes. A worker dies
// with the process that forked it (a killed sweep leaves no point running on its own).
//
//   Workers w([&](std::size_t i) { return run_point(i); });
//   w.start(0);
//   if (auto r = w.reap(/*block=*/true)) report(r->first, r->second);
//
// scenario/batch/ranks.h runs a list of tasks this way, here or over MPI ranks.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace fabriclab::scenario {

// The worker processes of one caller, one task each: start() forks a child that runs
// task(i) and exits with its return value (an InputError escaping it prints "point i:
// message" and exits 2, another exception exits 3); reap() collects a child's status (a
// signal: 128 + its number).
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
