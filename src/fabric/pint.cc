#include "fabric/pint.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace fabriclab::fabric {

PintCode::PintCode(double log_base) : base_(log_base), inv_log_(1 / std::log(log_base)) {
  if (!(log_base > 1)) throw std::logic_error("PintCode: a log base at or below 1");
  const double most = std::log(kPintScale * kPintScale) * inv_log_;
  bits_ = static_cast<std::uint32_t>(std::ceil(std::log2(most)));
  if (bits_ > 16) throw std::logic_error("PintCode: codes of more than 16 bits");
  largest_ = static_cast<double>((1u << bits_) - 1);
}

std::uint16_t PintCode::encode(double u, RandomStream& rng) const {
  double n = std::ceil(u * kPintScale);
  if (!(n >= 1)) n = 1;  // (and a NaN)
  const double x = std::log(n) * inv_log_;
  if (x >= largest_) return static_cast<std::uint16_t>(largest_);
  const double lo = std::floor(x), hi = std::ceil(x);
  const double lower = std::pow(base_, lo);
  const double upper = hi == lo ? lower * base_ : std::pow(base_, hi);
  const bool up = static_cast<double>(rng.below(65536)) < (n - lower) / (upper - lower) * 65536;
  return static_cast<std::uint16_t>(up ? hi : lo);
}

double PintCode::decode(std::uint16_t code) const { return std::pow(base_, code) / kPintScale; }

}  // namespace fabriclab::fabric
