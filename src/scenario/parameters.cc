#include "scenario/parameters.h"

#include <fmt/format.h>

#include <filesystem>

#include <algorithm>
#include <array>
#include <charconv>
#include <functional>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <toml++/toml.h>

#include "core/error.h"
#include "core/input.h"
#include "scenario/toml_input.h"

namespace fabriclab::scenario {

namespace {

// Edit distance, for "did you mean".
std::size_t distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t prev = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cur = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] == b[j - 1] ? 0 : 1)});
      prev = cur;
    }
  }
  return row[b.size()];
}

// `shown`: the key as the user wrote it, when `key` is its last part (a list entry's key:
// "collective.0.bytse" for "bytse"); the suggestion is written the same way.
std::string suggestion(const ParamRegistry& reg, const std::string& key, const std::string& shown = "") {
  std::string best;
  std::size_t best_d = 4;  // only close misspellings
  for (const auto& [k, _] : reg.all()) {
    const std::size_t d = distance(k, key);
    if (d < best_d) best_d = d, best = k;
  }
  if (best.empty()) return "";
  if (shown.size() > key.size()) best = shown.substr(0, shown.size() - key.size()) + best;
  return fmt::format(" (did you mean '{}'?)", best);
}

// `text` parsed for `s`; `where` and the key as written (`shown`: a list entry's
// "load.0.load") prefix errors.
params::Value parse_value(const params::Spec& s, const std::string& text, const std::string& where,
                          const std::string& shown) {
  try {
    return params::parse(s, text);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: key '{}': {}", where, shown, e.what()));
  }
}

// A TOML leaf as the text parse_value expects, or an error naming its place.
std::string leaf_text(const params::Spec& s, const toml::node& n, const std::string& where, const std::string& shown) {
  if (auto v = n.value<std::string>()) return *v;
  if (n.is_boolean()) return *n.value<bool>() ? "true" : "false";
  const bool bare_unit = !s.unit.empty();  // a bare number is in s.unit (a device's rate or time)
  if (n.is_integer()) {
    if (!bare_unit && (s.kind == ParamKind::time || s.kind == ParamKind::bytes || s.kind == ParamKind::rate))
      throw InputError(fmt::format("{}: key '{}': a bare number has no unit; write {} as a string", where, shown,
                                   params::describe(s.kind)));
    return std::to_string(*n.value<std::int64_t>());
  }
  if (n.is_floating_point()) {
    if (bare_unit) return plain_decimal(*n.value<double>());
    if (s.kind != ParamKind::real)
      throw InputError(fmt::format("{}: key '{}': expected {}", where, shown, params::describe(s.kind)));
    std::ostringstream out;
    out.precision(17);
    out << *n.value<double>();
    return out.str();
  }
  throw InputError(fmt::format("{}: key '{}': expected {}", where, shown, params::describe(s.kind)));
}

std::string place(const std::string& origin, const toml::node& n) {
  const auto& b = n.source().begin;
  return fmt::format("{}:{}:{}", origin, b.line, b.column);
}

}  // namespace

std::string plain_decimal(double v) {
  // The shortest fixed-notation text that reads back (std::to_chars); a double needs at
  // most 309 digits before the point and about 330 after it.
  std::array<char, 512> buf;
  const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v, std::chars_format::fixed);
  if (ec != std::errc()) throw std::logic_error("plain_decimal: the buffer is too small");
  return {buf.data(), end};
}

void ParamRegistry::declare(ParamSpec spec) {
  if (specs_.count(spec.key)) throw std::logic_error("parameter declared twice: " + spec.key);
  try {
    (void)params::parse(spec, spec.default_value);
  } catch (const InputError& e) {
    throw std::logic_error(fmt::format("default of '{}': {}", spec.key, e.what()));
  }
  specs_.emplace(spec.key, std::move(spec));
}

const ParamSpec* ParamRegistry::find(const std::string& key) const {
  auto it = specs_.find(key);
  return it == specs_.end() ? nullptr : &it->second;
}

void Config::set(const std::string& key, params::Kind kind, params::Value value, std::string origin) {
  values_[key] = {kind, std::move(value), std::move(origin)};
}

const Config::Entry& Config::get(const std::string& key, ParamKind want) const {
  auto it = values_.find(key);
  if (it == values_.end()) throw std::logic_error("parameter not declared: " + key);
  const bool ok = it->second.kind == want || (want == ParamKind::text && it->second.kind == ParamKind::choice);
  if (!ok) throw std::logic_error("parameter read as the wrong kind: " + key);
  return it->second;
}

