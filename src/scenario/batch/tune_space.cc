// fabriclab tune --space FILE: the search written down once (scenario/batch/tune.h).
#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/input.h"
#include "scenario/batch/tune.h"
#include "scenario/parameters.h"
#include "scenario/toml_input.h"

namespace fabriclab::scenario {

namespace {

std::string place(const std::string& file, const toml::node& n) {
  const auto& b = n.source().begin;
  return fmt::format("{}:{}:{}", file, b.line, b.column);
}

// A scalar as the text an option would carry; nothing for a table or an array.
std::optional<std::string> scalar_text(const toml::node& n) {
  if (auto s = n.value<std::string>()) return *s;
  if (n.is_integer()) return std::to_string(*n.value<std::int64_t>());
  if (n.is_floating_point()) return plain_decimal(*n.value<double>());
  if (n.is_boolean()) return std::string(*n.value<bool>() ? "true" : "false");
  return std::nullopt;
}

// A dimension and where it was written (the file's order is the dimensions' order).
struct Entry {
  std::uint32_t line, column;
  std::string text;
};

// `[param]`'s leaves, their keys joined with dots, as --param texts (checked here, so
// that an error names the entry's place).
void read_params(const std::string& file, const toml::table& t, const std::string& prefix, std::vector<Entry>& out) {
  for (const auto& [k, node] : t) {
    const std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    if (const auto* sub = node.as_table()) {
      read_params(file, *sub, key, out);
      continue;
    }
    std::string value;
    if (const auto* list = node.as_array()) {
      std::vector<std::string> items;
      bool comma = false;
      for (const auto& item : *list) {
        const auto text = scalar_text(item);
        if (!text)
          throw InputError(
              fmt::format("{}: param '{}': a choice must be a string, a number or a boolean", place(file, item), key));
        comma = comma || text->find(',') != std::string::npos;
        items.push_back(*text);
      }
      // Choices that are lists themselves ("1,1,2,2") are separated by ';'.
      value = fmt::format("{}", fmt::join(items, comma ? ";" : ","));
    } else if (const auto s = node.value<std::string>()) {
      value = *s;
    } else {
      throw InputError(fmt::format("{}: param '{}': expected \"LO..HI[:log|:int]\" or a list of choices [A, B, ...]",
                                   place(file, node), key));
    }
    const std::string text = key + "=" + value;
    try {
      (void)parse_tune_param(text);
    } catch (const InputError& e) {
      std::string why = e.what();
      // The place says where instead of the option.
      for (const char* option : {"--param: ", "--param "})
        if (why.rfind(option, 0) == 0) why = why.substr(std::string_view(option).size());
      throw InputError(fmt::format("{}: {}", place(file, node), why));
    }
    out.push_back({node.source().begin.line, node.source().begin.column, text});
  }
}

// maximize / minimize / constraints: a string or a list of strings, checked as the option.
void read_terms(const std::string& file, const toml::node& n, const std::string& key, std::vector<std::string>& out) {
  std::vector<const toml::node*> items;
  if (const auto* list = n.as_array())
    for (const auto& item : *list) items.push_back(&item);
  else items.push_back(&n);
  for (const toml::node* item : items) {
    const auto s = item->value<std::string>();
    if (!s) throw InputError(fmt::format("{}: {}: expected a string or a list of strings", place(file, *item), key));
    try {
      if (key == "constraints") (void)parse_tune_constraint(*s);
      else (void)parse_objective_term(*s, key == "maximize" ? 1 : -1);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: {}", place(file, *item), e.what()));
    }
    out.push_back(*s);
  }
}

}  // namespace

TuneOptions with_space_file(TuneOptions opt) {
  if (opt.space.empty()) return opt;
  const std::string text = read_input(opt.space, "search space", kScenarioBytes);
  const toml::table file = parse_toml(text, opt.space);
  std::vector<Entry> params;
  for (const auto& [k, node] : file) {
    const std::string key(k.str());
    if (key == "param") {
      const auto* t = node.as_table();
      if (!t) throw InputError(fmt::format("{}: param: expected a table ([param])", place(opt.space, node)));
      read_params(opt.space, *t, "", params);
    } else if (key == "maximize") {
      read_terms(opt.space, node, key, opt.maximize);
    } else if (key == "minimize") {
      read_terms(opt.space, node, key, opt.minimize);
    } else if (key == "constraints") {
      read_terms(opt.space, node, key, opt.constraints);
    } else {
      throw InputError(fmt::format("{}: unknown key '{}' (expected param, maximize, minimize, constraints)",
                                   place(opt.space, node), key));
    }
  }
  if (params.empty() && opt.params.empty())
    throw InputError(fmt::format("{}: no [param] entries, and no --param: nothing to search", opt.space));
  // A key the command line gives too is refused here, where the file's line is known.
  for (const Entry& e : params) {
    const std::string key = e.text.substr(0, e.text.find('='));
    for (const std::string& given : opt.params)
      if (given.substr(0, given.find('=')) == key)
        throw InputError(fmt::format("{}:{}:{}: {}: given by --param too", opt.space, e.line, e.column, key));
  }
  std::sort(params.begin(), params.end(),
            [](const Entry& a, const Entry& b) { return std::tie(a.line, a.column) < std::tie(b.line, b.column); });
  for (const Entry& e : params) opt.params.push_back(e.text);
  return opt;
}

}  // namespace fabriclab::scenario
