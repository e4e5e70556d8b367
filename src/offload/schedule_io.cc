#include "offload/schedule_io.h"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <exception>
#include <fstream>
#include <iterator>
#include <limits>
#include <ostream>
#include <span>
#include <tuple>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/input.h"
#include "offload/json_fields.h"

namespace fabriclab::offload {

using json = nlohmann::ordered_json;
using detail::Ctx;

namespace {
constexpr const char* kFormat = "fabriclab.schedule/1";
}

std::vector<CounterId> rank_counter_ids(const Schedule& s) {
  std::vector<char> used(s.counter_count(), 0);
  for (const Op& o : s.ops())
    for (CounterId c : {o.trigger, o.completion, o.target})
      if (c != kNoCounter) used[static_cast<std::size_t>(c)] = 1;
  std::vector<CounterId> ids(s.counter_count(), kNoCounter);
  std::vector<CounterId> next(static_cast<std::size_t>(s.ranks()), 0);
  for (std::size_t c = 0; c < ids.size(); ++c)
    if (used[c]) ids[c] = next[static_cast<std::size_t>(s.counter_owner(static_cast<CounterId>(c)))]++;
  return ids;
}

void write_schedule_json(const Schedule& s, std::ostream& out) {
  const std::vector<CounterId> cid = rank_counter_ids(s);
  fmt::memory_buffer buf;
  const auto flush = [&] {
    out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
    buf.clear();
  };
  const auto field = [&](const char* name, const json& v, bool last = false) {
    fmt::format_to(std::back_inserter(buf), " \"{}\": {}{}\n", name, v.dump(), last ? "" : ",");
  };
  buf.append(std::string_view("{\n"));
  field("format", kFormat);
  field("collective", s.collective);
  field("algorithm", s.algorithm);
  field("ranks", s.ranks());
  field("strategy", s.strategy);
  field("bytes", s.bytes);
  field("datatype", s.datatype);
  field("root", s.root);
  field("ordered_channels", s.ordered_channels);
  if (!s.layout.empty()) {
    json pro = json::array();
    for (const HostCopy& c : s.layout.prologue)
      pro.push_back({{"rank", c.rank}, {"src_offset", c.src_offset}, {"dst_offset", c.dst_offset}, {"bytes", c.bytes}});
    field("layout", {{"window_bytes", s.layout.window_bytes},
                     {"input_offset", s.layout.input_offset},
                     {"output_offset", s.layout.output_offset},
                     {"prologue", std::move(pro)}});
  }
  // The operations one per line, written as they are read: a schedule of millions of
  // operations never becomes a document in memory.
  buf.append(std::string_view(" \"ops\": [\n"));
  auto it = std::back_inserter(buf);
  const auto counter = [&](CounterId c) {
    if (c == kNoCounter) fmt::format_to(it, FMT_COMPILE("null"));
    else fmt::format_to(it, FMT_COMPILE("{}"), cid[static_cast<std::size_t>(c)]);
  };
  const auto list = [&](std::span<const OpId> ids) {
    buf.push_back('[');
    for (std::size_t k = 0; k < ids.size(); ++k) fmt::format_to(it, FMT_COMPILE("{}{}"), k ? ", " : "", ids[k]);
    buf.push_back(']');
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto id = static_cast<OpId>(i);
    const Op& o = s.op(id);
    fmt::format_to(it, FMT_COMPILE("  {{\"id\": {}, \"rank\": {}, \"kind\": \"{}\""), id, o.rank, to_string(o.kind));
    if (is_data_op(o.kind) || o.kind == OpKind::arrival) {
      fmt::format_to(it, FMT_COMPILE(", \"peer\": {}, \"bytes\": {}"), o.peer, o.bytes);
      if (!s.layout.empty()) {
        if (o.kind != OpKind::arrival) fmt::format_to(it, FMT_COMPILE(", \"src_offset\": {}"), o.src_offset);
        fmt::format_to(it, FMT_COMPILE(", \"dst_offset\": {}"), o.dst_offset);
      }
    }
    if (o.kind == OpKind::cntr_add) {
      fmt::format_to(it, FMT_COMPILE(", \"target\": "));
      counter(o.target);
      fmt::format_to(it, FMT_COMPILE(", \"add\": {}"), o.add);
    }
    fmt::format_to(it, FMT_COMPILE(", \"deps\": "));
    list(s.deps(id));
    if (!s.after(id).empty()) {
      fmt::format_to(it, FMT_COMPILE(", \"after\": "));
      list(s.after(id));
    }
    if (o.trigger == kNoCounter) {
      fmt::format_to(it, FMT_COMPILE(", \"trigger\": null"));
    } else {
      fmt::format_to(it, FMT_COMPILE(", \"trigger\": {{\"counter\": "));
      counter(o.trigger);
      fmt::format_to(it, FMT_COMPILE(", \"threshold\": {}}}"), o.threshold);
    }
    fmt::format_to(it, FMT_COMPILE(", \"completion\": "));
    counter(o.completion);
    if (o.relay) fmt::format_to(it, FMT_COMPILE(", \"relay\": true"));
    fmt::format_to(it, FMT_COMPILE("}}{}\n"), i + 1 < s.size() ? "," : "");
    if (buf.size() > (1u << 20)) flush();
  }
  buf.append(std::string_view(" ],\n"));
  const auto c = s.counter_summary();
  field("counters", {{"per_rank", c.per_rank}, {"max", c.max}, {"total", c.total}}, true);
  buf.append(std::string_view("}\n"));
  flush();
}

nlohmann::ordered_json schedule_to_json(const Schedule& s) {
  std::ostringstream out;
  write_schedule_json(s, out);
  return json::parse(out.str());
}

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

namespace detail {
namespace {

// The first place the text passes a bound: a level opened past kMaxJsonDepth, a string
// longer than kMaxJsonStringBytes (at its opening quote), or an array or object's element
// past kMaxJsonElements (at the comma before it).
struct PastBound {
  enum Kind { none, depth, string, elements };
  std::size_t at = std::string::npos;
  Kind kind = none;
};

// One pass over the text, as the parser will read it. A raw control character in a string
// or a closing bracket with nothing open ends the scan: the text is malformed there, which
// the parser reports.
PastBound first_past_bound(const std::string& text) {
  int depth = 0;
  std::array<std::int64_t, kMaxJsonDepth + 1> commas{};  // of each open level, [1] the outermost
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      const std::size_t open = i;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (static_cast<unsigned char>(text[i]) < 0x20) return {};
        if (text[i] == '\\') ++i;
        if (i - open > kMaxJsonStringBytes) return {open, PastBound::string};
      }
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return {i, PastBound::depth};
      commas[static_cast<std::size_t>(depth)] = 0;
    } else if (c == ']' || c == '}') {
      if (--depth < 0) return {};  // a closer too many: the parser reports it there
    } else if (c == ',' && depth > 0 && ++commas[static_cast<std::size_t>(depth)] >= kMaxJsonElements) {
      return {i, PastBound::elements};
    }
  }
  return {};
}

}  // namespace

