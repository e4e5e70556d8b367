#include "scenario/fabric/ns3_import.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string_view>

#include "core/error.h"
#include "core/input.h"
#include "core/units.h"
#include "fabric/topology.h"
#include "scenario/report/files.h"

namespace fabriclab::scenario {
namespace {

namespace fs = std::filesystem;

// Every key scratch/third.cc reads, with the number of values it takes (-1: a map, "n"
// then n pairs).
const std::map<std::string, int, std::less<>>& known_keys() {
  static const std::map<std::string, int, std::less<>> keys = {{"ENABLE_QCN", 1},
                                                               {"USE_DYNAMIC_PFC_THRESHOLD", 1},
                                                               {"CLAMP_TARGET_RATE", 1},
                                                               {"L2_BACK_TO_ZERO", 1},
                                                               {"VAR_WIN", 1},
                                                               {"FAST_REACT", 1},
                                                               {"RATE_BOUND", 1},
                                                               {"MULTI_RATE", 1},
                                                               {"SAMPLE_FEEDBACK", 1},
                                                               {"PAUSE_TIME", 1},
                                                               {"PACKET_PAYLOAD_SIZE", 1},
                                                               {"L2_CHUNK_SIZE", 1},
                                                               {"L2_ACK_INTERVAL", 1},
                                                               {"SIMULATOR_STOP_TIME", 1},
                                                               {"CC_MODE", 1},
                                                               {"ALPHA_RESUME_INTERVAL", 1},
                                                               {"RATE_DECREASE_INTERVAL", 1},
                                                               {"RP_TIMER", 1},
                                                               {"EWMA_GAIN", 1},
                                                               {"FAST_RECOVERY_TIMES", 1},
                                                               {"RATE_AI", 1},
                                                               {"RATE_HAI", 1},
                                                               {"MIN_RATE", 1},
                                                               {"DCTCP_RATE_AI", 1},
                                                               {"ERROR_RATE_PER_LINK", 1},
                                                               {"HAS_WIN", 1},
                                                               {"GLOBAL_T", 1},
                                                               {"MI_THRESH", 1},
                                                               {"U_TARGET", 1},
                                                               {"INT_MULTI", 1},
                                                               {"ACK_HIGH_PRIO", 1},
                                                               {"LINK_DOWN", 3},
                                                               {"ENABLE_TRACE", 1},
                                                               {"KMAX_MAP", -1},
                                                               {"KMIN_MAP", -1},
                                                               {"PMAX_MAP", -1},
                                                               {"BUFFER_SIZE", 1},
                                                               {"QLEN_MON_START", 1},
                                                               {"QLEN_MON_END", 1},
                                                               {"PINT_LOG_BASE", 1},
                                                               {"PINT_PROB", 1},
                                                               {"DATA_RATE", 1},
                                                               {"LINK_DELAY", 1},
                                                               {"TOPOLOGY_FILE", 1},
                                                               {"FLOW_FILE", 1},
                                                               {"TRACE_FILE", 1},
                                                               {"TRACE_OUTPUT_FILE", 1},
                                                               {"FCT_OUTPUT_FILE", 1},
                                                               {"PFC_OUTPUT_FILE", 1},
                                                               {"QLEN_MON_FILE", 1}};
  return keys;
}

std::vector<std::string> words_of(const std::string& line) {
  std::vector<std::string> w;
  std::istringstream in(line);
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

// config.txt read: each key's values and line; typed reads name the key and line.
class Config {
 public:
  explicit Config(std::string path) : path_(std::move(path)) {
    std::istringstream in(read_input(path_, "ns-3 config", kScenarioBytes));
    std::size_t n = 0;
    for (std::string line; std::getline(in, line);) {
      ++n;
      // A comment: a line from '#', or the rest of a line from '{' (the model's
      // config_doc.txt writes "KEY VALUE {what it means}"; third.cc skips those words).
      std::vector<std::string> w = words_of(line.substr(0, line.find('{')));
      if (w.empty() || w[0][0] == '#') continue;
      const auto k = known_keys().find(w[0]);
      if (k == known_keys().end())
        throw InputError(fmt::format("{}:{}: '{}' is not a key of the HPCC ns-3 model's config.txt (scratch/third.cc)",
                                     path_, n, w[0]));
      if (const auto seen = entries_.find(w[0]); seen != entries_.end())
        throw InputError(fmt::format("{}:{}: {} is given again (first on line {})", path_, n, w[0], seen->second.line));
      std::vector<std::string> values(w.begin() + 1, w.end());
      std::size_t want = static_cast<std::size_t>(k->second);
      if (k->second < 0) {  // "n r1 v1 ... rn vn"
        std::uint64_t pairs = 0;
        const char* end = values.empty() ? nullptr : values[0].data() + values[0].size();
        if (values.empty() || std::from_chars(values[0].data(), end, pairs).ptr != end || pairs > 64)
          throw InputError(fmt::format("{}:{}: {}: expected the number of rates first (0..64), then that many "
                                       "'RATE VALUE' pairs",
                                       path_, n, w[0]));
        want = 1 + 2 * pairs;
      }
      if (values.size() != want)
        throw InputError(fmt::format("{}:{}: {}: expected {} value(s), got {}", path_, n, w[0], want, values.size()));
      entries_[w[0]] = {n, std::move(values), false};
    }
  }

  const std::string& path() const { return path_; }
  // Asking marks a key read: what is never asked for is listed as not used.
  bool has(std::string_view key) const {
    const auto e = entries_.find(key);
    if (e == entries_.end()) return false;
    e->second.read = true;
    return true;
  }
  // The keys given and never asked for, in the file's order.
  std::vector<std::string> unread() const {
    std::vector<std::pair<std::size_t, std::string>> v;
    for (const auto& [key, e] : entries_)
      if (!e.read) v.emplace_back(e.line, key);
    std::sort(v.begin(), v.end());
    std::vector<std::string> out;
    for (auto& [line, key] : v) out.push_back(std::move(key));
    return out;
  }
  std::string where(std::string_view key) const {
    const auto e = entries_.find(key);
    return e == entries_.end() ? fmt::format("{}: {} (not given)", path_, key)
                               : fmt::format("{}:{}: {}", path_, e->second.line, key);
  }
  const std::vector<std::string>& values(std::string_view key) const { return entries_.find(key)->second.values; }
  const std::string& text(std::string_view key) const { return values(key)[0]; }

  std::uint64_t whole(std::string_view key, std::uint64_t fallback, std::uint64_t max = UINT32_MAX) const {
    if (!has(key)) return fallback;
    return whole_of(text(key), key, max);
  }
  std::uint64_t whole_of(const std::string& v, std::string_view key, std::uint64_t max = UINT32_MAX) const {
    std::uint64_t x = 0;
    const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec != std::errc() || p != v.data() + v.size() || x > max)
      throw InputError(fmt::format("{}: expected a whole number 0..{}, got '{}'", where(key), max, v));
    return x;
  }
  double real(std::string_view key, double fallback) const {
    if (!has(key)) return fallback;
    return real_of(text(key), key);
  }
  double real_of(const std::string& v, std::string_view key) const {
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(x) || x < 0)
      throw InputError(fmt::format("{}: expected a number >= 0, got '{}'", where(key), v));
    return x;
  }
  BitRate rate(std::string_view key, const char* fallback) const {
    try {
      return fabric::parse_ns3_data_rate(has(key) ? text(key) : fallback);
    } catch (const InputError& e) {
      throw InputError(where(key) + ": " + e.what());
    }
  }
  // A decimal number of `unit` ("s", "us") exactly as written.
  Time time(std::string_view key, const std::string& text, const char* unit) const {
    try {
      return parse_time(text + unit);
    } catch (const InputError&) {
      throw InputError(
          fmt::format("{}: expected a decimal number of {} (to the ps), got '{}'", where(key), unit, text));
    }
  }

