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
#include <functional>
#include <map>
#include <memory>
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

// A double as the shortest text that reads back, in plain decimal notation (1e-07 ->
// "0.0000001"), for the unit parsers that take no exponent.
std::string plain_decimal(double v);

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
  // An entry of a list of tables (ListRegistry): which list, which entry, and the full key
  // ("collective.0.bytes"); list = -1 for every other setting.
  int list = -1;
  std::size_t item = 0;
  std::string key() const { return list < 0 ? spec->key : item_key; }
  std::string item_key;
};

// A list of tables in the file -- `[[collective]]` entries, each with the keys of `items`.
// Entry i's keys read "name.i.key" in --set overrides, messages and echoes.
struct ListRegistry {
  std::string name;
  const ParamRegistry* items;
};

// The keys set by `toml_text` (read from `origin`) and then `overrides`, one per key in key
// order, the last setting of a key winning. Throws InputError on anything undeclared or
// malformed.
// `lists`: the lists of tables the file may hold; their entries' counts go to
// `list_sizes` (one per list), and an override of an entry the file lacks is an error.
std::vector<Setting> read_settings(const ParamRegistry& reg, const std::string& toml_text, const std::string& origin,
                                   const std::vector<std::string>& overrides,
                                   const std::vector<ListRegistry>& lists = {},
                                   std::vector<std::size_t>* list_sizes = nullptr);
// The declaration of `key`: one of `reg`, or an entry's key of one of `lists`
// ("collective.0.algorithm": a list's name, an entry number, a key of its entries);
// nullptr when there is none. Whether the entry exists is the scenario's to say.
const ParamSpec* find_key(const ParamRegistry& reg, const std::vector<ListRegistry>& lists, const std::string& key);

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
  // A text key's value as a path: a relative one set in a scenario file is relative to
  // that file's folder (like an include); one from --set or the default, to the working
  // directory, as given.
  std::string path(const std::string& key) const;
  // Where entry i of list `list` (`[[list]]`) was set: its earliest key in a file
  // ("f.toml:12:1"), or "--set" when only overrides set it.
  std::string entry_origin(const std::string& list, std::size_t i) const;
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

  // Entries of a list of tables `[[name]]` into member `m`, each with the keys of `item`
  // (declared once, beside the item's struct; defaults from a default-constructed I).
  template <class I>
  Parameters& list(std::string name, std::vector<I> R::*m, params::Table<I> item) {
    auto table = std::make_shared<const params::Table<I>>(std::move(item));
    ListBinding b;
    b.name = name;
    b.items = std::make_unique<ParamRegistry>();
    const I defaults{};
    for (const auto& f : table->fields()) {
      ParamSpec spec;
      static_cast<params::Spec&>(spec) = f.spec;
      spec.default_value = f.get(defaults);
      b.items->declare(std::move(spec));
    }
    b.resize = [m](R& r, std::size_t n) { (r.*m).resize(n); };
    b.set = [m, table](R& r, std::size_t i, const std::string& key, const params::Value& v) {
      table->find(key)->set((r.*m)[i], v);
    };
    b.echo = [m, table, name](const R& r, Config& c, const std::map<std::string, std::string>& origins) {
      for (std::size_t i = 0; i < (r.*m).size(); ++i)
        for (const auto& f : table->fields()) {
          const std::string key = fmt::format("{}.{}.{}", name, i, f.spec.key);
          const auto it = origins.find(key);
          c.set(key, f.spec.kind, params::parse(f.spec, f.get((r.*m)[i])),
                it == origins.end() ? "default" : it->second);
        }
    };
    lists_.push_back(std::move(b));
    return *this;
  }

  const ParamRegistry& registry() const { return reg_; }
  // Any key --set, --vary or --param may name: the table's, or a list entry's
  // ("collective.0.algorithm"); nullptr for an unknown one.
  const ParamSpec* find(const std::string& key) const { return find_key(reg_, lists(), key); }
  // The lists of tables' registries (for read_settings and listings).
  std::vector<ListRegistry> lists() const {
    std::vector<ListRegistry> out;
    for (const auto& b : lists_) out.push_back({b.name, b.items.get()});
    return out;
  }
  const params::Table<R>& table() const { return table_; }
  const R& defaults() const { return defaults_; }

  Resolved<R> resolve(const std::string& path, const std::vector<std::string>& overrides = {}) const {
    return resolve_text(read_text(path), path, overrides);
  }
  // Presets are applied first, then every other key set, in key order.
  Resolved<R> resolve_text(const std::string& toml_text, const std::string& origin,
                           const std::vector<std::string>& overrides = {}) const {
    std::vector<std::size_t> sizes;
    const std::vector<Setting> settings = read_settings(reg_, toml_text, origin, overrides, lists(), &sizes);
    Resolved<R> out{defaults_, {}};
    for (std::size_t l = 0; l < lists_.size(); ++l) lists_[l].resize(out.value, sizes[l]);
    for (const Setting& s : settings) {
      if (s.list < 0) continue;
      try {
        lists_[static_cast<std::size_t>(s.list)].set(out.value, s.item, s.spec->key, s.value);
      } catch (const InputError& e) {
        throw InputError(fmt::format("{}: key '{}': {}", s.origin, s.key(), e.what()));
      }
    }
    for (const bool presets : {true, false})
      for (const Setting& s : settings) {
        if (s.list >= 0) continue;
        const auto* f = table_.find(s.spec->key);
        if (f->preset != presets) continue;
        try {
          f->set(out.value, s.value);
        } catch (const InputError& e) {
          throw InputError(fmt::format("{}: key '{}': {}", s.origin, s.spec->key, e.what()));
        }
      }
    std::map<std::string, std::string> origins;
    for (const Setting& s : settings) origins[s.key()] = s.origin;
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
        throw InputError(
            fmt::format("{}: key '{}': {}", it == origins.end() ? "default" : it->second, f.spec.key, e.what()));
      }
      c.set(f.spec.key, f.spec.kind, std::move(v), it == origins.end() ? "default" : it->second);
    }
    for (const auto& b : lists_) b.echo(r, c, origins);
    return c;
  }

 private:
  struct ListBinding {
    std::string name;
    std::unique_ptr<ParamRegistry> items;
    std::function<void(R&, std::size_t)> resize;
    std::function<void(R&, std::size_t, const std::string&, const params::Value&)> set;
    std::function<void(const R&, Config&, const std::map<std::string, std::string>&)> echo;
  };
  std::vector<ListBinding> lists_;
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
