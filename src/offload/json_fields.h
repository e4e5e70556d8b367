// Field access for the JSON readers (schedule and program files): every accessor names
// the place of a bad value ("file.json: operation 3: field 'peer' must be an integer").
// Internal to src/offload.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "offload/collectives.h"
#include "offload/schedule.h"

namespace fabriclab::offload::detail {

using json = nlohmann::ordered_json;

// Limits on what files may say. Counters are 32-bit signed on the NIC (triggered-ops.md
// section 7), so thresholds and adds stay below 2^31; ids and ranks below 2^20 keep the
// per-counter and per-rank tables small; bytes are at most 1 TiB.
inline constexpr std::int64_t kMaxCounterId = (1 << 20) - 1;
inline constexpr std::int64_t kMaxRanks = 1 << 20;
inline constexpr std::int64_t kMaxCount = (std::int64_t{1} << 31) - 1;
inline constexpr std::int64_t kMaxBytes = std::int64_t{1} << 40;

struct Ctx {
  std::string where;  // "file.json: operation 3"
  [[noreturn]] void fail(const std::string& what) const { throw InputError(fmt::format("{}: {}", where, what)); }
  const json& need(const json& o, const char* key) const {
    auto it = o.find(key);
    if (it == o.end()) fail(fmt::format("missing field '{}'", key));
    return *it;
  }
  std::int64_t integer(const json& v, const char* key) const {
    if (!v.is_number_integer()) fail(fmt::format("field '{}' must be an integer", key));
    return v.get<std::int64_t>();
  }
  std::int32_t small(const json& v, const char* key, std::int64_t lo = 0) const {
    const auto x = integer(v, key);
    if (x < lo || x > INT32_MAX) fail(fmt::format("field '{}' = {} is out of range", key, x));
    return static_cast<std::int32_t>(x);
  }
  std::string string(const json& v, const char* key) const {
    if (!v.is_string()) fail(fmt::format("field '{}' must be a string", key));
    return v.get<std::string>();
  }
  std::vector<OpId> ids(const json& v, const char* key) const {
    if (!v.is_array()) fail(fmt::format("field '{}' must be an array of operation ids", key));
    std::vector<OpId> out;
    for (const auto& x : v) out.push_back(small(x, key));
    return out;
  }
  // An integer in [lo, hi].
  std::int64_t bounded(const json& v, const char* key, std::int64_t lo, std::int64_t hi) const {
    const auto x = integer(v, key);
    if (x < lo || x > hi) fail(fmt::format("field '{}' = {} is outside {}..{}", key, x, lo, hi));
    return x;
  }
  CounterId counter(const json& v, const char* key) const {
    if (v.is_null()) return kNoCounter;
    return static_cast<CounterId>(bounded(v, key, 0, kMaxCounterId));
  }
  bool boolean(const json& v, const char* key) const {
    if (!v.is_boolean()) fail(fmt::format("field '{}' must be true or false", key));
    return v.get<bool>();
  }
  void only(const json& o, std::initializer_list<const char*> keys) const {
    for (auto it = o.begin(); it != o.end(); ++it) {
      bool known = false;
      for (const char* k : keys) known |= it.key() == k;
      if (!known) {
        std::string list;
        for (const char* k : keys) list += (list.empty() ? "" : ", ") + std::string(k);
        fail(fmt::format("unknown field '{}' (expected: {})", it.key(), list));
      }
    }
  }
};

// How deep a schedule or program file may nest objects and arrays. Their formats need
// four levels (document, "ops", an operation, its "deps"); the bound keeps a hostile file
// from driving the recursive parts of the JSON library (copying, comparing a value)
// into the stack's end.
inline constexpr int kMaxJsonDepth = 64;
// The longest string (a key or a value, as written, escapes included) a schedule or
// program file may hold: theirs are names ("allreduce", "b12") of a few bytes.
inline constexpr std::size_t kMaxJsonStringBytes = 4096;
// The most elements an array or object may hold: the most operations the planner builds
// (a schedule's "ops"; nothing else in a schedule or program is longer).
inline constexpr std::int64_t kMaxJsonElements = kMaxBuildOps;

// Parses JSON text (through `callback`, when given: json::parse's); a syntax error, an
// object or array nested deeper than kMaxJsonDepth, a string longer than
// kMaxJsonStringBytes or an array or object of more than kMaxJsonElements elements names
// origin:line:column. The bounds are checked on the text before it is parsed.
json parse_json(const std::string& text, const std::string& origin, const json::parser_callback_t& callback = nullptr);

}  // namespace fabriclab::offload::detail
