// The message of the InputError that `f` throws, or "no error": lets a test compare a
// whole user-facing message with EXPECT_EQ.
#pragma once

#include <string>

#include "core/error.h"

namespace fabriclab::testing {

template <typename F>
std::string input_error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace fabriclab::testing