 private:
  struct Entry {
    std::size_t line = 0;
    std::vector<std::string> values;
    mutable bool read = false;
  };
  std::string path_;
  std::map<std::string, Entry, std::less<>> entries_;
};

// A scenario key and its TOML value (already quoted when a string), with the config key
// it comes from.
struct Setting {
  std::string key, value, from;
};

std::string toml_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string mbps(BitRate r) { return toml_string(decimal_in(r, "Mbps") + "Mbps"); }

// A probability written as a decimal ("0.2", "1", "0.015") as a percent, exactly ("20",
// "100", "1.5"); an exponent goes through a double.
std::string percent(const std::string& p) {
  if (p.find_first_not_of("0123456789.") != std::string::npos || std::count(p.begin(), p.end(), '.') > 1)
    return fmt::format("{}", std::strtod(p.c_str(), nullptr) * 100);
  const std::size_t dot = p.find('.');
  std::string whole = p.substr(0, dot), frac = dot == std::string::npos ? "" : p.substr(dot + 1);
  frac.resize(std::max<std::size_t>(frac.size(), 2), '0');
  whole += frac.substr(0, 2);
  frac = frac.substr(2);
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  whole.erase(0, std::min(whole.find_first_not_of('0'), whole.size() - 1));
  return frac.empty() ? whole : whole + "." + frac;
}

// The file a key names: beside the config, from its parent (the model's layout), or from
// the working directory.
std::string locate(const Config& c, std::string_view key) {
  if (!c.has(key)) throw InputError(fmt::format("{}: {} is missing (the model reads it)", c.path(), key));
  const fs::path given = c.text(key);
  if (given.is_absolute()) return given.string();
  const fs::path dir = fs::path(c.path()).parent_path();
  std::vector<fs::path> tried = {dir / given, dir.parent_path() / given, given};
  std::error_code ec;
  for (const fs::path& p : tried)
    if (fs::is_regular_file(p, ec)) return p.lexically_normal().string();
  throw InputError(fmt::format("{}: '{}' not found beside the config ({}), from its parent ({}) or the working "
                               "directory",
                               c.where(key), given.string(), tried[0].string(), tried[1].string()));
}

// A flow of flow.txt.
struct Ns3Flow {
  std::uint32_t src, dst, pg, dport;
  std::uint64_t bytes;
  Time start;
};

std::vector<Ns3Flow> read_flow_txt(const std::string& path, const fabric::Ns3Topology& topo) {
  InputStream in(path, "ns-3 flow file", kTableBytes);
  std::string line;
  std::size_t n = 0;
  const auto next = [&] {
    while (std::getline(in, line)) {
      ++n;
      if (line.find_first_not_of(" \t\r") != std::string::npos) return true;
    }
    return false;
  };
  const auto whole = [&](const std::string& w, const char* what, std::uint64_t max) {
    std::uint64_t x = 0;
    const auto [p, ec] = std::from_chars(w.data(), w.data() + w.size(), x);
    if (ec != std::errc() || p != w.data() + w.size() || x > max)
      throw InputError(fmt::format("{}:{}: {}: expected a whole number 0..{}, got '{}'", path, n, what, max, w));
    return x;
  };
  if (!next()) throw InputError(path + ": empty (expected the number of flows on the first line)");
  std::vector<std::string> w = words_of(line);
  if (w.size() != 1) throw InputError(fmt::format("{}:{}: expected the number of flows alone", path, n));
  const std::uint64_t count = whole(w[0], "the number of flows", 1u << 27);
  if (count == 0) throw InputError(path + ": no flows");
  std::vector<Ns3Flow> flows;
  flows.reserve(std::min<std::uint64_t>(count, 1u << 16));  // (the count is the file's word)
  for (std::uint64_t i = 0; i < count; ++i) {
    if (!next())
      throw InputError(fmt::format("{}: {} flow(s) where the first line announces {}", path, flows.size(), count));
    w = words_of(line);
    if (w.size() != 6)
      throw InputError(
          fmt::format("{}:{}: expected 'src dst pg dport size start_time' (6 fields), got {}", path, n, w.size()));
    Ns3Flow f{};
    f.src = static_cast<std::uint32_t>(whole(w[0], "src", topo.nodes - 1));
    f.dst = static_cast<std::uint32_t>(whole(w[1], "dst", topo.nodes - 1));
    for (const std::uint32_t node : {f.src, f.dst})
      if (topo.is_switch[node]) throw InputError(fmt::format("{}:{}: node {} is a switch, not a host", path, n, node));
    if (f.src == f.dst) throw InputError(fmt::format("{}:{}: src and dst are the same host", path, n));
    f.pg = static_cast<std::uint32_t>(whole(w[2], "pg", 7));
    f.dport = static_cast<std::uint32_t>(whole(w[3], "dport", 65535));
    f.bytes = whole(w[4], "size", std::uint64_t{1} << 50);
    if (f.bytes == 0) throw InputError(fmt::format("{}:{}: size: at least one byte", path, n));
    try {
      f.start = parse_time(w[5] + "s");
    } catch (const InputError&) {
      throw InputError(
          fmt::format("{}:{}: start_time: expected a decimal number of seconds (to the ps), got '{}'", path, n, w[5]));
    }
    if (!flows.empty() && f.start < flows.back().start)
      throw InputError(fmt::format("{}:{}: starts at {} s, before the flow above it: the model reads flow.txt in order "
                                   "and needs ascending start times",
                                   path, n, w[5]));
    flows.push_back(f);
  }
  if (next()) throw InputError(fmt::format("{}:{}: more flows than the first line announces ({})", path, n, count));
  return flows;
}

// The HPCC model's switch-port rates, each with its dynamic threshold's shift (the ECN
// thresholds come from the maps by these rates).
struct PortModel {
  std::map<std::int64_t, std::uint32_t> shift_of;  // by rate (bps): the model's pfc_a_shift
  std::int64_t nic_rate = 0;
};

PortModel port_model(const fabric::Ns3Topology& t) {
  PortModel m;
  // nic_rate: the rate of device 1 of the first host node (the lowest id that is a host).
  std::uint32_t first_host = 0;
  while (t.is_switch[first_host]) ++first_host;
  for (const auto& l : t.links)
    if (l.a == first_host || l.b == first_host) {
      m.nic_rate = l.rate.bps();
      break;
    }
  for (const auto& l : t.links)
    for (const std::uint32_t end : {l.a, l.b}) {
      if (!t.is_switch[end]) continue;
      const std::int64_t rate = l.rate.bps();
      // third.cc: shift 3, less one per halving down to the NIC's rate.
      std::uint32_t shift = 3;
      for (std::int64_t r = rate; r > m.nic_rate && shift > 0; r /= 2) --shift;
      m.shift_of[rate] = shift;
    }
  return m;
}

class Importer {
 public:
  Importer(const std::string& path, const Ns3ImportOptions& o) : c_(path), opt_(o) {}