nlohmann::ordered_json parse_json(const std::string& text, const std::string& origin,
                                  const json::parser_callback_t& callback) {
  // Checked before the parse: the parser keeps its levels on the heap, but copying or
  // comparing a value recurses, and a string is whole in memory before a callback sees it.
  if (const PastBound past = first_past_bound(text); past.kind != PastBound::none) {
    const auto [line, col] = line_column(text, past.at);
    switch (past.kind) {
      case PastBound::string:
        throw InputError(fmt::format("{}:{}:{}: a string longer than {} bytes (no schedule or program needs one)",
                                     origin, line, col, kMaxJsonStringBytes));
      case PastBound::elements:
        throw InputError(fmt::format("{}:{}:{}: an array or object of more than {} elements (the most operations "
                                     "the planner builds)",
                                     origin, line, col, kMaxJsonElements));
      case PastBound::depth:
      case PastBound::none: break;
    }
    throw InputError(fmt::format("{}:{}:{}: objects and arrays nested deeper than {} levels (no schedule or "
                                 "program nests more than 4)",
                                 origin, line, col, kMaxJsonDepth));
  }
  try {
    return callback ? json::parse(text, callback) : json::parse(text);
  } catch (const json::parse_error& e) {
    // e.byte is 1-based and points just past the offending character.
    const auto [line, col] = line_column(text, e.byte > 0 ? e.byte - 1 : 0);
    std::string msg = e.what();
    auto pos = msg.find("syntax error");
    throw InputError(fmt::format("{}:{}:{}: malformed JSON: {}", origin, line, col,
                                 pos == std::string::npos ? msg : msg.substr(pos)));
  } catch (const json::out_of_range& e) {
    // A number beyond what a double holds ("1e400"): the library names the token, not
    // where it is; its first place in the text is where the parser met it.
    const std::string msg = e.what();
    const auto a = msg.find('\''), b = a == std::string::npos ? a : msg.find('\'', a + 1);
    const std::string token = b == std::string::npos ? std::string() : msg.substr(a + 1, b - a - 1);
    const std::size_t at = token.empty() ? std::string::npos : text.find(token);
    if (at == std::string::npos) throw InputError(fmt::format("{}: a number is out of range: {}", origin, msg));
    const auto [line, col] = line_column(text, at);
    throw InputError(fmt::format("{}:{}:{}: the number {} is out of range", origin, line, col, token));
  }
}
}  // namespace detail

