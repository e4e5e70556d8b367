// The error type for bad input (an unknown name, a malformed file, an impossible option):
// the command line reports its message and exits with code 2. Internal invariant
// violations are std::logic_error instead, and are bugs.
#pragma once

#include <stdexcept>
#include <string>

namespace fabriclab {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace fabriclab