  Ns3Import run() {
    const std::string topo_path = locate(c_, "TOPOLOGY_FILE");
    const std::string flow_path = locate(c_, "FLOW_FILE");
    const fabric::Ns3Topology topo = fabric::read_ns3_topology(topo_path);
    const std::vector<Ns3Flow> flows = read_flow_txt(flow_path, topo);
    out_.notes.push_back(fmt::format("TOPOLOGY_FILE: {}", topo_path));
    out_.notes.push_back(fmt::format("FLOW_FILE: {} ({} flows)", flow_path, flows.size()));

    mode_ = c_.whole("CC_MODE", 1);
    simulation();
    topology(topo, topo_path);
    traffic(topo, flows);
    const PortModel ports = port_model(topo);
    switches(ports);
    nic();
    congestion_control();
    unused();
    if (!refused_.empty()) {
      std::string msg = fmt::format("{}: the model's inputs ask for what fabriclab does not do", c_.path());
      for (const std::string& r : refused_) msg += "\n  " + r;
      if (!approximated_.empty())
        msg += "\n(" + std::to_string(approximated_.size()) +
               " more would be approximated with --approximate: " + approximated_.front() + " ...)";
      throw InputError(msg);
    }
    if (!approximated_.empty() && !opt_.approximate) {
      std::string msg = fmt::format(
          "{}: fabriclab can only approximate these (import-ns3 --approximate takes them as said):", c_.path());
      for (const std::string& r : approximated_) msg += "\n  " + r;
      throw InputError(msg);
    }
    out_.approximations = approximated_;
    out_.scenario = toml();
    return out_;
  }

