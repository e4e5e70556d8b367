// Parameters bound to the struct fields they set. A model declares each of its parameters
// once, beside its struct, in a typed table: the key, the kind (with its unit), the valid
// range, the help, and the field it sets. The default is the field's default in a
// default-constructed struct (or a preset's value), so a listing, a loader and an echo of
// the configuration all read the same declaration; nothing is restated elsewhere.
//
//   params::Table<ResequencerConfig> t;
//   t.integer("buffer", &ResequencerConfig::buffer, "packets it can hold", 1, 1048576)
//    .time("timeout", &ResequencerConfig::timeout, "longest wait for a gap", "1ns", "1s");
//   params::Table<Scenario> root;
//   root.nest("reseq", &Scenario::reseq, t);        // keys reseq.buffer, reseq.timeout
//   ResequencerConfig c;
//   t.find("buffer")->set(c, params::parse(t.find("buffer")->spec, "128"));
//   t.find("timeout")->get(c);                      // "100us"
//
// Text is parsed by `parse()` (units from core/units.h, ranges checked); reading TOML
// files and --set overrides is the scenario loader's (scenario/parameters.h).
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <fmt/format.h>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/units.h"

namespace fabriclab::params {

enum class Kind : std::uint8_t { time, bytes, rate, integer, real, boolean, text, choice };

// "a time such as 10us", for messages.
std::string_view describe(Kind k);

// What a parameter is: enough to parse, check and list it.
struct Spec {
  std::string key;  // dotted path: "switch.pfc.xoff"
  Kind kind = Kind::text;
  std::string help;
  std::string min, max;              // bounds in the file's syntax ("" = none)
  std::vector<std::string> choices;  // Kind::choice
  // Kind::rate: the unit of a bare number ("Mbps": `40` is 40 Mb/s, as a device's sysfs
  // file takes it), in which the value is also written ("2.5"); "" = a unit is required.
  std::string unit = {};
};

// A value parsed for a Spec: its canonical text ("200KB" -> "200KB", "1000ns" -> "1us"),
// and its number for the numeric kinds (ps, bytes, bps or the integer in `i`; a real in `d`).
struct Value {
  std::string text;
  std::int64_t i = 0;
  double d = 0;
};

// List-valued text parameters ("3,4", "sw0:0,h1", "2|3"): the items between `sep`,
// spaces trimmed, empty items dropped.
std::vector<std::string> split_list(const std::string& text, char sep = ',');
// The whole of `text` as an integer, or nothing (no partial parses, no exceptions).
std::optional<long long> parse_integer(const std::string& text);

// Parses `text` as a value of `s` and checks its range. Throws InputError saying why
// (without the key or the place, which the caller knows).
Value parse(const Spec& s, const std::string& text);

// The names of an enum's values, in one table that parsing, printing and the list of
// choices all read.
template <class E>
struct EnumName {
  E value;
  std::string_view name;
};
template <class E, std::size_t N>
using EnumNames = std::array<EnumName<E>, N>;

template <class E, std::size_t N>
std::string_view name_of(const EnumNames<E, N>& names, E v) {
  for (const auto& n : names)
    if (n.value == v) return n.name;
  throw std::logic_error("enum value without a name");
}
template <class E, std::size_t N>
std::optional<E> value_named(const EnumNames<E, N>& names, std::string_view name) {
  for (const auto& n : names)
    if (n.name == name) return n.value;
  return std::nullopt;
}
template <class E, std::size_t N>
std::vector<std::string> names_of(const EnumNames<E, N>& names) {
  std::vector<std::string> out;
  for (const auto& n : names) out.emplace_back(n.name);
  return out;
}
// The value named `name`; throws InputError "unknown WHAT 'name' (expected: a, b)".
template <class E, std::size_t N>
E parse_enum(const EnumNames<E, N>& names, std::string_view name, std::string_view what) {
  if (auto v = value_named(names, name)) return *v;
  throw InputError(fmt::format("unknown {} '{}' (expected: {})", what, name, fmt::join(names_of(names), ", ")));
}

// One parameter of a struct S: its spec and how it sets and reads the field.
template <class S>
struct Field {
  Spec spec;
  // A preset sets many fields at once; a loader applies presets before every other key,
  // so that a key set beside a preset overrides the preset's value.
  bool preset = false;
  // Sets the field from a value already parsed for `spec` (may throw InputError for rules
  // beyond the kind and range, saying why without the key).
  std::function<void(S&, const Value&)> set;
  // The field's value as text that `parse` reads back to the same value.
  std::function<std::string(const S&)> get;
};

template <class S>
class Table {
 public:
  Table& time(std::string key, Time S::*m, std::string help, std::string min = "0ps", std::string max = "") {
    return add(
        {key, Kind::time, std::move(help), std::move(min), std::move(max), {}},
        [m](S& s, const Value& v) { s.*m = Time::from_ps(v.i); }, [m](const S& s) { return to_string(s.*m); });
  }
  Table& bytes(std::string key, Bytes S::*m, std::string help, std::string min = "0B", std::string max = "") {
    return add(
        {key, Kind::bytes, std::move(help), std::move(min), std::move(max), {}},
        [m](S& s, const Value& v) { s.*m = Bytes::from_count(v.i); }, [m](const S& s) { return to_string(s.*m); });
  }
  Table& rate(std::string key, BitRate S::*m, std::string help, std::string min = "0bps", std::string max = "") {
    return add(
        {key, Kind::rate, std::move(help), std::move(min), std::move(max), {}},
        [m](S& s, const Value& v) { s.*m = BitRate::from_bps(v.i); }, [m](const S& s) { return to_string(s.*m); });
  }
  // A rate whose bare numbers are in `unit` ("Mbps"), written back in it: "40", "2.5".
  Table& rate_in(std::string unit, std::string key, BitRate S::*m, std::string help, std::string min = "0",
                 std::string max = "") {
    Spec spec{key, Kind::rate, std::move(help), std::move(min), std::move(max), {}};
    spec.unit = unit;
    return add(
        std::move(spec), [m](S& s, const Value& v) { s.*m = BitRate::from_bps(v.i); },
        [m, unit](const S& s) { return decimal_in(s.*m, unit); });
  }
  // A time a device takes as a whole number of `unit` ("us": NVIDIA's sysfs), held as
  // that count: a bare number is in the unit ("50"), a time with its unit is taken as it
  // is ("50us", "1ms") and must be a whole number of the unit; written back bare.
  template <std::integral I>
  Table& time_in(std::string unit, std::string key, I S::*m, std::string help, std::string min, std::string max) {
    Spec spec{key, Kind::time, std::move(help), std::move(min), std::move(max), {}};
    spec.unit = unit;
    const std::int64_t per = parse_time("1" + unit).ps();
    return add(
        std::move(spec),
        [m, per, unit](S& s, const Value& v) {
          if (v.i % per != 0)
            throw InputError(fmt::format("{} is not a whole number of {}", to_string(Time::from_ps(v.i)), unit));
          s.*m = static_cast<I>(v.i / per);
        },
        [m](const S& s) { return std::to_string(s.*m); });
  }
  Table& flag(std::string key, bool S::*m, std::string help) {
    return add(
        {key, Kind::boolean, std::move(help), "", "", {}}, [m](S& s, const Value& v) { s.*m = v.i != 0; },
        [m](const S& s) { return std::string(s.*m ? "true" : "false"); });
  }
  Table& real(std::string key, double S::*m, std::string help, std::string min = "", std::string max = "") {
    return add(
        {key, Kind::real, std::move(help), std::move(min), std::move(max), {}},
        [m](S& s, const Value& v) { s.*m = v.d; }, [m](const S& s) { return real_text(s.*m); });
  }
  Table& text(std::string key, std::string S::*m, std::string help) {
    return add(
        {key, Kind::text, std::move(help), "", "", {}}, [m](S& s, const Value& v) { s.*m = v.text; },
        [m](const S& s) { return s.*m; });
  }
  // A string field that holds one of `choices`.
  Table& one_of(std::string key, std::string S::*m, std::vector<std::string> choices, std::string help) {
    return add(
        {key, Kind::choice, std::move(help), "", "", std::move(choices)}, [m](S& s, const Value& v) { s.*m = v.text; },
        [m](const S& s) { return s.*m; });
  }
  // An integer field; the bounds default to (and must lie within) the field type's range.
  template <std::integral I>
    requires(!std::same_as<I, bool>)
  Table& integer(std::string key, I S::*m, std::string help, std::optional<std::int64_t> min = {},
                 std::optional<std::int64_t> max = {}) {
    return add(
        {key, Kind::integer, std::move(help), bound_text<I>(min, true), bound_text<I>(max, false), {}},
        [m](S& s, const Value& v) { s.*m = static_cast<I>(v.i); }, [m](const S& s) { return std::to_string(s.*m); });
  }
  // A bool field named by two words, listed in `names`' order (the default first where
  // it is the default); `on` is the one that sets it true.
  Table& either(std::string key, bool S::*m, std::array<std::string, 2> names, const std::string& on,
                std::string help) {
    const std::string off = names[0] == on ? names[1] : names[0];
    return add(
        {key, Kind::choice, std::move(help), "", "", {names[0], names[1]}},
        [m, on](S& s, const Value& v) { s.*m = v.text == on; }, [m, on, off](const S& s) { return s.*m ? on : off; });
  }
  // An enum field, named by its table.
  template <class E, std::size_t N>
  Table& choice(std::string key, E S::*m, const EnumNames<E, N>& names, std::string help) {
    return add(
        {key, Kind::choice, std::move(help), "", "", names_of(names)},
        [m, &names](S& s, const Value& v) { s.*m = *value_named(names, v.text); },
        [m, &names](const S& s) { return std::string(name_of(names, s.*m)); });
  }
  // Anything else: a field read or written through a conversion, or several fields.
  Table& custom(Spec spec, std::function<void(S&, const Value&)> set, std::function<std::string(const S&)> get,
                bool preset = false) {
    fields_.push_back({std::move(spec), preset, std::move(set), std::move(get)});
    return *this;
  }
  // Every field of `sub`, under "prefix." (no prefix: the same keys), setting member `m`.
  template <class M>
  Table& nest(std::string_view prefix, M S::*m, const Table<M>& sub) {
    for (const Field<M>& f : sub.fields()) {
      Spec spec = f.spec;
      if (!prefix.empty()) spec.key = std::string(prefix) + "." + spec.key;
      fields_.push_back({std::move(spec), f.preset, [m, set = f.set](S& s, const Value& v) { set(s.*m, v); },
                         [m, get = f.get](const S& s) { return get(s.*m); }});
    }
    return *this;
  }