namespace {

constexpr std::size_t kUnknown = std::numeric_limits<std::size_t>::max();

// An operation's dependences name operations of the file (`total` of them).
void check_ids(const Ctx& c, std::span<const OpId> deps, std::span<const OpId> after, std::size_t total) {
  if (deps.size() > total) c.fail("field 'deps' lists more ids than there are operations");
  for (OpId d : deps)
    if (static_cast<std::size_t>(d) >= total) c.fail(fmt::format("dep {} is not an operation id", d));
  for (OpId d : after)
    if (static_cast<std::size_t>(d) >= total) c.fail(fmt::format("'after' {} is not an operation id", d));
}

// A schedule file read in parts: the header operations are checked against (format,
// ranks, layout), each operation as it comes, then what needs them all. A file is read
// as a stream when its header precedes "ops" (as the writer writes it): each operation
// is converted as soon as it is parsed and its JSON dropped, so a file of millions of
// operations never becomes a document in memory.
class ScheduleReader {
 public:
  explicit ScheduleReader(std::string origin) : origin_(std::move(origin)) {}

  void read_header(const json& j);
  // Operation i; with the number of operations known (not kUnknown) its ids are checked
  // at once, else by finish().
  void read_op(const json& e, std::size_t i, std::size_t total);
  // The metadata, ids against the count, counters, validation, the "counters" summary.
  Schedule finish(const json& j, std::size_t total);
  // The ids read with the count unknown against the file's count: those of the
  // operations read, and, if reading one failed after its ids were read, its own (so an
  // id error the document would have reported first is reported first).
  void check_deferred_ids(std::size_t total) const;