 private:
  void set(std::string key, std::string value, std::string from) {
    settings_.push_back({std::move(key), std::move(value), std::move(from)});
  }
  // A value fabriclab cannot run at all.
  void refuse(std::string_view key, const std::string& why) { refused_.push_back(c_.where(key) + ": " + why); }
  // A value fabriclab runs only approximately (accepted with --approximate).
  void approximate(std::string_view key, const std::string& why) {
    approximated_.push_back(c_.where(key) + ": " + why);
  }
  bool flag(std::string_view key, bool fallback) const { return c_.whole(key, fallback ? 1 : 0, 1) == 1; }

  void simulation() {
    const std::string stop = c_.has("SIMULATOR_STOP_TIME") ? c_.text("SIMULATOR_STOP_TIME") : "3.01";
    const Time end = c_.time("SIMULATOR_STOP_TIME", stop, "s");
    if (end < Time::from_ps(1000)) refuse("SIMULATOR_STOP_TIME", "the run must last 1 ns at least");
    set("sim.stop_time", toml_string(to_string(end)), "SIMULATOR_STOP_TIME");
    if (c_.has("LINK_DOWN") && c_.whole_of(c_.values("LINK_DOWN")[0], "LINK_DOWN", UINT64_MAX) > 0)
      refuse("LINK_DOWN", "a link taken down during the run is not modelled yet (write 0 0 0)");
    if (c_.real("ERROR_RATE_PER_LINK", 0) != 0)
      refuse("ERROR_RATE_PER_LINK", "random loss on every link is not modelled (impair.* drops on one link); write 0");
  }

  void topology(const fabric::Ns3Topology& t, const std::string& path) {
    // A single switch, last, with host i on its port i, every link alike: the shape.
    const std::uint32_t hosts = t.hosts();
    // (within the shape's ranges: 65 536 hosts, 1 Mb/s, 1 s)
    bool shape = t.nodes == hosts + 1 && t.is_switch[hosts] && t.links.size() == hosts && hosts <= 65536 &&
                 t.links[0].rate.bps() >= 1'000'000 && t.links[0].delay <= Time::from_ps(1'000'000'000'000);
    for (std::uint32_t i = 0; shape && i < hosts; ++i) {
      const auto& l = t.links[i];
      shape = std::min(l.a, l.b) == i && std::max(l.a, l.b) == hosts && l.rate == t.links[0].rate &&
              l.delay == t.links[0].delay;
    }
    if (shape) {
      set("topology.kind", toml_string("single_switch"), "TOPOLOGY_FILE: one switch, host i on its port i");
      set("topology.hosts", std::to_string(hosts), "TOPOLOGY_FILE");
      set("topology.host_rate", toml_string(to_string(t.links[0].rate)), "TOPOLOGY_FILE");
      set("topology.link_delay", toml_string(to_string(t.links[0].delay)), "TOPOLOGY_FILE");
      return;
    }
    set("topology.kind", toml_string("ns3"), "TOPOLOGY_FILE");
    set("topology.file", toml_string("topology.txt"), "TOPOLOGY_FILE, copied");
    out_.topology = read_input(path, "ns-3 topology", kTableBytes);
  }

  void traffic(const fabric::Ns3Topology& t, const std::vector<Ns3Flow>& flows) {
    std::vector<std::uint32_t> host_of(t.nodes, 0);  // node id -> host index
    for (std::uint32_t n = 0, h = 0; n < t.nodes; ++n)
      if (!t.is_switch[n]) host_of[n] = h++;
    std::string csv = "src,dst,bytes,start,priority,qps,dport\n";
    for (const Ns3Flow& f : flows) {
      csv += fmt::format("{},{},{}B,{},{},1,{}\n", host_of[f.src], host_of[f.dst], f.bytes, to_string(f.start), f.pg,
                         f.dport);
      pgs_.insert(f.pg);
    }
    out_.flows = std::move(csv);
    set("traffic.pattern", toml_string("flows"), "FLOW_FILE");
    set("traffic.flows_file", toml_string("flows.csv"), "FLOW_FILE, as src,dst,bytes,start,priority,qps,dport");
  }

