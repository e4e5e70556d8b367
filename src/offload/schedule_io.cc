#include "offload/schedule_io.h"

#include <fmt/format.h>

#include <fstream>
#include <set>
#include <sstream>

#include "core/error.h"

namespace fabriclab::offload {

using json = nlohmann::ordered_json;

namespace {
constexpr const char* kFormat = "fabriclab.schedule/1";
}

nlohmann::ordered_json schedule_to_json(const Schedule& s) {
  json j;
  j["format"] = kFormat;
  j["collective"] = s.collective;
  j["algorithm"] = s.algorithm;
  j["ranks"] = s.ranks();
  j["strategy"] = s.strategy;
  j["bytes"] = s.bytes;
  j["datatype"] = s.datatype;
  j["root"] = s.root;
  j["ordered_channels"] = s.ordered_channels;
  json ops = json::array();
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto id = static_cast<OpId>(i);
    const Op& o = s.op(id);
    json e;
    e["id"] = id;
    e["rank"] = o.rank;
    e["kind"] = std::string(to_string(o.kind));
    if (is_data_op(o.kind) || o.kind == OpKind::arrival) {
      e["peer"] = o.peer;
      e["bytes"] = o.bytes;
    }
    if (o.kind == OpKind::cntr_add) {
      e["target"] = o.target == kNoCounter ? json(nullptr) : json(o.target);
      e["add"] = o.add;
    }
    e["deps"] = std::vector<OpId>(s.deps(id).begin(), s.deps(id).end());
    if (!s.after(id).empty()) e["after"] = std::vector<OpId>(s.after(id).begin(), s.after(id).end());
    if (o.trigger == kNoCounter)
      e["trigger"] = nullptr;
    else
      e["trigger"] = {{"counter", o.trigger}, {"threshold", o.threshold}};
    e["completion"] = o.completion == kNoCounter ? json(nullptr) : json(o.completion);
    if (o.relay) e["relay"] = true;
    ops.push_back(std::move(e));
  }
  j["ops"] = std::move(ops);
  const auto c = s.counter_summary();
  j["counters"] = {{"per_rank", c.per_rank}, {"max", c.max}, {"total", c.total}};
  return j;
}

namespace {

// Access helpers that name the place of a bad value.
struct Ctx {
  std::string where;  // "file.json: operation 3"
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(fmt::format("{}: {}", where, what));
  }
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
  CounterId counter(const json& v, const char* key) const {
    if (v.is_null()) return kNoCounter;
    return small(v, key);
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

}  // namespace

std::pair<std::size_t, std::size_t> line_column(const std::string& text, std::size_t offset) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

Schedule schedule_from_json_text(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    // e.byte is 1-based and points just past the offending character.
    const auto [line, col] = line_column(text, e.byte > 0 ? e.byte - 1 : 0);
    std::string msg = e.what();
    auto pos = msg.find("syntax error");
    throw InputError(fmt::format("{}:{}:{}: malformed JSON: {}", origin, line, col,
                                 pos == std::string::npos ? msg : msg.substr(pos)));
  }
  Ctx top{origin};
  if (!j.is_object()) top.fail("the top level must be an object");
  top.only(j, {"format", "collective", "algorithm", "ranks", "strategy", "bytes", "datatype",
               "root", "ordered_channels", "ops", "counters"});
  if (top.string(top.need(j, "format"), "format") != kFormat)
    top.fail(fmt::format("field 'format' must be \"{}\"", kFormat));
  const Rank ranks = top.small(top.need(j, "ranks"), "ranks", 1);
  Schedule s(ranks);
  if (j.contains("collective")) s.collective = top.string(j["collective"], "collective");
  if (j.contains("algorithm")) s.algorithm = top.string(j["algorithm"], "algorithm");
  if (j.contains("strategy")) s.strategy = top.string(j["strategy"], "strategy");
  if (j.contains("datatype")) s.datatype = top.string(j["datatype"], "datatype");
  if (j.contains("bytes")) s.bytes = top.integer(j["bytes"], "bytes");
  if (j.contains("root")) s.root = top.small(j["root"], "root");
  if (j.contains("ordered_channels")) {
    if (!j["ordered_channels"].is_boolean()) top.fail("field 'ordered_channels' must be true or false");
    s.ordered_channels = j["ordered_channels"].get<bool>();
  }
  const json& ops = top.need(j, "ops");
  if (!ops.is_array()) top.fail("field 'ops' must be an array");

