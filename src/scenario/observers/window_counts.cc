#include "scenario/observers/window_counts.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "scenario/observers/ports_table.h"
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
  net_.snapshot_at(std::move(at));
}

namespace {

double gbps(std::uint64_t bytes, Time span) {
  return span > Time() ? static_cast<double>(bytes) * 8000.0 / static_cast<double>(span.ps()) : 0.0;
}

}  // namespace

WindowCounts::Result WindowCounts::result(Time end) const {
  // The network's snapshots are those of instants within the run (fabric/network.h).
  const auto& snaps = net_.snapshots();
  const bool from_start = span_.from == Time();
  const fabric::Network::Snapshot& to = snaps.back();
  Result r;
  r.cut = !to.taken;
  r.to = r.cut ? end : span_.to;
  r.from = std::min(span_.from, r.to);  // the run ended before FROM: an empty span
  const fabric::Network::Snapshot& last = r.cut ? net_.snapshot_at_end() : to;
  const bool from_taken = !from_start && snaps.front().taken;
  const fabric::Network::Snapshot& first = from_taken ? snaps.front() : last;
  for (std::size_t p = 0; p < last.ports.size(); ++p) {
    r.ports.push_back(from_start ? last.ports[p] : last.ports[p].since(first.ports[p]));
    // The most a queue held since FROM (the snapshot at FROM started it over); nothing
    // for a span the run never reached.
    r.ports.back().max_queue_bytes = from_start || from_taken ? last.ports[p].max_queue_bytes : 0;
  }
  // (A load's flows are added as the run goes: one added after a snapshot had delivered
  // nothing by then.)
  const auto at = [](const fabric::Network::Snapshot& s, std::size_t i) {
    return i < s.delivered.size() ? s.delivered[i] : 0;
  };
  for (std::size_t i = 0; i < net_.flows().size(); ++i)
    r.delivered.push_back(at(last, i) - (from_start ? 0 : at(first, i)));
  return r;
}

void WindowCounts::write(const std::filesystem::path& dir, const Result& r) const {
  std::string flows = "flow_id,src,dst,delivered_bytes,goodput_gbps\n";
  for (std::size_t i = 0; i < net_.flows().size(); ++i) {
    const auto& f = net_.flows()[i];
    flows += fmt::format("{},{},{},{},{}\n", i, net_.host(f.spec.src).name(), net_.host(f.spec.dst).name(),
                         r.delivered[i],
                         r.to > r.from ? fmt::format("{:.3f}", gbps(r.delivered[i], r.to - r.from)) : "");
  }
  write_file(dir / "ports_window.csv", ports_table(net_, r.ports));
  write_file(dir / "flows_window.csv", flows);
}

nlohmann::ordered_json WindowCounts::summary(const Result& r) {
  nlohmann::ordered_json j;
  j["from_ns"] = ns_text(r.from);
  j["to_ns"] = ns_text(r.to);
  j["cut_by_the_run_end"] = r.cut;
  fabric::PortCounters all;
  for (const auto& c : r.ports) all += c;
  for (const auto& f : fabric::port_counter_fields())
    j["ports"][std::string(f.name)] = f.time ? nlohmann::ordered_json(ns_text(Time::from_ps(f.value(all))))
                                             : nlohmann::ordered_json(f.value(all));
  std::uint64_t delivered = 0;
  for (std::uint64_t d : r.delivered) delivered += d;
  j["delivered_bytes"] = delivered;
  j["goodput_gbps"] = gbps(delivered, r.to - r.from);
  return j;
}

}  // namespace fabriclab::scenario