  void switches(const PortModel& m) {
    const std::uint64_t mb = c_.whole("BUFFER_SIZE", 16, 1u << 20);
    if (mb == 0) refuse("BUFFER_SIZE", "a switch needs a buffer (MB)");
    set("switch.buffer", toml_string(fmt::format("{}MiB", mb)), "BUFFER_SIZE (MB of 2^20 bytes)");
    set("switch.mmu.threshold", toml_string("dynamic"),
        "the model's MMU (USE_DYNAMIC_PFC_THRESHOLD is not read by it)");
    // Shift 3 (1/8) at the NICs' rate and below, the faster ports' by their rate.
    set("switch.mmu.dynamic_th", "-3", "the model's pfc_a_shift: free buffer >> 3");
    std::string by_rate;
    for (const auto& [rate, sh] : m.shift_of)
      if (sh != 3)
        by_rate += fmt::format("{}{}=-{}", by_rate.empty() ? "" : ",", to_string(BitRate::from_bps(rate)), sh);
    if (!by_rate.empty())
      set("switch.mmu.dynamic_th_by_rate", toml_string(by_rate),
          "pfc_a_shift of the ports faster than the NICs: one less per doubling");
    set("switch.mmu.reserve", toml_string("4KiB"), "the model's reserve per port and queue");
    set("switch.mmu.reserve_scope", toml_string("pg"), "the model's MMU");
    set("switch.mmu.release_at", toml_string("start"), "the model frees a packet's buffer as it starts out");
    set("switch.pfc.enabled", "true", "the model pauses every queue");
    std::string lossless;
    for (const std::uint32_t pg : pgs_) lossless += (lossless.empty() ? "" : ",") + std::to_string(pg);
    set("switch.pfc.lossless", toml_string(lossless), "every pg of FLOW_FILE");
    set("switch.pfc.headroom", toml_string("ns3"), "the model's: 3 x each port's rate x delay / 8");
    set("switch.pfc.xon_offset", toml_string("3KiB"), "the model's resume_offset");
    set("switch.pfc.pause_expiry", toml_string("xon"), "the model's pause holds until the resume (PAUSE_TIME unused)");
    set("switch.pfc.pause_refresh", toml_string("off"), "the model pauses once per XOFF");
    ecn(m);
  }

  // KMIN_MAP, KMAX_MAP (KB of 1000 bytes) and PMAX_MAP (a probability) at each switch
  // port's rate.
  void ecn(const PortModel& m) {
    const bool on = flag("ENABLE_QCN", true);
    set("switch.wred.ecn", toml_string(on ? "ecn_all" : "ecn_none"), "ENABLE_QCN");
    struct Marking {
      std::uint64_t kmin, kmax;
      double pmax;
    };
    std::map<std::int64_t, Marking> at;             // by rate
    std::map<std::int64_t, std::string> pmax_text;  // by rate, as written
    for (const char* key : {"KMIN_MAP", "KMAX_MAP", "PMAX_MAP"}) {
      if (!c_.has(key)) {
        refuse(key, "missing: the model looks up every switch port's rate in it");
        return;
      }
      const std::vector<std::string>& v = c_.values(key);
      std::map<std::int64_t, std::string> given;
      for (std::size_t i = 1; i + 1 < v.size(); i += 2)
        given[static_cast<std::int64_t>(c_.whole_of(v[i], key, INT64_MAX))] = v[i + 1];
      for (const auto& [rate, shift] : m.shift_of) {
        const auto g = given.find(rate);
        if (g == given.end()) {
          refuse(key, fmt::format("no entry for {} ({} bps), a rate of the topology's switch ports",
                                  to_string(BitRate::from_bps(rate)), rate));
          return;
        }
        Marking& mk = at[rate];
        if (std::string_view(key) == "KMIN_MAP") {
          mk.kmin = c_.whole_of(g->second, key);
        } else if (std::string_view(key) == "KMAX_MAP") {
          mk.kmax = c_.whole_of(g->second, key);
        } else {
          mk.pmax = c_.real_of(g->second, key);
          if (mk.pmax > 1)
            refuse(key,
                   fmt::format("{} at {}: a probability is at most 1", g->second, to_string(BitRate::from_bps(rate))));
          pmax_text[rate] = g->second;
        }
      }
    }
    if (at.empty()) return;
    // Kmin, Kmax, Pmax as WRED takes them: the model marks every packet above Kmax and,
    // with Kmin >= Kmax, never reaches its ramp -- a step at Kmax, which WRED from Kmax to
    // a byte above it at 100 % is for whole bytes.
    struct Wred {
      std::string kmin, kmax, pmax;
      bool step;
    };
    const auto wred_of = [&](std::int64_t rate) {
      const Marking& mk = at.at(rate);
      if (mk.kmax <= mk.kmin)
        return Wred{fmt::format("{}KB", mk.kmax), fmt::format("{}B", mk.kmax * 1000 + 1), "100", true};
      return Wred{fmt::format("{}KB", mk.kmin), fmt::format("{}KB", mk.kmax), percent(pmax_text.at(rate)), false};
    };
    const std::int64_t base = at.contains(m.nic_rate) ? m.nic_rate : at.begin()->first;
    const Wred w = wred_of(base);
    set("switch.wred.green_min_threshold", toml_string(w.kmin),
        w.step ? "KMAX_MAP (KB of 1000 bytes), at or below KMIN_MAP: a step" : "KMIN_MAP (KB of 1000 bytes)");
    set("switch.wred.green_max_threshold", toml_string(w.kmax), w.step ? "every packet above KMAX_MAP" : "KMAX_MAP");
    set("switch.wred.green_drop_probability", w.pmax, w.step ? "a step" : "PMAX_MAP (as a percent)");
    std::string by_rate;
    for (const auto& [rate, mk] : at) {
      const Wred r = wred_of(rate);
      if (rate == base || (r.kmin == w.kmin && r.kmax == w.kmax && r.pmax == w.pmax)) continue;
      by_rate += fmt::format("{}{}={}/{}/{}", by_rate.empty() ? "" : ",", to_string(BitRate::from_bps(rate)), r.kmin,
                             r.kmax, r.pmax);
    }
    if (!by_rate.empty()) set("switch.wred.by_rate", toml_string(by_rate), "the maps at the other switch-port rates");
    set("switch.wred.mark_at", toml_string("dequeue"), "the model marks as a packet leaves");
  }