Time Config::time(const std::string& k) const { return Time::from_ps(get(k, ParamKind::time).value.i); }
Bytes Config::bytes(const std::string& k) const { return Bytes::from_count(get(k, ParamKind::bytes).value.i); }
BitRate Config::rate(const std::string& k) const { return BitRate::from_bps(get(k, ParamKind::rate).value.i); }
std::int64_t Config::integer(const std::string& k) const { return get(k, ParamKind::integer).value.i; }
double Config::real(const std::string& k) const { return get(k, ParamKind::real).value.d; }
bool Config::boolean(const std::string& k) const { return get(k, ParamKind::boolean).value.i != 0; }
const std::string& Config::text(const std::string& k) const { return get(k, ParamKind::text).value.text; }
const std::string& Config::shown(const std::string& k) const {
  auto it = values_.find(k);
  if (it == values_.end()) throw std::logic_error("parameter not declared: " + k);
  return it->second.value.text;
}
const std::string& Config::origin(const std::string& k) const {
  auto it = values_.find(k);
  if (it == values_.end()) throw std::logic_error("parameter not declared: " + k);
  return it->second.origin;
}

std::string Config::path(const std::string& k) const {
  const std::string& value = text(k);
  const std::string& from = origin(k);
  // "file.toml:12:9": the file is what precedes the last two ":N".
  const auto col = from.rfind(':');
  const auto line = col == std::string::npos || col == 0 ? std::string::npos : from.rfind(':', col - 1);
  if (value.empty() || line == std::string::npos || !std::filesystem::path(value).is_relative()) return value;
  return (std::filesystem::path(from.substr(0, line)).parent_path() / value).string();
}

std::string Config::entry_origin(const std::string& list, std::size_t i) const {
  const std::string prefix = list + "." + std::to_string(i) + ".";
  std::string best = "--set";
  std::pair<long, long> at{-1, -1};
  for (auto it = values_.lower_bound(prefix); it != values_.end() && it->first.starts_with(prefix); ++it) {
    const std::string& o = it->second.origin;
    if (o == "default" || o == "--set") continue;
    // "FILE:LINE:COLUMN"
    const auto c2 = o.rfind(':'), c1 = o.rfind(':', c2 - 1);
    const std::pair<long, long> here{std::stol(o.substr(c1 + 1, c2 - c1 - 1)), std::stol(o.substr(c2 + 1))};
    if (at.first < 0 || here < at) at = here, best = o;
  }
  return best;
}

nlohmann::ordered_json Config::echo() const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [k, v] : values_) j[k] = v.value.text;
  return j;
}

