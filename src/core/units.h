// Strong types for simulated time, data size and bit rate, with unit factories, exact
// parsers ("10us", "9KiB", "100Gbps") and exact integer serialization time.
//
// Time is an int64 count of picoseconds (about 106 days of range): fine enough that
// serialization at 800 Gb/s (10 ps per byte) is exact, coarse enough that every
// simulated interval of interest fits. There is no implicit conversion from double;
// parsed decimals must be exact in the target unit ("2.5ns" is 2500 ps, "0.1ps" is an
// error). Factories and parsers check overflow and throw; arithmetic asserts it in debug
// builds.
//
//   Time t = us(10) + ns(5);                     // 10005000 ps
//   Time wire = serialization_time(KiB(4), Gbps(100));  // 327680 ps
//   Time parsed = parse_time("2.5us");           // throws InputError on "2.5 furlongs"
#pragma once

#include <cassert>
#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

namespace fabriclab {

class Time {
 public:
  constexpr Time() = default;
  static constexpr Time from_ps(std::int64_t ps) { return Time(ps); }
  constexpr std::int64_t ps() const { return ps_; }

  constexpr auto operator<=>(const Time&) const = default;
  constexpr Time operator+(Time o) const { return Time(checked_add(ps_, o.ps_)); }
  constexpr Time operator-(Time o) const { return Time(checked_add(ps_, -o.ps_)); }
  constexpr Time& operator+=(Time o) { return *this = *this + o; }
  constexpr Time& operator-=(Time o) { return *this = *this - o; }
  constexpr Time operator*(std::int64_t k) const {
    std::int64_t r = 0;
    [[maybe_unused]] const bool overflow = __builtin_mul_overflow(ps_, k, &r);
    assert(!overflow && "Time overflow");
    return Time(r);
  }
  // Whole multiples of `o` in this interval (integer division).
  constexpr std::int64_t operator/(Time o) const { return ps_ / o.ps_; }

  static constexpr Time max() { return Time(INT64_MAX); }

 private:
  constexpr explicit Time(std::int64_t ps) : ps_(ps) {}
  static constexpr std::int64_t checked_add(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    [[maybe_unused]] const bool overflow = __builtin_add_overflow(a, b, &r);
    assert(!overflow && "Time overflow");
    return r;
  }
  std::int64_t ps_ = 0;
};

class Bytes {
 public:
  constexpr Bytes() = default;
  static constexpr Bytes from_count(std::int64_t n) { return Bytes(n); }
  constexpr std::int64_t count() const { return n_; }
  constexpr auto operator<=>(const Bytes&) const = default;
  constexpr Bytes operator+(Bytes o) const { return Bytes(n_ + o.n_); }
  constexpr Bytes operator-(Bytes o) const { return Bytes(n_ - o.n_); }
  constexpr Bytes& operator+=(Bytes o) { return *this = *this + o; }
  constexpr Bytes& operator-=(Bytes o) { return *this = *this - o; }

 private:
  constexpr explicit Bytes(std::int64_t n) : n_(n) {}
  std::int64_t n_ = 0;
};

class BitRate {
 public:
  constexpr BitRate() = default;
  static constexpr BitRate from_bps(std::int64_t bps) { return BitRate(bps); }
  constexpr std::int64_t bps() const { return bps_; }
  constexpr auto operator<=>(const BitRate&) const = default;

 private:
  constexpr explicit BitRate(std::int64_t bps) : bps_(bps) {}
  std::int64_t bps_ = 0;
};

// Factories: the value times the unit, checked for overflow (throws std::overflow_error).
Time ps(std::int64_t v);
Time ns(std::int64_t v);
Time us(std::int64_t v);
Time ms(std::int64_t v);
Time sec(std::int64_t v);
Bytes bytes(std::int64_t v);
Bytes KB(std::int64_t v);
Bytes MB(std::int64_t v);
Bytes GB(std::int64_t v);
Bytes KiB(std::int64_t v);
Bytes MiB(std::int64_t v);
Bytes GiB(std::int64_t v);
BitRate bps(std::int64_t v);
BitRate Kbps(std::int64_t v);
BitRate Mbps(std::int64_t v);
BitRate Gbps(std::int64_t v);
BitRate Tbps(std::int64_t v);

// Parsers for "<decimal><unit>" (no space, or one space), exact in the unit's base
// (ps, B, bps). Throw InputError naming the text and the accepted units.
// Time: ps ns us ms s. Bytes: B KB MB GB (powers of 1000) KiB MiB GiB (of 1024).
// BitRate: bps Kbps Mbps Gbps Tbps (powers of 1000).
Time parse_time(std::string_view text);
Bytes parse_bytes(std::string_view text);
BitRate parse_bit_rate(std::string_view text);

// The shortest exact rendering in the largest unit that keeps it integral or with at
// most three decimals ("10us", "2.5ns", "327.68ns").
std::string to_string(Time t);
std::string to_string(Bytes b);
std::string to_string(BitRate r);
// The rate as a decimal number of `unit` (one of the rate units), exact and without the
// unit's name: 2 500 000 bps in "Mbps" is "2.5". Throws std::invalid_argument for an
// unknown unit.
std::string decimal_in(BitRate r, std::string_view unit);

// Time for `size` to leave a port at `rate`: size * 8 bits / rate, rounded UP to the
// next picosecond (a frame is not on the wire until its last bit is; rounding down would
// let back-to-back frames overlap). Exact for every size and rate (128-bit
// intermediate). Throws std::invalid_argument for a rate <= 0 or a negative size.
Time serialization_time(Bytes size, BitRate rate);
// How another model rounds a time on the wire: to the picosecond, up (serialization_time),
// or to whole nanoseconds, down or to the nearest (half up), from the exact quotient.
enum class WireRounding : std::uint8_t { ps_up, ns_down, ns_nearest };
Time serialization_time(Bytes size, BitRate rate, WireRounding rounding);
// The bytes `rate` carries in `t` (a cable's, a BDP), rounded down; exact (128-bit).
Bytes bytes_in(BitRate rate, Time t);
// The rate that carries `size` in `t` (> 0), rounded down to the bit per second.
BitRate rate_of(Bytes size, Time t);

}  // namespace fabriclab
