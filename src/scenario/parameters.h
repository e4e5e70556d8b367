// Loading parameters: a TOML file plus command-line overrides ("key=value"), in that order
// over the defaults, into the structs the parameters are declared on (core/params.h).
// Unknown keys and bad values are errors naming the file, line and column (or the
// override), with "did you mean" for a close misspelling; the configuration echoed into
// results is read back from the structs the run uses.
//
//   const Parameters<Scenario> p(scenario_table());     // one table of the root struct
//   Resolved<Scenario> r = p.resolve("incast.toml", {"traffic.bytes=2MB"});
//   r.value.traffic.bytes;                               // the struct, as the run uses it
//   r.config.origin("traffic.bytes");                    // "--set"
//   r.config.echo();                                     // {"key": "value", ...} from r.value
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/params.h"
#include "core/units.h"

namespace fabriclab::scenario {

using ParamKind = params::Kind;

struct ParamSpec : params::Spec {
  std::string default_value;  // as the loader would read it: "1us", "9KiB", "4", "true"
  // A preset key's choices with the values they give this key, where they differ from
  // the default: {{"paper", "55"}}.
  std::vector<std::pair<std::string, std::string>> preset_values;
};

// Every key a loader accepts.
class ParamRegistry {
 public:
  // Throws std::logic_error on a duplicate key or a default outside its own range.
  void declare(ParamSpec spec);
  const ParamSpec* find(const std::string& key) const;
  const std::map<std::string, ParamSpec>& all() const { return specs_; }

 private:
  std::map<std::string, ParamSpec> specs_;
};

// A value set in the file or by --set, parsed for its key; `origin` is "file.toml:12:9"
// or "--set".
struct Setting {
  const ParamSpec* spec;
  params::Value value;
  std::string origin;
};

// The keys set by `toml_text` (read from `origin`) and then `overrides`, one per key in key
// order, the last setting of a key winning. Throws InputError on anything undeclared or
// malformed.
std::vector<Setting> read_settings(const ParamRegistry& reg, const std::string& toml_text,
                                   const std::string& origin, const std::vector<std::string>& overrides);
// The text of the file at `path` (InputError naming it when it cannot be read).
std::string read_text(const std::string& path);

// Resolved values, one per declared parameter, as the run uses them.
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
  // {"key": "value", ...} in key order, for result files.
  nlohmann::ordered_json echo() const;

  void set(const std::string& key, params::Kind kind, params::Value value, std::string origin);

 private:
  struct Entry {
    params::Kind kind;
    params::Value value;
    std::string origin;
  };
  const Entry& get(const std::string& key, params::Kind want) const;
  std::map<std::string, Entry> values_;
};

using params::parse_integer;
using params::split_list;

template <class R>
struct Resolved {
  R value;        // what the run uses
  Config config;  // the same values by key, with where each was set
};

// The parameters of a root struct R: its table, and the registry the loader reads.
template <class R>
class Parameters {
 public:
  explicit Parameters(params::Table<R> table, R defaults = R{})
      : table_(std::move(table)), defaults_(std::move(defaults)) {
    const auto& fields = table_.fields();
    std::vector<ParamSpec> specs(fields.size());
    for (std::size_t i = 0; i < fields.size(); ++i) {
      static_cast<params::Spec&>(specs[i]) = fields[i].spec;
      specs[i].default_value = fields[i].get(defaults_);
    }
    // What each preset changes, for listings.
    for (const auto& p : fields) {
      if (!p.preset) continue;
      for (const std::string& choice : p.spec.choices) {
        R r = defaults_;
        p.set(r, params::parse(p.spec, choice));
        for (std::size_t i = 0; i < fields.size(); ++i)
          if (&fields[i] != &p && fields[i].get(r) != specs[i].default_value)
            specs[i].preset_values.emplace_back(choice, fields[i].get(r));
      }
    }
    for (auto& s : specs) reg_.declare(std::move(s));
  }

  const ParamRegistry& registry() const { return reg_; }
  const params::Table<R>& table() const { return table_; }
  const R& defaults() const { return defaults_; }

  Resolved<R> resolve(const std::string& path, const std::vector<std::string>& overrides = {}) const {
    return resolve_text(read_text(path), path, overrides);
  }
  // Presets are applied first, then every other key set, in key order.
  Resolved<R> resolve_text(const std::string& toml_text, const std::string& origin,
                           const std::vector<std::string>& overrides = {}) const {
    const std::vector<Setting> settings = read_settings(reg_, toml_text, origin, overrides);
    Resolved<R> out{defaults_, {}};
    for (const bool presets : {true, false})
      for (const Setting& s : settings) {
        const auto* f = table_.find(s.spec->key);
        if (f->preset != presets) continue;
        try {
          f->set(out.value, s.value);
        } catch (const InputError& e) {
          throw InputError(fmt::format("{}: key '{}': {}", s.origin, s.spec->key, e.what()));
        }
      }
    std::map<std::string, std::string> origins;
    for (const Setting& s : settings) origins[s.spec->key] = s.origin;
    out.config = config_of(out.value, origins);
    return out;
  }

  // The values of `r` by key; keys not in `origins` come from "default".
  Config config_of(const R& r, const std::map<std::string, std::string>& origins = {}) const {
    Config c;
    for (const auto& f : table_.fields()) {
      const auto it = origins.find(f.spec.key);
      params::Value v;
      try {
        v = params::parse(f.spec, f.get(r));
      } catch (const InputError& e) {
        throw InputError(fmt::format("{}: key '{}': {}", it == origins.end() ? "default" : it->second, f.spec.key,
                                     e.what()));
      }
      c.set(f.spec.key, f.spec.kind, std::move(v), it == origins.end() ? "default" : it->second);
    }
    return c;
  }

 private:
  params::Table<R> table_;
  R defaults_;
  ParamRegistry reg_;
};

template <class R>
Resolved<R> resolve(const Parameters<R>& p, const std::string& path, const std::vector<std::string>& overrides = {}) {
  return p.resolve(path, overrides);
}
template <class R>
Resolved<R> resolve_text(const Parameters<R>& p, const std::string& toml_text, const std::string& origin,
                         const std::vector<std::string>& overrides = {}) {
  return p.resolve_text(toml_text, origin, overrides);
}

}  // namespace fabriclab::scenario
