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

// The answer to a well-formed question is "no": a collective that can never start under
// its policy, an operation that fires early while a schedule runs. The command line
// says so and exits 1, as for a verdict (unsafe, a lossless drop), not 2. A kind of
// InputError, so that whatever names the input an error came from names this too.
class NegativeAnswer : public InputError {
 public:
  using InputError::InputError;
};

// `e` again, with "context: " before its message, as the same kind of error.
[[noreturn]] inline void rethrow_in(const std::string& context, const InputError& e) {
  if (dynamic_cast<const NegativeAnswer*>(&e)) throw NegativeAnswer(context + ": " + e.what());
  throw InputError(context + ": " + e.what());
}

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
