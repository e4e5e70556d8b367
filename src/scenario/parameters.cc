#include "scenario/parameters.h"

#include <charconv>

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

std::string_view kind_name(ParamKind k) {
  switch (k) {
    case ParamKind::time: return "a time such as 10us";
    case ParamKind::bytes: return "a size such as 9KiB";
    case ParamKind::rate: return "a bit rate such as 100Gbps";
    case ParamKind::integer: return "an integer";
    case ParamKind::real: return "a number";
    case ParamKind::boolean: return "true or false";
    case ParamKind::text: return "a string";
    case ParamKind::choice: return "one of the listed choices";
  }
  return "?";
}

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

// Parses `text` as the parameter's kind and checks its range; `where` prefixes errors.
struct Parsed {
  std::string text;
  std::int64_t i = 0;
  double d = 0;
};

Parsed parse_value(const ParamSpec& s, const std::string& text, const std::string& where) {
  auto fail = [&](const std::string& why) -> Parsed {
    throw InputError(fmt::format("{}: key '{}': {}", where, s.key, why));
  };
  Parsed p{text};
  std::string wrong;  // why the text is not a value of this kind
  try {
    switch (s.kind) {
      case ParamKind::time: p.i = parse_time(text).ps(); p.text = to_string(Time::from_ps(p.i)); break;
      case ParamKind::bytes: p.i = parse_bytes(text).count(); p.text = to_string(Bytes::from_count(p.i)); break;
      case ParamKind::rate: p.i = parse_bit_rate(text).bps(); p.text = to_string(BitRate::from_bps(p.i)); break;
      case ParamKind::integer: {
        std::size_t used = 0;
        p.i = std::stoll(text, &used);
        if (used != text.size()) wrong = fmt::format("'{}' is not an integer", text);
        break;
      }
      case ParamKind::real: {
        std::size_t used = 0;
        p.d = std::stod(text, &used);
        if (used != text.size()) wrong = fmt::format("'{}' is not a number", text);
        break;
      }
      case ParamKind::boolean:
        if (text != "true" && text != "false") wrong = fmt::format("'{}' is not true or false", text);
        p.i = text == "true";
        break;
      case ParamKind::text: break;
      case ParamKind::choice:
        if (std::find(s.choices.begin(), s.choices.end(), text) == s.choices.end()) {
          std::string list;
          for (const auto& c : s.choices) list += (list.empty() ? "" : ", ") + c;
          wrong = fmt::format("'{}' is not one of: {}", text, list);
        }
        break;
    }
  } catch (const InputError& e) {
    wrong = e.what();  // the unit parsers' own message
  } catch (const std::exception&) {
    wrong = fmt::format("'{}' is not {}", text, kind_name(s.kind));
  }
  if (!wrong.empty()) return fail(wrong);
  auto bound = [&](const std::string& b) { return parse_value(ParamSpec{s.key, s.kind, "", "", "", "", s.choices}, b, "bound"); };
  const bool numeric = s.kind != ParamKind::text && s.kind != ParamKind::choice && s.kind != ParamKind::boolean;
  if (numeric) {
    auto value_of = [&](const Parsed& x) { return s.kind == ParamKind::real ? x.d : static_cast<double>(x.i); };
    if (!s.min.empty() && value_of(p) < value_of(bound(s.min)))
      return fail(fmt::format("{} is below the minimum {}", p.text, s.min));
    if (!s.max.empty() && value_of(p) > value_of(bound(s.max)))
      return fail(fmt::format("{} is above the maximum {}", p.text, s.max));
  }
  return p;
}

// A TOML leaf as the text parse_value expects, or an error naming its place.
std::string leaf_text(const ParamSpec& s, const toml::node& n, const std::string& where) {
  if (auto v = n.value<std::string>()) return *v;
  if (n.is_boolean()) return *n.value<bool>() ? "true" : "false";
  if (n.is_integer()) {
    if (s.kind == ParamKind::time || s.kind == ParamKind::bytes || s.kind == ParamKind::rate)
      throw InputError(fmt::format("{}: key '{}': a bare number has no unit; write {} as a string",
                                   where, s.key, kind_name(s.kind)));
    return std::to_string(*n.value<std::int64_t>());
  }
  if (n.is_floating_point()) {
    if (s.kind != ParamKind::real)
      throw InputError(fmt::format("{}: key '{}': expected {}", where, s.key, kind_name(s.kind)));
    std::ostringstream out;
    out.precision(17);
    out << *n.value<double>();
    return out.str();
  }
  throw InputError(fmt::format("{}: key '{}': expected {}", where, s.key, kind_name(s.kind)));
}

