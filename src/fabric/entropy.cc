#include "fabric/entropy.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

namespace fabriclab::fabric {

EntropyPicker::EntropyPicker(EntropyAlgo algo, std::uint32_t n, RandomStream rng, std::uint32_t good_hint)
    : algo_(algo), n_(n), mask_(n - 1), rng_(rng) {
  if (algo_ == EntropyAlgo::mixed) good_.reserve(good_hint);
  if (n == 0 || n > kMaxEntropies || !std::has_single_bit(n))
    throw std::logic_error("EntropyPicker: " + std::to_string(n) + " entropies, expected a power of two");
  xor_ = static_cast<std::uint32_t>(rng_.below(n_));
  if (algo_ != EntropyAlgo::oblivious) penalty_.assign(n_, 0);
}

void EntropyPicker::step() {
  if (++index_ == n_) {
    index_ = 0;
    xor_ = static_cast<std::uint32_t>(rng_.below(n_));
  }
}

std::uint32_t EntropyPicker::next() {
  if (!good_.empty()) return good_.pop_front();  // mixed: the oldest good value
  std::uint32_t ev = walk_value();
  if (algo_ != EntropyAlgo::oblivious) {
    bool first = true;
    for (std::uint32_t steps = 0; penalty_[ev] > 0;) {
      if (first) {
        --penalty_[ev];
        first = false;
      }
      if (++steps > n_) break;
      step();
      ev = walk_value();
    }
  }
  step();
  return ev;
}

void EntropyPicker::on_clean_ack(std::uint32_t ev) {
  if (algo_ == EntropyAlgo::mixed) good_.push_back(static_cast<std::uint16_t>(ev & mask_));
}

void EntropyPicker::penalise(std::uint32_t ev, std::uint8_t points) {
  if (penalty_.empty()) return;  // oblivious
  std::uint8_t& p = penalty_[ev & mask_];
  p = static_cast<std::uint8_t>(std::min<unsigned>(p + points, kMaxPenalty));
}

}  // namespace fabriclab::fabric
