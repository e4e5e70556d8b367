#include "core/units.h"

#include <fmt/format.h>

#include <stdexcept>

#include "core/error.h"

namespace fabriclab {

namespace {

std::int64_t scaled(std::int64_t v, std::int64_t unit, const char* what) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(v, unit, &r))
    throw std::overflow_error(fmt::format("{} overflows its 64-bit range: {} x {}", what, v, unit));
  return r;
}

struct Unit {
  std::string_view name;
  std::int64_t factor;  // in the base unit
};

constexpr Unit kTimeUnits[] = {{"ps", 1}, {"ns", 1000}, {"us", 1000000}, {"ms", 1000000000}, {"s", 1000000000000}};
constexpr Unit kByteUnits[] = {{"B", 1},         {"KB", 1000},     {"MB", 1000000}, {"GB", 1000000000},
                               {"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}};
constexpr Unit kRateUnits[] = {
    {"bps", 1}, {"Kbps", 1000}, {"Mbps", 1000000}, {"Gbps", 1000000000}, {"Tbps", 1000000000000}};

template <std::size_t N>
std::string unit_list(const Unit (&units)[N]) {
  std::string s;
  for (const auto& u : units) s += (s.empty() ? "" : ", ") + std::string(u.name);
  return s;
}

// "<digits>[.<digits>]<space?><unit>" -> value in the base unit, exactly.
template <std::size_t N>
std::int64_t parse_quantity(std::string_view text, const Unit (&units)[N], const char* what) {
  auto fail = [&](const std::string& why) -> std::int64_t {
    throw InputError(fmt::format("'{}' is not a {}: {} (expected a number and one of: {}; "
                                 "e.g. 10{})",
                                 text, what, why, unit_list(units), units[1].name));
  };
  std::size_t i = 0;
  std::string digits;
  std::size_t decimals = 0;
  bool seen_point = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c >= '0' && c <= '9') {
      digits += c;
      if (seen_point) ++decimals;
    } else if (c == '.' && !seen_point) {
      seen_point = true;
    } else {
      break;
    }
  }
  if (digits.empty()) return fail("no number");
  if (i < text.size() && text[i] == ' ') ++i;
  const std::string_view name = text.substr(i);
  const Unit* unit = nullptr;
  for (const auto& u : units)
    if (u.name == name) unit = &u;
  if (!unit) return fail(name.empty() ? "no unit" : fmt::format("unknown unit '{}'", name));
  // value = digits * factor / 10^decimals, which must be an integer.
  while (digits.size() > 1 && digits.front() == '0') digits.erase(0, 1);
  if (digits.size() > 30) return fail("too large");
  __extension__ using u128 = unsigned __int128;
  u128 mantissa = 0;
  for (char c : digits) mantissa = mantissa * 10 + static_cast<unsigned>(c - '0');
  u128 value = mantissa * static_cast<u128>(unit->factor);
  for (std::size_t d = 0; d < decimals; ++d) {
    if (value % 10 != 0) return fail(fmt::format("not a whole number of {}", units[0].name));
    value /= 10;
  }
  if (value > static_cast<u128>(INT64_MAX)) return fail("too large");
  return static_cast<std::int64_t>(value);
}

// The largest unit not above v in which v is whole, or has at most three decimals (for
// the power-of-1000 units only: 1.5KiB would be a lie).
template <std::size_t N>
std::string render(std::int64_t v, const Unit (&units)[N]) {
  // The magnitude as unsigned: negating INT64_MIN would overflow.
  const std::uint64_t a = v < 0 ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
  for (std::size_t k = N; k-- > 0;) {
    const auto f = static_cast<std::uint64_t>(units[k].factor);
    if (a < f && k > 0) continue;
    if (a % f == 0) return fmt::format("{}{}{}", v < 0 ? "-" : "", a / f, units[k].name);
    if (f % 1000 == 0 && a % (f / 1000) == 0) {
      std::string frac = fmt::format("{:03}", (a % f) / (f / 1000));
      while (frac.back() == '0') frac.pop_back();
      return fmt::format("{}{}.{}{}", v < 0 ? "-" : "", a / f, frac, units[k].name);
    }
  }
  return fmt::format("{}{}", v, units[0].name);
}

}  // namespace