 private:
  std::string origin_;
  Schedule s_;
  std::vector<std::pair<Rank, CounterId>> named_;  // (rank, the file's counter id)
  // Ids read with the count unknown: whether any were, the largest, the longest 'deps'
  // (nothing to check when both fit the count); and whether those of the operation being
  // read (deps_, after_; operation s_.size()) were read before it failed.
  bool ids_unchecked_ = false;
  std::size_t max_id_ = 0, max_deps_ = 0;
  bool ids_read_ = false;
  std::vector<OpId> deps_, after_;
};

void ScheduleReader::read_header(const json& j) {
  Ctx top{origin_};
  if (top.string(top.need(j, "format"), "format") != kFormat)
    top.fail(fmt::format("field 'format' must be \"{}\"", kFormat));
  const auto ranks = static_cast<Rank>(top.bounded(top.need(j, "ranks"), "ranks", 1, detail::kMaxRanks));
  s_ = Schedule(ranks);
  Schedule& s = s_;
  if (j.contains("layout")) {
    Ctx c{fmt::format("{}: layout", origin_)};
    const json& l = j.at("layout");
    if (!l.is_object()) c.fail("must be an object");
    c.only(l, {"window_bytes", "input_offset", "output_offset", "prologue"});
    DataLayout& d = s.layout;
    d.window_bytes = c.bounded(c.need(l, "window_bytes"), "window_bytes", 1, detail::kMaxBytes);
    // An offset is where a block starts, and a block may be empty (a reduce_scatter rank
    // whose share of a short vector is 0 bytes, placed where the previous block ends):
    // [window_bytes, +0) lies inside the window as a 0-byte transfer at window_bytes does.
    // The blocks' sizes follow from the collective (exec/reference.h); exec checks that
    // each block fits.
    for (const char* key : {"input_offset", "output_offset"}) {
      const json& a = c.need(l, key);
      if (!a.is_array() || a.size() != static_cast<std::size_t>(ranks))
        c.fail(fmt::format("field '{}' must list one offset per rank ({})", key, ranks));
      auto& v = std::string_view(key) == "input_offset" ? d.input_offset : d.output_offset;
      for (const json& x : a) v.push_back(c.bounded(x, key, 0, d.window_bytes));
    }
    if (l.contains("prologue")) {
      const json& pro = l.at("prologue");
      if (!pro.is_array()) c.fail("field 'prologue' must be an array");
      for (const json& x : pro) {
        if (!x.is_object()) c.fail("a prologue entry must be an object");
        c.only(x, {"rank", "src_offset", "dst_offset", "bytes"});
        HostCopy h;
        h.rank = static_cast<Rank>(c.bounded(c.need(x, "rank"), "prologue.rank", 0, ranks - 1));
        h.bytes = c.bounded(c.need(x, "bytes"), "prologue.bytes", 0, d.window_bytes);
        h.src_offset = c.bounded(c.need(x, "src_offset"), "prologue.src_offset", 0, d.window_bytes - h.bytes);
        h.dst_offset = c.bounded(c.need(x, "dst_offset"), "prologue.dst_offset", 0, d.window_bytes - h.bytes);
        d.prologue.push_back(h);
      }
    }
  }
}

void ScheduleReader::read_op(const json& e, std::size_t i, std::size_t total) {
  Schedule& s = s_;
  const Rank ranks = s.ranks();
  Ctx c{fmt::format("{}: ops[{}]", origin_, i)};
  ids_read_ = false;
  if (!e.is_object()) c.fail("an operation must be an object");
  c.only(e, {"id", "rank", "kind", "peer", "bytes", "src_offset", "dst_offset", "target", "add", "deps", "after",
             "trigger", "completion", "relay"});
  const auto id = c.small(c.need(e, "id"), "id");
  if (static_cast<std::size_t>(id) != i)
    c.fail(fmt::format("id {} out of order: operations must be listed with ids 0, 1, 2, ... "
                       "(expected {})",
                       id, i));
  c.where = fmt::format("{}: operation {}", origin_, id);
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
    o.bytes = c.bounded(c.need(e, "bytes"), "bytes", 0, detail::kMaxBytes);
  }
  if (!s.layout.empty() && (is_data_op(o.kind) || o.kind == OpKind::arrival)) {
    // With a layout every transfer says where it reads and writes, inside the window.
    const std::int64_t last = s.layout.window_bytes - o.bytes;
    if (last < 0) c.fail(fmt::format("{} bytes do not fit the {}-byte window", o.bytes, s.layout.window_bytes));
    if (o.kind != OpKind::arrival) o.src_offset = c.bounded(c.need(e, "src_offset"), "src_offset", 0, last);
    o.dst_offset = c.bounded(c.need(e, "dst_offset"), "dst_offset", 0, last);
  } else if (e.contains("src_offset") || e.contains("dst_offset")) {
    c.fail("'src_offset' and 'dst_offset' need a top-level 'layout' and belong to transfers");
  }
  if (o.kind == OpKind::cntr_add) {
    o.target = c.counter(c.need(e, "target"), "target");
    o.add = c.bounded(c.need(e, "add"), "add", 0, detail::kMaxCount);
  } else if (e.contains("target") || e.contains("add")) {
    c.fail("only a cntr_add has 'target' and 'add'");
  }
  deps_ = c.ids(c.need(e, "deps"), "deps");
  after_ = e.contains("after") ? c.ids(e.at("after"), "after") : std::vector<OpId>{};
  if (total == kUnknown) {
    ids_unchecked_ = ids_read_ = true;
    max_deps_ = std::max(max_deps_, deps_.size());
    for (const auto* ids : {&deps_, &after_})
      for (OpId d : *ids) max_id_ = std::max(max_id_, static_cast<std::size_t>(d));
  } else {
    check_ids(c, deps_, after_, total);
  }
  const json& trig = c.need(e, "trigger");
  if (!trig.is_null()) {
    if (!trig.is_object()) c.fail("field 'trigger' must be null or {\"counter\": C, \"threshold\": T}");
    c.only(trig, {"counter", "threshold"});
    o.trigger = c.counter(c.need(trig, "counter"), "trigger.counter");
    if (o.trigger == kNoCounter) c.fail("field 'trigger.counter' must be a counter id");
    o.threshold = c.bounded(c.need(trig, "threshold"), "trigger.threshold", 0, detail::kMaxCount);
  }
  o.completion = c.counter(c.need(e, "completion"), "completion");
  if (o.completion != kNoCounter && !(is_data_op(o.kind) || o.kind == OpKind::arrival))
    c.fail(fmt::format("a {} has no completion counter (use null)", kind));
  if (e.contains("relay")) o.relay = c.boolean(e.at("relay"), "relay");
  o.counted = !(is_data_op(o.kind) && o.completion == kNoCounter);
  // Counter ids are the op's rank's (triggered-ops.md sections 1 and 8): keep the
  // file's ids for now; they become schedule-wide ids once every op has been read.
  for (CounterId cid : {o.trigger, o.completion, o.target})
    if (cid != kNoCounter) named_.emplace_back(o.rank, cid);
  s.add(o, deps_, after_);
  ids_read_ = false;
}

