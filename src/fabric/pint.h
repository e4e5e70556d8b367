// PINT's encoding of a utilization (Ben Basat et al., "PINT: Probabilistic In-band
// Network Telemetry", SIGCOMM 2020), as HPCC-PINT carries it (the HPCC ns-3 model's
// pint.cc, CC_MODE 10): instead of a record per hop, a packet carries one value, the
// largest utilization a switch on its path computed, in a few bits: the power of
// `log_base` nearest u x 512 (512: the model's max_concurrent, so that 1/512 is the least
// value a hop reports), rounded up or down at random with the probabilities that make
// the code exact on average. With log base 1.05 the code fits 8 bits (1 byte on the
// wire); with 1.01, 11 (2 bytes).
#pragma once

#include <cstdint>

#include "core/random.h"

namespace fabriclab::fabric {

// u x kPintScale is rounded up to an integer (at least 1) before its logarithm is taken.
inline constexpr double kPintScale = 512;

// HPCC-PINT's per-port utilization estimate (the HPCC ns-3 model's switch-node.cc,
// CC_MODE 10), the previous estimate `u` moved by a packet leaving the port:
//   u' = qlen dt / (B T^2) + last / (B T) + u (T - dt) / T,  dt capped at T
// (qlen bytes queued, dt the time since the port's previous packet, last that packet's
// bytes, B the line rate in bytes per unit of dt and T).
inline double pint_estimate(double u, double qlen, double dt, double last, double b, double t) {
  if (dt > t) dt = t;
  return qlen * dt / (b * t * t) + last / (b * t) + u * (t - dt) / t;
}

class PintCode {
 public:
  explicit PintCode(double log_base);

  // The bits a code needs: the code of the largest value, 512 x 512 (the model's
  // get_n_bits), in base log_base; the bytes of the header that carries it.
  std::uint32_t bits() const { return bits_; }
  std::uint32_t bytes() const { return (bits_ + 7) / 8; }
  double log_base() const { return base_; }

  // u's code: n = max(1, ceil(u x 512)), x = log(n) / log(base); floor(x) or ceil(x), the
  // upper with probability (n - base^floor(x)) / (base^ceil(x) - base^floor(x)) (one draw
  // from `rng`, in steps of 2^-16 as the model's rand() % 65536), at most the largest code
  // `bits` have room for.
  std::uint16_t encode(double u, RandomStream& rng) const;
  // The utilization a code stands for: base^code / 512.
  double decode(std::uint16_t code) const;

 private:
  double base_;
  double inv_log_;  // 1 / ln(base)
  std::uint32_t bits_;
  double largest_;  // 2^bits - 1
};

}  // namespace fabriclab::fabric