Time ps(std::int64_t v) { return Time::from_ps(v); }
Time ns(std::int64_t v) { return Time::from_ps(scaled(v, 1000, "time")); }
Time us(std::int64_t v) { return Time::from_ps(scaled(v, 1000000, "time")); }
Time ms(std::int64_t v) { return Time::from_ps(scaled(v, 1000000000, "time")); }
Time sec(std::int64_t v) { return Time::from_ps(scaled(v, 1000000000000, "time")); }
Bytes bytes(std::int64_t v) { return Bytes::from_count(v); }
Bytes KB(std::int64_t v) { return Bytes::from_count(scaled(v, 1000, "size")); }
Bytes MB(std::int64_t v) { return Bytes::from_count(scaled(v, 1000000, "size")); }
Bytes GB(std::int64_t v) { return Bytes::from_count(scaled(v, 1000000000, "size")); }
Bytes KiB(std::int64_t v) { return Bytes::from_count(scaled(v, 1 << 10, "size")); }
Bytes MiB(std::int64_t v) { return Bytes::from_count(scaled(v, 1 << 20, "size")); }
Bytes GiB(std::int64_t v) { return Bytes::from_count(scaled(v, 1 << 30, "size")); }
BitRate bps(std::int64_t v) { return BitRate::from_bps(v); }
BitRate Kbps(std::int64_t v) { return BitRate::from_bps(scaled(v, 1000, "rate")); }
BitRate Mbps(std::int64_t v) { return BitRate::from_bps(scaled(v, 1000000, "rate")); }
BitRate Gbps(std::int64_t v) { return BitRate::from_bps(scaled(v, 1000000000, "rate")); }
BitRate Tbps(std::int64_t v) { return BitRate::from_bps(scaled(v, 1000000000000, "rate")); }

Time parse_time(std::string_view t) { return Time::from_ps(parse_quantity(t, kTimeUnits, "time")); }
Bytes parse_bytes(std::string_view t) { return Bytes::from_count(parse_quantity(t, kByteUnits, "size")); }
BitRate parse_bit_rate(std::string_view t) { return BitRate::from_bps(parse_quantity(t, kRateUnits, "bit rate")); }

std::string to_string(Time t) { return render(t.ps(), kTimeUnits); }
std::string to_string(Bytes b) { return render(b.count(), kByteUnits); }
std::string to_string(BitRate r) { return render(r.bps(), kRateUnits); }

std::string decimal_in(BitRate r, std::string_view unit) {
  for (const auto& u : kRateUnits) {
    if (u.name != unit) continue;
    const std::int64_t v = r.bps();
    const std::uint64_t a = v < 0 ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
    const auto f = static_cast<std::uint64_t>(u.factor);
    std::string out = fmt::format("{}{}", v < 0 ? "-" : "", a / f);
    if (a % f != 0) {
      std::string frac = fmt::format("{:0{}}", a % f, fmt::formatted_size("{}", f) - 1);
      while (frac.back() == '0') frac.pop_back();
      out += "." + frac;
    }
    return out;
  }
  throw std::invalid_argument(fmt::format("decimal_in: '{}' is not a rate unit", unit));
}

Time serialization_time(Bytes size, BitRate rate, WireRounding rounding) {
  if (rate.bps() <= 0) throw std::invalid_argument("serialization_time: the rate must be positive");
  if (size.count() < 0) throw std::invalid_argument("serialization_time: negative size");
  __extension__ using u128 = unsigned __int128;
  const bool ps = rounding == WireRounding::ps_up;
  const u128 num = static_cast<u128>(size.count()) * 8u * (ps ? 1000000000000u : 1000000000u);  // bits x unit/s
  const u128 den = static_cast<u128>(rate.bps());
  const u128 q = ps ? (num + den - 1) / den  // up: a frame is on the wire to its last bit
                 : rounding == WireRounding::ns_down ? num / den
                                                     : (2 * num + den) / (2 * den);  // nearest, half up
  const u128 scale = ps ? 1 : 1000;
  if (q > static_cast<u128>(INT64_MAX) / scale) throw std::overflow_error("serialization_time overflows");
  return Time::from_ps(static_cast<std::int64_t>(q * scale));
}

Time serialization_time(Bytes size, BitRate rate) { return serialization_time(size, rate, WireRounding::ps_up); }

Bytes bytes_in(BitRate rate, Time t) {
  __extension__ using I128 = __int128;
  return Bytes::from_count(static_cast<std::int64_t>(static_cast<I128>(rate.bps()) * t.ps() / 8'000'000'000'000));
}

BitRate rate_of(Bytes size, Time t) {
  __extension__ using I128 = __int128;
  return BitRate::from_bps(static_cast<std::int64_t>(static_cast<I128>(size.count()) * 8'000'000'000'000 / t.ps()));
}

}  // namespace fabriclab