void ScheduleReader::check_deferred_ids(std::size_t total) const {
  if (!ids_unchecked_ || (max_id_ < total && max_deps_ <= total)) return;
  // Some id fails: find the first operation naming one.
  for (std::size_t i = 0; i < s_.size(); ++i) {
    const auto id = static_cast<OpId>(i);
    check_ids(Ctx{fmt::format("{}: operation {}", origin_, i)}, s_.deps(id), s_.after(id), total);
  }
  if (ids_read_) check_ids(Ctx{fmt::format("{}: operation {}", origin_, s_.size())}, deps_, after_, total);
}

Schedule ScheduleReader::finish(const json& j, std::size_t total) {
  Schedule& s = s_;
  const std::string& origin = origin_;
  Ctx top{origin};
  if (j.contains("collective")) s.collective = top.string(j.at("collective"), "collective");
  if (j.contains("algorithm")) s.algorithm = top.string(j.at("algorithm"), "algorithm");
  if (j.contains("strategy")) s.strategy = top.string(j.at("strategy"), "strategy");
  if (j.contains("datatype")) s.datatype = top.string(j.at("datatype"), "datatype");
  if (j.contains("bytes")) s.bytes = top.bounded(j.at("bytes"), "bytes", 0, detail::kMaxBytes);
  if (j.contains("root")) s.root = top.small(j.at("root"), "root");
  if (j.contains("ordered_channels")) s.ordered_channels = top.boolean(j.at("ordered_channels"), "ordered_channels");
  check_deferred_ids(total);
  std::vector<std::pair<Rank, CounterId>>& named = named_;
  // Schedule-wide ids in (rank, file id) order, so that each rank's counters keep the
  // file's order and a file numbered from 0 on every rank is written back as it was.
  std::sort(named.begin(), named.end());
  named.erase(std::unique(named.begin(), named.end()), named.end());
  {
    std::vector<Rank> owners(named.size());
    std::vector<CounterId> names(named.size());
    for (std::size_t c = 0; c < named.size(); ++c) std::tie(owners[c], names[c]) = named[c];
    s.set_counters(std::move(owners), std::move(names));
  }
  auto global = [&](Rank r, CounterId c) {
    if (c == kNoCounter) return kNoCounter;
    return static_cast<CounterId>(std::lower_bound(named.begin(), named.end(), std::pair{r, c}) - named.begin());
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    Op& o = s.op(static_cast<OpId>(i));
    o.trigger = global(o.rank, o.trigger);
    o.completion = global(o.rank, o.completion);
    o.target = global(o.rank, o.target);
  }
  validate(s, false);
  if (!s.layout.empty())
    for (std::size_t i = 0; i < s.size(); ++i) {
      const Op& a = s.op(static_cast<OpId>(i));
      if (a.kind != OpKind::arrival) continue;
      const Op& send = s.op(s.deps(static_cast<OpId>(i))[0]);
      if (a.dst_offset != send.dst_offset || a.bytes != send.bytes)
        Ctx{fmt::format("{}: operation {}", origin, i)}.fail(
            fmt::format("the arrival lands {} bytes at {} but its send writes {} bytes at {}", a.bytes, a.dst_offset,
                        send.bytes, send.dst_offset));
    }

  if (j.contains("counters")) {
    Ctx c{fmt::format("{}: counters", origin)};
    const json& cj = j.at("counters");
    if (!cj.is_object()) c.fail("must be an object");
    c.only(cj, {"per_rank", "max", "total"});
    const auto sum = s.counter_summary();
    if (cj.contains("per_rank") && cj.at("per_rank") != json(sum.per_rank)) {
      // The first difference, not the arrays (a large schedule's run to megabytes).
      const json& pr = cj.at("per_rank");
      if (!pr.is_array()) c.fail("per_rank must be an array of one count per rank");
      if (pr.size() != sum.per_rank.size())
        c.fail(fmt::format("per_rank has {} entries for {} ranks", pr.size(), sum.per_rank.size()));
      for (std::size_t r = 0; r < pr.size(); ++r)
        if (pr[r] != json(sum.per_rank[r])) {
          std::string given = pr[r].dump();
          if (given.size() > 40) given = given.substr(0, 40) + "...";
          c.fail(fmt::format("per_rank[{}] = {} does not match the {} counter(s) rank {}'s operations name", r, given,
                             sum.per_rank[r], r));
        }
    }
    if (cj.contains("max") && cj.at("max") != json(sum.max))
      c.fail(fmt::format("max {} does not match {}", cj.at("max").dump(), sum.max));
    if (cj.contains("total") && cj.at("total") != json(sum.total))
      c.fail(fmt::format("total {} does not match {}", cj.at("total").dump(), sum.total));
  }
  return std::move(s_);
}

