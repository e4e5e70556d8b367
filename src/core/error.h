// The error type for bad input (an unknown name, a malformed file, an impossible option):
// the command line reports its message and exits with code 2. Internal invariant
// violations are std::logic_error instead, and are bugs (exit 3).
#pragma once

#include <stdexcept>
#include <string>

namespace fabriclab {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& what) : std::runtime_error(what) {}
};

// A run spread over processes (MPI ranks) failed in one of them: every rank throws this,
// with the failing rank's message and the exit code the failure has there (2 for bad
// input, 3 for a bug), so that the command line says it once, on rank 0.
class RankFailure : public std::runtime_error {
 public:
  RankFailure(const std::string& what, int exit_code) : std::runtime_error(what), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

}  // namespace fabriclab