  const std::vector<Field<S>>& fields() const { return fields_; }
  const Field<S>* find(std::string_view key) const {
    for (const auto& f : fields_)
      if (f.spec.key == key) return &f;
    return nullptr;
  }

 private:
  Table& add(Spec spec, std::function<void(S&, const Value&)> set, std::function<std::string(const S&)> get) {
    return custom(std::move(spec), std::move(set), std::move(get));
  }
  template <std::integral I>
  static std::string bound_text(std::optional<std::int64_t> b, bool lower) {
    using L = std::numeric_limits<I>;
    // The type's own limit where it is narrower than the int64 the loader parses.
    const auto lo = static_cast<std::int64_t>(std::max<std::intmax_t>(L::min(), INT64_MIN));
    const auto hi = static_cast<std::int64_t>(std::min<std::uintmax_t>(L::max(), INT64_MAX));
    if (b && (*b < lo || *b > hi)) throw std::logic_error("parameter bound outside its field's type");
    if (!b) b = lower ? lo : hi;
    if (*b == INT64_MIN || *b == INT64_MAX) return "";  // the parser's own limit
    return std::to_string(*b);
  }
  static std::string real_text(double d) { return fmt::format("{}", d); }

  std::vector<Field<S>> fields_;
};

// Throws InputError "KEY: VALUE is above the maximum MAX" (or why else it is not a value
// of its kind) for the first field of `s` outside its declaration.
template <class S>
void validate(const Table<S>& t, const S& s) {
  for (const auto& f : t.fields()) {
    try {
      (void)parse(f.spec, f.get(s));
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: {}", f.spec.key, e.what()));
    }
  }
}

}  // namespace fabriclab::params