const std::initializer_list<const char*> kTopFields = {"format",           "collective", "algorithm", "ranks",
                                                       "strategy",         "bytes",      "datatype",  "root",
                                                       "ordered_channels", "layout",     "ops",       "counters"};

// The file as one document: every part read from it.
Schedule read_document(const json& j, const std::string& origin) {
  Ctx top{origin};
  if (!j.is_object()) top.fail("the top level must be an object");
  top.only(j, kTopFields);
  ScheduleReader reader(origin);
  reader.read_header(j);
  const json& ops = top.need(j, "ops");
  if (!ops.is_array()) top.fail("field 'ops' must be an array");
  for (std::size_t i = 0; i < ops.size(); ++i) reader.read_op(ops[i], i, ops.size());
  return reader.finish(j, ops.size());
}

// A schedule read as one document (its "format" and "ranks" do not precede "ops") must be
// small enough to be one in memory.
void whole_document(const std::string& text, const std::string& origin) {
  if (text.size() > kJsonDocumentBytes)
    Ctx{origin}.fail(
        fmt::format("a schedule of more than {} MiB must give \"format\" and \"ranks\" before \"ops\" (as fabriclab "
                    "writes it), to be read as it streams",
                    kJsonDocumentBytes >> 20));
}

}  // namespace