  void nic() {
    const std::uint64_t payload = c_.whole("PACKET_PAYLOAD_SIZE", 1000, 9000);
    if (payload < 256) refuse("PACKET_PAYLOAD_SIZE", "fabriclab's MTU is 256 .. 9000 bytes");
    set("nic.mtu", toml_string(fmt::format("{}B", payload)), "PACKET_PAYLOAD_SIZE");
    set("nic.transport", toml_string("rc"), "the model's go-back-N");
    set("nic.flow_end", toml_string("last_ack_received"), "the model's FCT ends at the sender's last ACK");
    // rdma-hw.cc: a receiver acknowledges a packet once the bytes it has received pass
    // the interval (and, before that, at each L2_CHUNK_SIZE boundary), so from then on
    // every packet: an interval up to a packet is an ACK per packet.
    const std::uint64_t ack = c_.whole("L2_ACK_INTERVAL", 0);
    if (ack == 0)
      refuse("L2_ACK_INTERVAL", "0: the model's senders ignore every ACK then, so no flow finishes (write 1: an "
                                "ACK per packet)");
    else if (ack > payload)
      approximate("L2_ACK_INTERVAL", fmt::format("{} bytes: the model leaves a QP's packets unacknowledged until "
                                                 "that many have arrived (but at L2_CHUNK_SIZE boundaries), then "
                                                 "acknowledges each; fabriclab acknowledges each from the first",
                                                 ack));
    set("nic.ack_every", "1", "L2_ACK_INTERVAL: an ACK per packet");
    if (flag("L2_BACK_TO_ZERO", false))
      refuse("L2_BACK_TO_ZERO", "1: going back to the chunk's start on a NAK is not modelled (fabriclab goes back to "
                                "the NAKed packet, as 0 does)");
    if (flag("ACK_HIGH_PRIO", false))
      approximate("ACK_HIGH_PRIO", "1: the model's hosts send ACKs on PFC class 0, never paused; fabriclab's ACKs ride "
                                   "the data's priority at hosts as at the switches");
    if (!flag("RATE_BOUND", true))
      refuse("RATE_BOUND", "0: sending above the congestion control's rate is not modelled");
    // The model's frames: PPP/Ethernet 14 + IPv4 20 + UDP 8 + pg 2 + seq 4 = 48 bytes
    // (+ its INT: TIMELY's 8-byte timestamp; HPCC's hop records are fabriclab's own);
    // ACKs padded to 60; no gap between frames; PFC frames 14 + 20 + 9.
    set("wire.header_bytes", mode_ == 7 ? "56" : "48", "the model's headers");
    set("wire.min_frame_bytes", "60", "the model pads ACKs to 60 bytes");
    set("wire.gap_bytes", "0", "the model's point-to-point links have no gap");
    set("wire.pfc_frame_bytes", "43", "the model's PFC frame");
  }

  void congestion_control() {
    const std::uint64_t mode = mode_;
    const bool has_win = flag("HAS_WIN", true), var_win = flag("VAR_WIN", false);
    if (!flag("GLOBAL_T", true) && has_win && mode != 1)
      approximate("GLOBAL_T", "0: each pair's own base RTT and BDP; fabriclab gives every QP the longest path's");
    const auto window_needed = [&](const char* what) {
      if (!has_win) approximate("HAS_WIN", fmt::format("0: {} runs with its window here", what));
      else if (!var_win)
        approximate("VAR_WIN", fmt::format("0: a window fixed at the BDP; {} scales it with the rate", what));
    };
    switch (mode) {
      case 1: dcqcn(has_win); break;
      case 3:
      case 10:
        hpcc(mode == 10);
        window_needed("HPCC");
        break;
      case 7: timely(has_win, var_win); break;
      case 8: dctcp(has_win, var_win); break;
      default:
        refuse("CC_MODE",
               fmt::format("{}: expected 1 (DCQCN), 3 (HPCC), 7 (TIMELY), 8 (DCTCP) or 10 (HPCC-PINT)", mode));
    }
  }

  BitRate required_rate(std::string_view key) {
    if (!c_.has(key)) {
      refuse(key, "missing: the model has no default for it");
      return BitRate::from_bps(0);
    }
    return in_range(key, c_.rate(key, ""), 0);
  }
  // A rate of a congestion control's key: at least `min` bps, at most 10 Tb/s.
  BitRate in_range(std::string_view key, BitRate r, std::int64_t min) {
    if (r.bps() < min || r.bps() > 10'000'000'000'000)
      refuse(key, fmt::format("{}: expected {} .. 10Tbps", to_string(r), to_string(BitRate::from_bps(min))));
    return r;
  }
  BitRate min_rate() { return in_range("MIN_RATE", c_.rate("MIN_RATE", "100Mb/s"), 1000); }
  // A number of a key within [lo, hi].
  double within(std::string_view key, double fallback, double lo, double hi) {
    const double x = c_.real(key, fallback);
    if (x < lo || x > hi) refuse(key, fmt::format("{}: expected {} .. {}", x, lo, hi));
    return x;
  }