std::vector<Setting> read_settings(const ParamRegistry& reg, const std::string& toml_text, const std::string& origin,
                                   const std::vector<std::string>& overrides, const std::vector<ListRegistry>& lists,
                                   std::vector<std::size_t>* list_sizes) {
  const toml::table file = parse_toml(toml_text, origin);
  std::map<std::string, Setting> set;
  std::vector<std::size_t> sizes(lists.size(), 0);
  const auto list_named = [&](const std::string& name) -> int {
    for (std::size_t l = 0; l < lists.size(); ++l)
      if (lists[l].name == name) return static_cast<int>(l);
    return -1;
  };
  // Walk every leaf; tables only group keys. A list of tables' entries are walked with
  // their own registry.
  struct Leaf {
    std::string key;
    const toml::node* node;
    int list = -1;
    std::size_t item = 0;
    std::string item_key;
  };
  std::vector<Leaf> leaves;
  std::function<void(const toml::table&, const std::string&, int, std::size_t)> walk =
      [&](const toml::table& t, const std::string& prefix, int list, std::size_t item) {
        for (const auto& [k, node] : t) {
          const std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
          if (const int l = prefix.empty() && list < 0 ? list_named(key) : -1; l >= 0) {
            const auto* arr = node.as_array();
            if (arr && arr->empty()) continue;  // `collective = []`: no entries
            if (!arr || !arr->is_array_of_tables())
              throw InputError(
                  fmt::format("{}: key '{}' must be a list of tables, written [[{}]]", place(origin, node), key, key));
            sizes[static_cast<std::size_t>(l)] = arr->size();
            for (std::size_t i = 0; i < arr->size(); ++i) walk(*(*arr)[i].as_table(), "", l, i);
            continue;
          }
          if (const auto* sub = node.as_table()) {
            // A table with no keys sets nothing, but a name no key has is a mistake.
            if (sub->empty()) {
              const ParamRegistry& r = list < 0 ? reg : *lists[static_cast<std::size_t>(list)].items;
              const auto it = r.all().lower_bound(key + ".");
              if (it == r.all().end() || it->first.compare(0, key.size() + 1, key + ".") != 0)
                throw InputError(fmt::format("{}: unknown table '{}'", place(origin, node), key));
            }
            walk(*sub, key, list, item);
          } else if (list < 0) leaves.push_back({key, &node, -1, 0, {}});
          else
            leaves.push_back({key, &node, list, item,
                              fmt::format("{}.{}.{}", lists[static_cast<std::size_t>(list)].name, item, key)});
        }
      };
  walk(file, "", -1, 0);
  for (const Leaf& leaf : leaves) {
    const std::string where = place(origin, *leaf.node);
    const ParamRegistry& r = leaf.list < 0 ? reg : *lists[static_cast<std::size_t>(leaf.list)].items;
    const ParamSpec* s = r.find(leaf.key);
    const std::string shown = leaf.list < 0 ? leaf.key : leaf.item_key;
    if (!s) throw InputError(fmt::format("{}: unknown key '{}'{}", where, shown, suggestion(r, leaf.key, shown)));
    Setting st{s,         parse_value(*s, leaf_text(*s, *leaf.node, where, shown), where, shown),
               where,     leaf.list,
               leaf.item, leaf.item_key};
    set.insert_or_assign(shown, std::move(st));
  }
  for (const auto& o : overrides) {
    const auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0) throw InputError(fmt::format("--set '{}': expected key=value", o));
    const std::string key = o.substr(0, eq);
    const auto dot = key.find('.');
    if (const int l = dot == std::string::npos ? -1 : list_named(key.substr(0, dot)); l >= 0) {
      // "name.i.key": an entry the file declares.
      const auto dot2 = key.find('.', dot + 1);
      const std::string index = key.substr(dot + 1, dot2 == std::string::npos ? std::string::npos : dot2 - dot - 1);
      const std::size_t n = sizes[static_cast<std::size_t>(l)];
      const auto parsed = params::parse_integer(index);
      if (!parsed || *parsed < 0 || dot2 == std::string::npos)
        throw InputError(fmt::format("--set '{}': expected {}.N.KEY with N an entry number", key, key.substr(0, dot)));
      const auto i = static_cast<std::size_t>(*parsed);
      if (i >= n)
        throw InputError(fmt::format("--set '{}': the scenario has {} [[{}]] entries (numbered from 0)", key, n,
                                     key.substr(0, dot)));
      const ParamRegistry& r = *lists[static_cast<std::size_t>(l)].items;
      const std::string field = key.substr(dot2 + 1);
      const ParamSpec* s = r.find(field);
      if (!s) throw InputError(fmt::format("--set: unknown key '{}'{}", key, suggestion(r, field, key)));
      // Stored as the file's entries are ("collective.1.bytes", whatever "01" was written).
      const std::string canonical = fmt::format("{}.{}.{}", lists[static_cast<std::size_t>(l)].name, i, field);
      set.insert_or_assign(canonical,
                           Setting{s, parse_value(*s, o.substr(eq + 1), "--set", canonical), "--set", l, i, canonical});
      continue;
    }
    const ParamSpec* s = reg.find(key);
    if (!s) throw InputError(fmt::format("--set: unknown key '{}'{}", key, suggestion(reg, key)));
    set.insert_or_assign(key, Setting{s, parse_value(*s, o.substr(eq + 1), "--set", key), "--set", -1, 0, {}});
  }
  if (list_sizes) *list_sizes = sizes;
  std::vector<Setting> out;
  for (auto& [_, s] : set) out.push_back(std::move(s));
  return out;
}

const ParamSpec* find_key(const ParamRegistry& reg, const std::vector<ListRegistry>& lists, const std::string& key) {
  if (const ParamSpec* s = reg.find(key)) return s;
  for (const ListRegistry& l : lists) {
    if (key.size() <= l.name.size() + 1 || key.compare(0, l.name.size() + 1, l.name + ".") != 0) continue;
    const auto dot = key.find('.', l.name.size() + 1);
    if (dot == std::string::npos) return nullptr;
    const auto n = params::parse_integer(key.substr(l.name.size() + 1, dot - l.name.size() - 1));
    return n && *n >= 0 ? l.items->find(key.substr(dot + 1)) : nullptr;
  }
  return nullptr;
}

std::string read_text(const std::string& path) { return read_input(path, "scenario", kScenarioBytes); }

}  // namespace fabriclab::scenario