Schedule schedule_from_json_text(const std::string& text, const std::string& origin, ReadPath* path) {
  // Parsed once with a callback: the top-level values before "ops" are kept as the
  // header; when it has "format" and "ranks", each operation is read as its object ends
  // and dropped from the document. A file that names "format", "ranks" or "layout" after
  // "ops" (legal JSON, not what the writer writes) is read again as one document; so an
  // error met while streaming waits for the end of the parse (a later "layout" may
  // explain it).
  using Event = json::parse_event_t;
  ScheduleReader reader(origin);
  json header = json::object();
  std::string key;  // the top-level key being read
  bool in_ops = false, streaming = false, reread = false, ops_array = false;
  std::size_t count = 0;      // elements of "ops", counted on past an error
  std::exception_ptr error;   // the first error met while streaming
  bool error_in_ops = false;  // met reading an operation (else the header)
  const auto callback = [&](int depth, Event event, json& parsed) -> bool {
    if (depth == 1 && event == Event::key) {
      key = parsed.get<std::string>();
      if (in_ops) {
        reread |= streaming && (key == "format" || key == "ranks" || key == "layout" || key == "ops");
      } else if (key == "ops") {
        in_ops = true;
        streaming = header.contains("format") && header.contains("ranks");
        if (!streaming) whole_document(text, origin);
        if (streaming) try {
            reader.read_header(header);
          } catch (const InputError&) {
            error = std::current_exception();
          }
      }
      return true;
    }
    if (!in_ops && depth == 1 && (event == Event::value || event == Event::object_end || event == Event::array_end)) {
      header[key] = parsed;
      return true;
    }
    if (depth == 1 && event == Event::array_start && key == "ops") ops_array = true;
    // An element of the "ops" array (a key at depth 2 belongs to an "ops" that is not one).
    if (depth != 2 || !streaming || !ops_array || event == Event::object_start || event == Event::array_start ||
        key != "ops")
      return true;
    const std::size_t i = count++;
    if (error || reread) return false;
    try {
      if (event != Event::object_end) Ctx{fmt::format("{}: ops[{}]", origin, i)}.fail("an operation must be an object");
      reader.read_op(parsed, i, kUnknown);
    } catch (const InputError&) {
      error = std::current_exception();
      error_in_ops = true;
    }
    return false;
  };
  const json j = detail::parse_json(text, origin, callback);
  if (reread) whole_document(text, origin);
  if (path) *path = streaming && !reread ? ReadPath::streamed : ReadPath::document;
  if (!streaming || reread) return read_document(reread ? detail::parse_json(text, origin) : j, origin);
  // What the document path checks before the header and the operations comes first.
  Ctx top{origin};
  top.only(j, kTopFields);
  if (error && !error_in_ops) std::rethrow_exception(error);
  if (!j.at("ops").is_array()) top.fail("field 'ops' must be an array");
  if (error) {
    reader.check_deferred_ids(count);
    std::rethrow_exception(error);
  }
  return reader.finish(j, count);
}

std::string read_text_file(const std::string& path) { return read_input(path, "schedule file", kScheduleBytes); }

Schedule read_schedule_json(const std::string& path) { return schedule_from_json_text(read_text_file(path), path); }

void write_schedule_json(const Schedule& s, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw InputError(fmt::format("{}: cannot open for writing", path));
  write_schedule_json(s, out);
  out.flush();
  if (!out) throw InputError(fmt::format("{}: write failed", path));
}

void write_schedule_dot(const Schedule& s, std::ostream& out) {
  // Counters as the JSON writer numbers them: c0 in rank 1's cluster is rank 1's counter 0.
  const std::vector<CounterId> cid = rank_counter_ids(s);
  auto c = [&](CounterId k) { return k == kNoCounter ? kNoCounter : cid[static_cast<std::size_t>(k)]; };
  out << "digraph schedule {\n  rankdir=TB; node [shape=box, fontname=\"monospace\", fontsize=10];\n";
  const auto by_rank = s.ops_by_rank();
  for (Rank r = 0; r < s.ranks(); ++r) {
    out << fmt::format("  subgraph cluster_rank{} {{\n    label=\"rank {}\";\n", r, r);
    for (OpId id : by_rank[static_cast<std::size_t>(r)]) {
      const Op& o = s.op(id);
      std::string label = fmt::format("{}: {}", id, to_string(o.kind));
      if (is_data_op(o.kind)) label += fmt::format(" -> {} ({} B)", o.peer, o.bytes);
      if (o.kind == OpKind::arrival) label += fmt::format(" <- {}", o.peer);
      if (o.kind == OpKind::cntr_add) label += fmt::format(" c{} += {}", c(o.target), o.add);
      if (o.trigger != kNoCounter) label += fmt::format("\\nwhen c{} >= {}", c(o.trigger), o.threshold);
      if (o.completion != kNoCounter) label += fmt::format("\\ncompletes c{}", c(o.completion));
      const char* style = o.kind == OpKind::arrival     ? ", style=rounded"
                          : o.kind == OpKind::host_wait ? ", style=bold"
                          : o.relay                     ? ", style=dashed"
                                                        : "";
      out << fmt::format("    op{} [label=\"{}\"{}];\n", id, label, style);
    }
    out << "  }\n";
  }
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto id = static_cast<OpId>(i);
    const bool arrival = s.op(id).kind == OpKind::arrival;
    for (OpId d : s.deps(id)) out << fmt::format("  op{} -> op{}{};\n", d, id, arrival ? " [style=dashed]" : "");
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
