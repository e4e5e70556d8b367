// Scenario parameters, each declared once -- name, kind (with its unit), default, valid
// range and help -- and resolved from a TOML file plus command-line overrides. Unknown
// keys and bad values are errors naming the file, line and column (or the override);
// the resolved configuration is echoed into every result.
//
//   ParamRegistry reg;
//   reg.declare({"link.delay", ParamKind::time, "1us", "propagation delay", "0ps", "1s"});
//   Config cfg = resolve(reg, "incast.toml", {"link.delay=500ns"});
//   Time d = cfg.time("link.delay");
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/units.h"

namespace fabriclab::scenario {

enum class ParamKind : std::uint8_t { time, bytes, rate, integer, real, boolean, text, choice };

struct ParamSpec {
  std::string key;           // dotted path: "switch.pfc.xoff"
  ParamKind kind;
  std::string default_value; // in the file's syntax: "1us", "9KiB", "100Gbps", "4", "true"
  std::string help;
  std::string min, max;      // optional bounds, same syntax ("" = none)
  std::vector<std::string> choices;  // ParamKind::choice
};

class ParamRegistry {
 public:
  // Throws std::logic_error on a duplicate key or a default outside its own range.
  void declare(ParamSpec spec);
  void declare(std::string key, ParamKind kind, std::string default_value, std::string help, std::string min = "",
               std::string max = "", std::vector<std::string> choices = {}) {
    declare(ParamSpec{std::move(key), kind, std::move(default_value), std::move(help), std::move(min), std::move(max),
                      std::move(choices)});
  }
  const ParamSpec* find(const std::string& key) const;
  const std::map<std::string, ParamSpec>& all() const { return specs_; }

 private:
  std::map<std::string, ParamSpec> specs_;
};

// Resolved values, one per declared parameter.
class Config {
 public:
  Time time(const std::string& key) const;
  Bytes bytes(const std::string& key) const;
  BitRate rate(const std::string& key) const;
  std::int64_t integer(const std::string& key) const;
  double real(const std::string& key) const;
  bool boolean(const std::string& key) const;
  const std::string& text(const std::string& key) const;  // text and choice
  // Any parameter's value as text ("200KB"), for messages.
  const std::string& shown(const std::string& key) const;
  // Where each value came from: "default", "file.toml:12:9", "--set".
  const std::string& origin(const std::string& key) const;
  // {"key": "value as written", ...} in key order, for result files.
  nlohmann::ordered_json echo() const;

 private:
  friend Config resolve_text(const ParamRegistry&, const std::string&, const std::string&,
                             const std::vector<std::string>&);
  struct Value {
    ParamKind kind;
    std::string text;  // canonical, as parsed
    std::int64_t i = 0;
    double d = 0;
    std::string origin;
  };
  const Value& get(const std::string& key, ParamKind want) const;
  std::map<std::string, Value> values_;
};

// List-valued text parameters ("3,4", "sw0:0,h1", "2|3"): the items between `sep`,
// spaces trimmed, empty items dropped.
std::vector<std::string> split_list(const std::string& text, char sep = ',');
// The whole of `text` as an integer, or nothing (no partial parses, no exceptions).
std::optional<long long> parse_integer(const std::string& text);

// Reads `path` (TOML) and applies `overrides` ("key=value"), in that order over the
// defaults. Throws InputError on anything undeclared or malformed.
Config resolve(const ParamRegistry& reg, const std::string& path,
               const std::vector<std::string>& overrides = {});
// The same from text already read (`origin` names it in messages).
Config resolve_text(const ParamRegistry& reg, const std::string& toml_text,
                    const std::string& origin, const std::vector<std::string>& overrides = {});

}  // namespace fabriclab::scenario