  // A whole number of microseconds, as fabriclab's DCQCN keys take them.
  std::string whole_us(std::string_view key, double fallback, std::uint64_t min) {
    const double us = c_.real(key, fallback);
    if (us != std::floor(us) || us < static_cast<double>(min) || us > 1e6)
      refuse(key, fmt::format("{} us: fabriclab takes whole microseconds {} .. 1000000 here", us, min));
    return fmt::format("{}", static_cast<std::uint64_t>(us));
  }

  void dcqcn(bool has_win) {
    set("nic.congestion_control", toml_string("dcqcn"), "CC_MODE 1");
    set("nic.roce_rp.preset", toml_string("ns3-mlx"), "the model's DCQCN (rdma-hw.cc)");
    if (has_win) refuse("HAS_WIN", "1: DCQCN with a window is not modelled (the model's dcqcn runs write HAS_WIN 0)");
    set("nic.roce_rp.rate_reduce_monitor_period", whole_us("RATE_DECREASE_INTERVAL", 4, 0), "RATE_DECREASE_INTERVAL");
    set("nic.roce_rp.dce_tcp_rtt", whole_us("ALPHA_RESUME_INTERVAL", 55, 1), "ALPHA_RESUME_INTERVAL");
    if (!c_.has("RP_TIMER")) refuse("RP_TIMER", "missing: the model's timer is then 0 us (its global's zero)");
    else set("nic.roce_rp.rpg_time_reset", whole_us("RP_TIMER", 0, 1), "RP_TIMER");
    const double g = c_.real("EWMA_GAIN", 0);  // third.cc's default is 1 / 16 in integers: 0
    const double old = 1024 - g * 1024;
    if (g > 1 || old != std::floor(old))
      refuse("EWMA_GAIN", fmt::format("{}: fabriclab's alpha gain is in steps of 1/1024", g));
    else set("nic.roce_rp.dce_tcp_g", fmt::format("{}", static_cast<int>(old)), "1024 x (1 - EWMA_GAIN)");
    set("nic.roce_rp.rpg_threshold", std::to_string(c_.whole("FAST_RECOVERY_TIMES", 5, 1000)), "FAST_RECOVERY_TIMES");
    set("nic.roce_rp.rpg_ai_rate", mbps(required_rate("RATE_AI")), "RATE_AI");
    set("nic.roce_rp.rpg_hai_rate", mbps(required_rate("RATE_HAI")), "RATE_HAI");
    set("nic.roce_rp.rpg_min_rate", mbps(min_rate()), "MIN_RATE");
    set("nic.roce_rp.clamp_tgt_rate", flag("CLAMP_TARGET_RATE", false) ? "1" : "0", "CLAMP_TARGET_RATE");
  }

  void hpcc(bool pint) {
    set("nic.congestion_control", toml_string("hpcc"), pint ? "CC_MODE 10" : "CC_MODE 3");
    set("nic.hpcc.preset", toml_string("ns3"), "the model's HPCC (rdma-hw.cc)");
    if (pint) {
      set("nic.hpcc.feedback", toml_string("pint"), "CC_MODE 10");
      set("nic.hpcc.pint_log_base", fmt::format("{}", within("PINT_LOG_BASE", 1.05, 1.001, 2)), "PINT_LOG_BASE");
      set("nic.hpcc.pint_prob", fmt::format("{}", within("PINT_PROB", 1.0, 0.001, 1)), "PINT_PROB");
    }
    set("nic.hpcc.eta", fmt::format("{}", within("U_TARGET", 0.95, 0.01, 1)), "U_TARGET");
    set("nic.hpcc.max_stage", std::to_string(c_.whole("MI_THRESH", 5, 1'000'000)), "MI_THRESH");
    set("nic.hpcc.fast_react", flag("FAST_REACT", true) ? "true" : "false", "FAST_REACT");
    set("nic.hpcc.rai", mbps(required_rate("RATE_AI")), "RATE_AI");
    set("nic.hpcc.min_rate", mbps(min_rate()), "MIN_RATE");
    if (c_.whole("MULTI_RATE", 1) != 0)
      approximate("MULTI_RATE", "1: a rate per hop; fabriclab's HPCC reacts to the most loaded hop (write 0)");
    if (c_.whole("SAMPLE_FEEDBACK", 0) != 0) refuse("SAMPLE_FEEDBACK", "1: sampled INT feedback is not modelled");
  }

  void timely(bool has_win, bool var_win) {
    set("nic.congestion_control", toml_string("timely"), "CC_MODE 7");
    if (has_win && !var_win)
      approximate("VAR_WIN", "0: a window fixed at the BDP; fabriclab's TIMELY window scales with the rate");
    set("nic.timely.preset", toml_string(has_win ? "ns3-vwin" : "ns3"), "HAS_WIN, VAR_WIN");
    set("nic.timely.ai", mbps(required_rate("RATE_AI")), "RATE_AI");
    set("nic.timely.hai_rate", mbps(required_rate("RATE_HAI")), "RATE_HAI");
    set("nic.timely.min_rate", mbps(min_rate()), "MIN_RATE");
  }