std::string place(const std::string& origin, const toml::node& n) {
  const auto& b = n.source().begin;
  return fmt::format("{}:{}:{}", origin, b.line, b.column);
}

}  // namespace

void ParamRegistry::declare(ParamSpec spec) {
  if (specs_.count(spec.key)) throw std::logic_error("parameter declared twice: " + spec.key);
  parse_value(spec, spec.default_value, "default");  // the default must be valid
  specs_.emplace(spec.key, std::move(spec));
}

const ParamSpec* ParamRegistry::find(const std::string& key) const {
  auto it = specs_.find(key);
  return it == specs_.end() ? nullptr : &it->second;
}

const Config::Value& Config::get(const std::string& key, ParamKind want) const {
  auto it = values_.find(key);
  if (it == values_.end()) throw std::logic_error("parameter not declared: " + key);
  const bool ok = it->second.kind == want ||
                  (want == ParamKind::text && it->second.kind == ParamKind::choice);
  if (!ok) throw std::logic_error("parameter read as the wrong kind: " + key);
  return it->second;
}

Time Config::time(const std::string& k) const { return Time::from_ps(get(k, ParamKind::time).i); }
Bytes Config::bytes(const std::string& k) const { return Bytes::from_count(get(k, ParamKind::bytes).i); }
BitRate Config::rate(const std::string& k) const { return BitRate::from_bps(get(k, ParamKind::rate).i); }
std::int64_t Config::integer(const std::string& k) const { return get(k, ParamKind::integer).i; }
double Config::real(const std::string& k) const { return get(k, ParamKind::real).d; }
bool Config::boolean(const std::string& k) const { return get(k, ParamKind::boolean).i != 0; }
const std::string& Config::text(const std::string& k) const { return get(k, ParamKind::text).text; }
const std::string& Config::shown(const std::string& k) const {
  auto it = values_.find(k);
  if (it == values_.end()) throw std::logic_error("parameter not declared: " + k);
  return it->second.text;
}
const std::string& Config::origin(const std::string& k) const {
  auto it = values_.find(k);
  if (it == values_.end()) throw std::logic_error("parameter not declared: " + k);
  return it->second.origin;
}

nlohmann::ordered_json Config::echo() const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [k, v] : values_) j[k] = v.text;
  return j;
}

Config resolve_text(const ParamRegistry& reg, const std::string& toml_text, const std::string& origin,
                    const std::vector<std::string>& overrides) {
  Config c;
  for (const auto& [k, s] : reg.all()) {
    const Parsed p = parse_value(s, s.default_value, "default");
    c.values_[k] = {s.kind, p.text, p.i, p.d, "default"};
  }
  toml::table file;
  try {
    file = toml::parse(toml_text, origin);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    throw InputError(fmt::format("{}:{}:{}: malformed TOML: {}", origin, b.line, b.column, e.description()));
  }
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
    const Parsed p = parse_value(*s, leaf_text(*s, *node, where), where);
    c.values_[key] = {s->kind, p.text, p.i, p.d, where};
  }
  for (const auto& o : overrides) {
    const auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError(fmt::format("--set '{}': expected key=value", o));
    const std::string key = o.substr(0, eq);
    const ParamSpec* s = reg.find(key);
    if (!s) throw InputError(fmt::format("--set: unknown key '{}'{}", key, suggestion(reg, key)));
    const Parsed p = parse_value(*s, o.substr(eq + 1), "--set");
    c.values_[key] = {s->kind, p.text, p.i, p.d, "--set"};
  }
  return c;
}

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

Config resolve(const ParamRegistry& reg, const std::string& path, const std::vector<std::string>& overrides) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open for reading", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return resolve_text(reg, ss.str(), path, overrides);
}

}  // namespace fabriclab::scenario
