// Runs independent tasks (the points of a sweep, the variants of an experiment) in
// worker processes: up to `jobs` at once, each a fork of this process that runs one
// task and exits with its status. A crash or an out-of-memory in one point cannot take
// the others down, and nothing is shared but the files each task writes.
//
//   auto status = run_in_workers(points.size(), 2, [&](std::size_t i) { return run_point(i); },
//                                [&](std::size_t i, int code) { report(i, code); });
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace fabriclab::scenario {

// task(i) runs in a child process; its return value is the child's exit status. An
// InputError escaping it prints "point i: message" and exits 2, another exception exits
// 3, a signal reports 128 + its number. `done(i, status)` runs in this process as each
// child is reaped (in completion order). Returns every status, indexed by task.
std::vector<int> run_in_workers(std::size_t n, unsigned jobs, const std::function<int(std::size_t)>& task,
                                const std::function<void(std::size_t, int)>& done = {});

}  // namespace fabriclab::scenario
