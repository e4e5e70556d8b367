// ECN marking by the WRED rule on the instantaneous egress queue q (bytes of the
// packet's queue, itself included): never at or below Kmin, with probability
// Pmax x (q - Kmin) / (Kmax - Kmin) up to Kmax, always above Kmax. SONiC names:
// green_min_threshold (Kmin), green_max_threshold (Kmax), green_drop_probability (Pmax, %).
#pragma once

#include <cstdint>

#include "core/random.h"

namespace fabriclab::fabric {

struct Wred {
  std::int64_t kmin = 5000, kmax = 200000;
  double pmax = 0.01;

  double probability(std::int64_t q) const {
    if (q <= kmin) return 0.0;
    if (q > kmax) return 1.0;
    return pmax * static_cast<double>(q - kmin) / static_cast<double>(kmax - kmin);
  }
  // Draws only strictly between 0 and 1, so a run's random sequence depends on nothing else.
  bool mark(std::int64_t q, RandomStream& rng) const {
    if (q <= kmin) return false;
    if (q > kmax) return true;
    return rng.uniform() < probability(q);
  }
};

}  // namespace fabriclab::fabric