  void dctcp(bool has_win, bool var_win) {
    set("nic.congestion_control", toml_string("dctcp"), "CC_MODE 8");
    set("nic.dctcp.preset", toml_string("ns3"), "the model's DCTCP (rdma-hw.cc)");
    if (has_win && !var_win)
      approximate("VAR_WIN", "0: a window fixed at the BDP; fabriclab's DCTCP window scales with the rate");
    set("nic.dctcp.window", toml_string(has_win ? "rate_bdp" : "off"), "HAS_WIN, VAR_WIN");
    const double g = c_.real("EWMA_GAIN", 0);
    if (g > 1) refuse("EWMA_GAIN", "a gain is at most 1");
    set("nic.dctcp.g", fmt::format("{}", g), "EWMA_GAIN");
    set("nic.dctcp.rate_ai", mbps(in_range("DCTCP_RATE_AI", c_.rate("DCTCP_RATE_AI", "1000Mb/s"), 0)), "DCTCP_RATE_AI");
    set("nic.dctcp.min_rate", mbps(min_rate()), "MIN_RATE");
  }

  // Keys the model reads that change nothing fabriclab runs.
  void unused() {
    static const std::pair<const char*, const char*> kNotes[] = {
        {"TRACE_FILE", "packet traces: fabriclab's are output.pcap"},
        {"TRACE_OUTPUT_FILE", "packet traces: fabriclab's are output.pcap"},
        {"ENABLE_TRACE", "packet traces: fabriclab's are output.pcap"},
        {"QLEN_MON_FILE", "queue monitor: fabriclab's is queues.csv (output.timeseries_interval)"},
        {"QLEN_MON_START", "queue monitor"},
        {"QLEN_MON_END", "queue monitor"},
        {"FCT_OUTPUT_FILE", "written as fct.txt in the run's folder (output.ns3)"},
        {"PFC_OUTPUT_FILE", "written as pfc.txt in the run's folder (output.ns3)"},
        {"DATA_RATE", "read and unused by the model too"},
        {"LINK_DELAY", "read and unused by the model too"},
        {"USE_DYNAMIC_PFC_THRESHOLD", "read and unused by the model too (its MMU is always dynamic)"},
        {"PAUSE_TIME", "the model's pause holds until the resume whatever its time"},
        {"INT_MULTI", "the model's INT units; fabriclab reads exact counts"},
        {"L2_CHUNK_SIZE", "used by the model only with L2_BACK_TO_ZERO or an ACK interval above a packet"}};
    for (const auto& [key, why] : kNotes)
      if (c_.has(key)) out_.notes.push_back(fmt::format("{} not used: {}", c_.where(key), why));
    for (const std::string& key : c_.unread())
      out_.notes.push_back(
          fmt::format("{} not used: the model reads it under another CC_MODE than {}", c_.where(key), mode_));
    set("output.ns3", "true", "FCT_OUTPUT_FILE, PFC_OUTPUT_FILE: fct.txt and pfc.txt");
  }

  std::string toml() const {
    std::string out = fmt::format(
        "# Imported by `fabriclab import-ns3` from {} (the HPCC ns-3 RDMA model's inputs).\n"
        "# Each key names what it comes from; docs/fabric.md (\"Importing the ns-3 model's inputs\") says what\n"
        "# still differs from the model: times exact to the ps (the model's are whole ns), a 16-byte RETH on a\n"
        "# message's first packet, fabriclab's own random draws (WRED, ECMP hashes, source ports).\n",
        c_.path());
    for (const std::string& a : approximated_) out += "# APPROXIMATED: " + a + "\n";
    std::vector<std::string> tables;
    for (const Setting& s : settings_) {
      const std::string table = s.key.substr(0, s.key.rfind('.'));
      if (std::find(tables.begin(), tables.end(), table) == tables.end()) tables.push_back(table);
    }
    for (const std::string& t : tables) {
      out += fmt::format("\n[{}]\n", t);
      for (const Setting& s : settings_)
        if (s.key.substr(0, s.key.rfind('.')) == t)
          out += fmt::format("{} = {}  # {}\n", s.key.substr(t.size() + 1), s.value, s.from);
    }
    return out;
  }

  Config c_;
  Ns3ImportOptions opt_;
  Ns3Import out_;
  std::vector<Setting> settings_;
  std::set<std::uint32_t> pgs_;  // of FLOW_FILE's flows (traffic())
  std::uint64_t mode_ = 1;       // CC_MODE
  std::vector<std::string> refused_, approximated_;
};

}  // namespace

Ns3Import import_ns3(const std::string& config_path, const Ns3ImportOptions& options) {
  return Importer(config_path, options).run();
}

std::string write_ns3_import(const Ns3Import& imported, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw InputError(fmt::format("{}: cannot make the folder: {}", dir, ec.message()));
  write_file(fs::path(dir) / "scenario.toml", imported.scenario);
  write_file(fs::path(dir) / "flows.csv", imported.flows);
  // A topology from an earlier import into the folder would be taken for this one's.
  if (imported.topology.empty()) fs::remove(fs::path(dir) / "topology.txt", ec);
  else write_file(fs::path(dir) / "topology.txt", imported.topology);
  return (fs::path(dir) / "scenario.toml").string();
}

}  // namespace fabriclab::scenario