  std::vector<Rank> owner;
  std::vector<OpId> first_use;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    Ctx c{fmt::format("{}: ops[{}]", origin, i)};
    const json& e = ops[i];
    if (!e.is_object()) c.fail("an operation must be an object");
    c.only(e, {"id", "rank", "kind", "peer", "bytes", "target", "add", "deps", "after",
               "trigger", "completion", "relay"});
    const auto id = c.small(c.need(e, "id"), "id");
    if (static_cast<std::size_t>(id) != i)
      c.fail(fmt::format("id {} out of order: operations must be listed with ids 0, 1, 2, ... "
                         "(expected {})",
                         id, i));
    c.where = fmt::format("{}: operation {}", origin, id);
    Op o;
    const std::string kind = c.string(c.need(e, "kind"), "kind");
    const auto k = parse_op_kind(kind);
    if (!k)
      c.fail(fmt::format("unknown kind '{}' (expected put, get, atomic, arrival, cntr_add or "
                         "host_wait)",
                         kind));
    o.kind = *k;
    o.rank = c.small(c.need(e, "rank"), "rank");
    if (o.rank >= ranks) c.fail(fmt::format("rank {} is outside 0..{}", o.rank, ranks - 1));
    if (is_data_op(o.kind) || o.kind == OpKind::arrival) {
      o.peer = c.small(c.need(e, "peer"), "peer");
      o.bytes = c.integer(c.need(e, "bytes"), "bytes");
    }
    if (o.kind == OpKind::cntr_add) {
      o.target = c.counter(c.need(e, "target"), "target");
      o.add = c.integer(c.need(e, "add"), "add");
    } else if (e.contains("target") || e.contains("add")) {
      c.fail("only a cntr_add has 'target' and 'add'");
    }
    const auto deps = c.ids(c.need(e, "deps"), "deps");
    const auto after = e.contains("after") ? c.ids(e["after"], "after") : std::vector<OpId>{};
    for (OpId d : deps)
      if (static_cast<std::size_t>(d) >= ops.size()) c.fail(fmt::format("dep {} is not an operation id", d));
    for (OpId d : after)
      if (static_cast<std::size_t>(d) >= ops.size()) c.fail(fmt::format("'after' {} is not an operation id", d));
    const json& trig = c.need(e, "trigger");
    if (!trig.is_null()) {
      if (!trig.is_object()) c.fail("field 'trigger' must be null or {\"counter\": C, \"threshold\": T}");
      c.only(trig, {"counter", "threshold"});
      o.trigger = c.small(c.need(trig, "counter"), "trigger.counter");
      o.threshold = c.integer(c.need(trig, "threshold"), "trigger.threshold");
    }
    o.completion = c.counter(c.need(e, "completion"), "completion");
    if (o.completion != kNoCounter && !(is_data_op(o.kind) || o.kind == OpKind::arrival))
      c.fail(fmt::format("a {} has no completion counter (use null)", kind));
    if (e.contains("relay")) {
      if (!e["relay"].is_boolean()) c.fail("field 'relay' must be true or false");
      o.relay = e["relay"].get<bool>();
    }
    o.counted = !(is_data_op(o.kind) && o.completion == kNoCounter);
    // Counters are schedule-wide names; the first operation to name one makes it its
    // rank's.
    for (CounterId cid : {o.trigger, o.completion, o.target}) {
      if (cid == kNoCounter) continue;
      const auto ci = static_cast<std::size_t>(cid);
      if (ci >= owner.size()) {
        owner.resize(ci + 1, kNoRank);
        first_use.resize(ci + 1, -1);
      }
      if (owner[ci] == kNoRank) {
        owner[ci] = o.rank;
        first_use[ci] = id;
      } else if (owner[ci] != o.rank) {
        c.fail(fmt::format("counter {} belongs to rank {} (first named by operation {}), not "
                           "to rank {}: counters live on one NIC",
                           cid, owner[ci], first_use[ci], o.rank));
      }
    }
    s.add(o, deps, after);
  }
  s.set_counter_owners(owner);
  validate(s, false);

  if (j.contains("counters")) {
    Ctx c{fmt::format("{}: counters", origin)};
    const json& cj = j["counters"];
    if (!cj.is_object()) c.fail("must be an object");
    c.only(cj, {"per_rank", "max", "total"});
    const auto sum = s.counter_summary();
    if (cj.contains("per_rank") && cj["per_rank"] != json(sum.per_rank))
      c.fail(fmt::format("per_rank {} does not match the counters the operations name ({})",
                         cj["per_rank"].dump(), json(sum.per_rank).dump()));
    if (cj.contains("max") && cj["max"] != json(sum.max))
      c.fail(fmt::format("max {} does not match {}", cj["max"].dump(), sum.max));
    if (cj.contains("total") && cj["total"] != json(sum.total))
      c.fail(fmt::format("total {} does not match {}", cj["total"].dump(), sum.total));
  }
  return s;
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open for reading", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Schedule read_schedule_json(const std::string& path) {
  return schedule_from_json_text(read_text_file(path), path);
}

