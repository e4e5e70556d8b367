// Named, seeded random streams. Every consumer of randomness owns a RandomStream derived
// from (seed, name), so adding a new stream never shifts the numbers another one draws,
// and results are identical on every machine (no std:: distributions, whose output is
// implementation-defined).
//
//   fabriclab::RandomStream rng(seed, "verifier/adversary");
//   std::uint64_t k = rng.below(n);  // uniform in [0, n)
#pragma once

#include <cstdint>
#include <string_view>

namespace fabriclab {

class RandomStream {
 public:
  RandomStream(std::uint64_t seed, std::string_view name) {
    // FNV-1a of the name, mixed with the seed through SplitMix64, seeds xoshiro256**.
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
    std::uint64_t sm = seed ^ h;
    for (auto& s : s_) s = splitmix(sm);
  }

  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform integer in [0, n), n > 0, without modulo bias: draws below 2^64 mod n are
  // rejected so that every residue is equally likely.
  std::uint64_t below(std::uint64_t n) {
    const std::uint64_t reject_below = (0 - n) % n;
    std::uint64_t r = next();
    while (r < reject_below) r = next();
    return r % n;
  }

  // Uniform double in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static std::uint64_t splitmix(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  std::uint64_t s_[4];
};

}  // namespace fabriclab
