#include "scenario/parameters.h"


#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <toml++/toml.h>

#include "core/error.h"

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

std::string suggestion(const ParamRegistry& reg, const std::string& key) {
  std::string best;
  std::size_t best_d = 4;  // only close misspellings
  for (const auto& [k, _] : reg.all()) {
    const std::size_t d = distance(k, key);
    if (d < best_d) best_d = d, best = k;
  }
  return best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best);
}

// `text` parsed for `s`; `where` and the key prefix errors.
params::Value parse_value(const params::Spec& s, const std::string& text, const std::string& where) {
  try {
    return params::parse(s, text);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: key '{}': {}", where, s.key, e.what()));
  }
}

// A TOML leaf as the text parse_value expects, or an error naming its place.
std::string leaf_text(const params::Spec& s, const toml::node& n, const std::string& where) {
  if (auto v = n.value<std::string>()) return *v;
  if (n.is_boolean()) return *n.value<bool>() ? "true" : "false";
  if (n.is_integer()) {
    if (s.kind == ParamKind::time || s.kind == ParamKind::bytes || s.kind == ParamKind::rate)
      throw InputError(fmt::format("{}: key '{}': a bare number has no unit; write {} as a string",
                                   where, s.key, params::describe(s.kind)));
    return std::to_string(*n.value<std::int64_t>());
  }
  if (n.is_floating_point()) {
    if (s.kind != ParamKind::real)
      throw InputError(fmt::format("{}: key '{}': expected {}", where, s.key, params::describe(s.kind)));
    std::ostringstream out;
    out.precision(17);
    out << *n.value<double>();
    return out.str();
  }
  throw InputError(fmt::format("{}: key '{}': expected {}", where, s.key, params::describe(s.kind)));
}

std::string place(const std::string& origin, const toml::node& n) {
  const auto& b = n.source().begin;
  return fmt::format("{}:{}:{}", origin, b.line, b.column);
}

}  // namespace

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

nlohmann::ordered_json Config::echo() const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [k, v] : values_) j[k] = v.value.text;
  return j;
}

std::vector<Setting> read_settings(const ParamRegistry& reg, const std::string& toml_text, const std::string& origin,
                                   const std::vector<std::string>& overrides) {
  toml::table file;
  try {
    file = toml::parse(toml_text, origin);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    throw InputError(fmt::format("{}:{}:{}: malformed TOML: {}", origin, b.line, b.column, e.description()));
  }
  std::map<std::string, Setting> set;
  // Walk every leaf; tables only group keys.
  std::vector<std::pair<std::string, const toml::node*>> leaves;
  std::function<void(const toml::table&, const std::string&)> walk = [&](const toml::table& t, const std::string& prefix) {
    for (const auto& [k, node] : t) {
      const std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
      if (const auto* sub = node.as_table())
        walk(*sub, key);
      else
        leaves.emplace_back(key, &node);
    }
  };
  walk(file, "");
  for (const auto& [key, node] : leaves) {
    const std::string where = place(origin, *node);
    const ParamSpec* s = reg.find(key);
    if (!s) throw InputError(fmt::format("{}: unknown key '{}'{}", where, key, suggestion(reg, key)));
    set.insert_or_assign(key, Setting{s, parse_value(*s, leaf_text(*s, *node, where), where), where});
  }
  for (const auto& o : overrides) {
    const auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0) throw InputError(fmt::format("--set '{}': expected key=value", o));
    const std::string key = o.substr(0, eq);
    const ParamSpec* s = reg.find(key);
    if (!s) throw InputError(fmt::format("--set: unknown key '{}'{}", key, suggestion(reg, key)));
    set.insert_or_assign(key, Setting{s, parse_value(*s, o.substr(eq + 1), "--set"), "--set"});
  }
  std::vector<Setting> out;
  for (auto& [_, s] : set) out.push_back(std::move(s));
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open for reading", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace fabriclab::scenario