void write_schedule_json(const Schedule& s, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw InputError(fmt::format("{}: cannot open for writing", path));
  out << schedule_to_json(s).dump(1) << '\n';
  if (!out) throw InputError(fmt::format("{}: write failed", path));
}

void write_schedule_dot(const Schedule& s, std::ostream& out) {
  out << "digraph schedule {\n  rankdir=TB; node [shape=box, fontname=\"monospace\", fontsize=10];\n";
  const auto by_rank = s.ops_by_rank();
  for (Rank r = 0; r < s.ranks(); ++r) {
    out << fmt::format("  subgraph cluster_rank{} {{\n    label=\"rank {}\";\n", r, r);
    for (OpId id : by_rank[static_cast<std::size_t>(r)]) {
      const Op& o = s.op(id);
      std::string label = fmt::format("{}: {}", id, to_string(o.kind));
      if (is_data_op(o.kind)) label += fmt::format(" -> {} ({} B)", o.peer, o.bytes);
      if (o.kind == OpKind::arrival) label += fmt::format(" <- {}", o.peer);
      if (o.kind == OpKind::cntr_add) label += fmt::format(" c{} += {}", o.target, o.add);
      if (o.trigger != kNoCounter) label += fmt::format("\\nwhen c{} >= {}", o.trigger, o.threshold);
      if (o.completion != kNoCounter) label += fmt::format("\\ncompletes c{}", o.completion);
      const char* style = o.kind == OpKind::arrival ? ", style=rounded"
                          : o.kind == OpKind::host_wait ? ", style=bold"
                          : o.relay ? ", style=dashed"
                                    : "";
      out << fmt::format("    op{} [label=\"{}\"{}];\n", id, label, style);
    }
    out << "  }\n";
  }
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto id = static_cast<OpId>(i);
    const bool arrival = s.op(id).kind == OpKind::arrival;
    for (OpId d : s.deps(id))
      out << fmt::format("  op{} -> op{}{};\n", d, id, arrival ? " [style=dashed]" : "");
    for (OpId d : s.after(id)) out << fmt::format("  op{} -> op{} [style=dotted];\n", d, id);
  }
  out << "}\n";
}

void write_schedule_dot(const Schedule& s, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw InputError(fmt::format("{}: cannot open for writing", path));
  write_schedule_dot(s, out);
}

}  // namespace fabriclab::offload
