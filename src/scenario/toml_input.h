// Every TOML file fabriclab reads (scenarios, tune search spaces) goes through
// parse_toml: bounds checked on the text first, then toml++, with either's complaint as
// an InputError at file:line:column. toml++ bounds the nesting of values (256) but not
// the length of an array, nor the depth of a dotted key or table header: `[a.a.a. ... .a]` 100 000 parts deep makes
// a table 100 000 levels deep, which toml++ (and any walk over it) recurses through
// until the stack runs out. The bounds are far above any file fabriclab's keys allow.
//
//   const toml::table file = parse_toml(read_input(path, "scenario", kScenarioBytes), path);
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <toml++/toml.h>

namespace fabriclab::scenario {

// Dotted parts of one key or table header (fabriclab's deepest key has 3).
inline constexpr std::size_t kTomlMaxKeyDepth = 64;
// Bytes of one key or table header as written, quotes and dots included.
inline constexpr std::size_t kTomlMaxKeyBytes = 1024;
// Table headers ([name] and [[name]]) in one file.
inline constexpr std::size_t kTomlMaxTables = 65536;
// Elements of one array or inline table (a search space's list of choices is the longest
// fabriclab reads; lists of tables are headers, bounded above).
inline constexpr std::size_t kTomlMaxElements = 65536;

// InputError "origin:line:column: ..." naming the bound, past any of the four.
void check_toml_bounds(std::string_view text, const std::string& origin);

// check_toml_bounds, then toml::parse; malformed TOML is an InputError at its place.
toml::table parse_toml(std::string_view text, const std::string& origin);

}  // namespace fabriclab::scenario
