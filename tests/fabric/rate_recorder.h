// A RateListener that records which QPs a congestion control said rose: for tests that
// drive a policy by hand.
#pragma once

#include <cstdint>
#include <vector>

#include "fabric/cc/congestion.h"

namespace fabriclab::fabric {

struct RateRecorder : RateListener {
  std::vector<std::uint32_t> raised;
  void rate_raised(std::uint32_t qp) override { raised.push_back(qp); }
};

}  // namespace fabriclab::fabric
