#include "core/params.h"

#include <algorithm>
#include <cmath>
#include <charconv>
#include <string>

namespace fabriclab::params {

std::string_view describe(Kind k) {
  switch (k) {
    case Kind::time: return "a time such as 10us";
    case Kind::bytes: return "a size such as 9KiB";
    case Kind::rate: return "a bit rate such as 100Gbps";
    case Kind::integer: return "an integer";
    case Kind::real: return "a number";
    case Kind::boolean: return "true or false";
    case Kind::text: return "a string";
    case Kind::choice: return "one of the listed choices";
  }
  return "?";
}

namespace {

// `text` as a value of the kind, without the range check.
Value parse_kind(const Spec& s, const std::string& text) {
  Value v{text};
  std::string wrong;  // why the text is not a value of this kind
  try {
    switch (s.kind) {
      case Kind::time:
        if (s.unit.empty()) {
          v.i = parse_time(text).ps();
          v.text = to_string(Time::from_ps(v.i));
        } else {
          // A bare number is in the key's unit; a time with a unit is taken as it is.
          const bool bare = !text.empty() && text.find_first_not_of("0123456789.") == std::string::npos;
          v.i = parse_time(bare ? text + s.unit : text).ps();
          const std::int64_t per = parse_time("1" + s.unit).ps();
          v.text = v.i % per == 0 ? std::to_string(v.i / per) : to_string(Time::from_ps(v.i));
        }
        break;
      case Kind::bytes:
        v.i = parse_bytes(text).count();
        v.text = to_string(Bytes::from_count(v.i));
        break;
      case Kind::rate:
        if (s.unit.empty()) {
          v.i = parse_bit_rate(text).bps();
          v.text = to_string(BitRate::from_bps(v.i));
        } else {
          // A bare number is in the key's unit; a number with a unit is taken as it is.
          const bool bare = !text.empty() && text.find_first_not_of("0123456789.") == std::string::npos;
          try {
            v.i = parse_bit_rate(bare ? text + s.unit : text).bps();
            v.text = decimal_in(BitRate::from_bps(v.i), s.unit);
          } catch (const InputError&) {
            wrong = fmt::format(
                "'{}' is not a rate: expected a number of {} (e.g. 2.5) or a rate with its unit (e.g. 2500Kbps), "
                "exact to the bps",
                text, s.unit);
          }
        }
        break;
      case Kind::integer: {
        std::size_t used = 0;
        v.i = std::stoll(text, &used);
        if (used != text.size()) wrong = fmt::format("'{}' is not an integer", text);
        break;
      }
      case Kind::real: {
        std::size_t used = 0;
        v.d = std::stod(text, &used);
        if (used != text.size()) wrong = fmt::format("'{}' is not a number", text);
        // (NaN would pass every range check: comparisons with it are false.)
        else if (!std::isfinite(v.d)) wrong = fmt::format("'{}' is not a finite number", text);
        break;
      }
      case Kind::boolean:
        if (text != "true" && text != "false") wrong = fmt::format("'{}' is not true or false", text);
        v.i = text == "true";
        break;
      case Kind::text: break;
      case Kind::choice:
        if (std::find(s.choices.begin(), s.choices.end(), text) == s.choices.end())
          wrong = fmt::format("'{}' is not one of: {}", text, fmt::join(s.choices, ", "));
        break;
    }
  } catch (const InputError& e) {
    wrong = e.what();  // the unit parsers' own message
  } catch (const std::exception&) {
    wrong = fmt::format("'{}' is not {}", text, describe(s.kind));
  }
  if (!wrong.empty()) throw InputError(wrong);
  return v;
}

}  // namespace

std::vector<std::string> split_list(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const auto end = text.find(sep, pos);
    std::string item = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    const auto b = item.find_first_not_of(" \t");
    if (b != std::string::npos) out.push_back(item.substr(b, item.find_last_not_of(" \t") - b + 1));
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return out;
}

std::optional<long long> parse_integer(const std::string& text) {
  long long v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || p != end) return std::nullopt;
  return v;
}

Value parse(const Spec& s, const std::string& text) {
  Value v = parse_kind(s, text);
  const bool numeric = s.kind != Kind::text && s.kind != Kind::choice && s.kind != Kind::boolean;
  if (!numeric) return v;
  // Integers compare exactly (a double would round large ones).
  const auto exact_below = [&](const Value& a, const Value& b) { return s.kind == Kind::real ? a.d < b.d : a.i < b.i; };
  const std::string unit = s.unit.empty() ? "" : " " + s.unit;  // a bare number's
  if (!s.min.empty() && exact_below(v, parse_kind(s, s.min)))
    throw InputError(fmt::format("{}{} is below the minimum {}{}", v.text, unit, s.min, unit));
  if (!s.max.empty() && exact_below(parse_kind(s, s.max), v))
    throw InputError(fmt::format("{}{} is above the maximum {}{}", v.text, unit, s.max, unit));
  return v;
}

}  // namespace fabriclab::params
