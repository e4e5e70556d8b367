#include "scenario/observers/window_counts.h"

#include <fmt/format.h>

#include "core/error.h"
#include "scenario/report/files.h"

namespace fabriclab::scenario {

TimeSpan parse_time_span(const std::string& text) {
  const auto dots = text.find("..");
  const auto bad = [&](const std::string& why) {
    return InputError(fmt::format("'{}': {} (expected \"FROM..TO\", two times with FROM before TO, e.g. "
                                  "\"150ms..300ms\")",
                                  text, why));
  };
  if (dots == std::string::npos || text.find("..", dots + 2) != std::string::npos) throw bad("not FROM..TO");
  TimeSpan s;
  try {
    s.from = parse_time(text.substr(0, dots));
    s.to = parse_time(text.substr(dots + 2));
  } catch (const InputError& e) {
    throw bad(e.what());
  }
  if (!(s.from < s.to)) throw bad("FROM is not before TO");
  return s;
}

WindowCounts::WindowCounts(fabric::Network& net, TimeSpan span) : net_(net), span_(span) {
  std::vector<Time> at;
  if (span_.from > Time()) at.push_back(span_.from);
  at.push_back(span_.to);
  net_.observe_at(std::move(at), [this](Time t) { (t == span_.to ? to_ : from_) = read_now(t); });
}

WindowCounts::Reading WindowCounts::read_now(Time t) const {
  Reading r;
  r.taken = true;
  for (const fabric::Node* n : net_.nodes())
    for (std::size_t i = 0; i < n->port_count(); ++i) r.ports.push_back(fabric::Network::port_counters(*n, i, t));
  for (const auto& f : net_.flows()) r.delivered.push_back(f.delivered);
  return r;
}

// A reading counts if its instant is within the run (one taken past the run's last event,
// when nothing was left to happen, is the run's end state read later).
Time WindowCounts::effective_from(Time end) const {
  return span_.from <= end ? span_.from : end;  // the run ended before FROM: empty
}

Time WindowCounts::effective_to(Time end) const { return to_.taken && span_.to <= end ? span_.to : end; }

WindowCounts::Reading WindowCounts::first(const Reading& last, Time end) const {
  if (span_.from == Time()) return Reading{};  // zeros: the span starts with the run
  return from_.taken && span_.from <= end ? from_ : last;
}

WindowCounts::Reading WindowCounts::last(Time end) const { return to_.taken && span_.to <= end ? to_ : read_now(end); }

namespace {

// The fields over the span: all but max_queue_bytes (a maximum, not a count).
bool counted(const fabric::PortCounterField& f) { return f.name != "max_queue_bytes"; }

struct Span {
  std::vector<std::vector<std::int64_t>> ports;  // per port, per counted field
  std::vector<std::uint64_t> delivered;          // per flow
};

// b - a, field by field (a empty: zeros, a span from the run's start).
Span difference(const fabric::Network& net, const std::vector<fabric::PortCounters>& a,
                const std::vector<fabric::PortCounters>& b, const std::vector<std::uint64_t>& da,
                const std::vector<std::uint64_t>& db) {
  Span s;
  for (std::size_t p = 0; p < b.size(); ++p) {
    std::vector<std::int64_t> row;
    for (const auto& f : fabric::port_counter_fields())
      if (counted(f)) row.push_back(f.value(b[p]) - (a.empty() ? 0 : f.value(a[p])));
    s.ports.push_back(std::move(row));
  }
  for (std::size_t i = 0; i < net.flows().size(); ++i) s.delivered.push_back(db[i] - (da.empty() ? 0 : da[i]));
  return s;
}

}  // namespace

void WindowCounts::write(const std::filesystem::path& dir, Time end) const {
  const Reading b = last(end), a = first(b, end);
  const Span s = difference(net_, a.ports, b.ports, a.delivered, b.delivered);
  std::string ports = "node,port";
  std::vector<bool> is_time;
  for (const auto& f : fabric::port_counter_fields())
    if (counted(f)) {
      ports += fmt::format(",{}", f.name);
      is_time.push_back(f.time);
    }
  ports += "\n";
  std::size_t k = 0;
  for (const fabric::Node* n : net_.nodes())
    for (std::size_t i = 0; i < n->port_count(); ++i, ++k) {
      ports += fmt::format("{},{}", n->name(), i);
      for (std::size_t c = 0; c < s.ports[k].size(); ++c)
        ports += is_time[c] ? fmt::format(",{}", ns_text(Time::from_ps(s.ports[k][c])))
                            : fmt::format(",{}", s.ports[k][c]);
      ports += "\n";
    }
  const std::int64_t span_ps = (effective_to(end) - effective_from(end)).ps();
  std::string flows = "flow_id,src,dst,delivered_bytes,goodput_gbps\n";
  for (std::size_t i = 0; i < net_.flows().size(); ++i) {
    const auto& f = net_.flows()[i];
    const std::string gbps = span_ps > 0 ? fmt::format("{:.3f}", static_cast<double>(s.delivered[i]) * 8000.0 /
                                                                     static_cast<double>(span_ps))
                                         : "";
    flows += fmt::format("{},{},{},{},{}\n", i, net_.host(f.spec.src).name(), net_.host(f.spec.dst).name(),
                         s.delivered[i], gbps);
  }
  write_file(dir / "ports_window.csv", ports);
  write_file(dir / "flows_window.csv", flows);
}

nlohmann::ordered_json WindowCounts::summary(Time end) const {
  const Reading b = last(end), a = first(b, end);
  const Span s = difference(net_, a.ports, b.ports, a.delivered, b.delivered);
  nlohmann::ordered_json j;
  j["from_ns"] = ns_text(effective_from(end));
  j["to_ns"] = ns_text(effective_to(end));
  j["cut_by_the_run_end"] = !(to_.taken && span_.to <= end);
  std::size_t c = 0;
  for (const auto& f : fabric::port_counter_fields()) {
    if (!counted(f)) continue;
    std::int64_t sum = 0;
    for (const auto& row : s.ports) sum += row[c];
    j["ports"][std::string(f.name)] = f.time ? nlohmann::ordered_json(ns_text(Time::from_ps(sum)))
                                             : nlohmann::ordered_json(sum);
    ++c;
  }
  std::uint64_t delivered = 0;
  for (std::uint64_t d : s.delivered) delivered += d;
  j["delivered_bytes"] = delivered;
  const std::int64_t span_ps = (effective_to(end) - effective_from(end)).ps();
  j["goodput_gbps"] = span_ps > 0 ? static_cast<double>(delivered) * 8000.0 / static_cast<double>(span_ps) : 0.0;
  return j;
}

}  // namespace fabriclab::scenario
