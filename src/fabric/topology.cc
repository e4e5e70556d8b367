#include "fabric/topology.h"

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "core/input.h"

namespace fabriclab::fabric {

namespace {
constexpr std::uint32_t kMaxHosts = 1u << 20;

void at_least(std::uint32_t v, std::uint32_t lo, const char* key) {
  if (v < lo) throw InputError(std::string("topology.") + key + " must be at least " + std::to_string(lo));
}

// A node's ports are numbered in 16 bits (the last values reserved).
constexpr std::uint64_t kMaxPorts = Network::kMaxPorts;

// The switches of one role have `ports` ports, made of the keys in `sum` ("topology.hosts").
void check_ports(const char* role, std::uint64_t ports, const std::string& sum) {
  if (ports <= kMaxPorts) return;
  throw InputError(fmt::format("topology: {} would have {} ports ({}); a switch has at most {} (port numbers are "
                               "16-bit)",
                               role, ports, sum, kMaxPorts));
}

// Every switch's port count within kMaxPorts, checked before anything is built; the
// message names the keys that make the count.
void check_port_counts(const TopologySpec& t) {
  const auto key = [](const char* k, std::uint64_t v) { return fmt::format("topology.{} {}", k, v); };
  switch (t.kind) {
    case TopologyKind::back_to_back:
    case TopologyKind::fat_tree: return;  // one port; k <= 64 ports
    case TopologyKind::single_switch: return check_ports("sw0", t.hosts, key("hosts", t.hosts));
    case TopologyKind::two_switches:
      check_ports("s1", std::uint64_t{t.s1_hosts} + t.inter_switch_links,
                  key("s1_hosts", t.s1_hosts) + " + " + key("inter_switch_links", t.inter_switch_links));
      return check_ports("s2", std::uint64_t{t.s2_hosts} + t.inter_switch_links,
                         key("s2_hosts", t.s2_hosts) + " + " + key("inter_switch_links", t.inter_switch_links));
    case TopologyKind::leaf_spine:
      check_ports("each leaf", std::uint64_t{t.hosts_per_leaf} + std::uint64_t{t.spines} * t.uplinks,
                  key("hosts_per_leaf", t.hosts_per_leaf) + " + " + key("spines", t.spines) + " x " +
                      key("uplinks", t.uplinks));
      return check_ports("each spine", std::uint64_t{t.leaves} * t.uplinks,
                         key("leaves", t.leaves) + " x " + key("uplinks", t.uplinks));
    case TopologyKind::ring:
      return check_ports("each switch", std::uint64_t{t.hosts_per_switch} + 2,
                         key("hosts_per_switch", t.hosts_per_switch) + " + 2 ring links");
    case TopologyKind::ns3: return;  // Network::connect counts each node's
  }
}
}  // namespace

TopologyKind parse_topology_kind(const std::string& name) {
  return params::parse_enum(kTopologyKindNames, name, "topology");
}

const char* to_string(TopologyKind k) { return params::name_of(kTopologyKindNames, k).data(); }

std::uint32_t host_count(const TopologySpec& t) {
  std::uint64_t n = 0;
  switch (t.kind) {
    case TopologyKind::back_to_back: n = 2; break;
    case TopologyKind::single_switch: n = t.hosts; break;
    case TopologyKind::two_switches: n = std::uint64_t{t.s1_hosts} + t.s2_hosts; break;
    case TopologyKind::leaf_spine: n = std::uint64_t{t.leaves} * t.hosts_per_leaf; break;
    case TopologyKind::fat_tree: n = std::uint64_t{t.k} * t.k * t.k / 4; break;
    case TopologyKind::ring: n = std::uint64_t{t.ring_switches} * t.hosts_per_switch; break;
    case TopologyKind::ns3: n = read_ns3_topology(t.file).hosts(); break;
  }
  if (n > kMaxHosts) throw InputError("the topology has " + std::to_string(n) + " hosts (at most 2^20)");
  return static_cast<std::uint32_t>(n);
}

std::vector<LinkRate> parse_link_rates(const std::string& list) {
  std::vector<LinkRate> v;
  std::size_t at = 0;
  while (at < list.size()) {
    std::size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    std::string item = list.substr(at, end - at);
    at = end + 1;
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (item.empty()) continue;
    const std::size_t colon = item.find(':'), eq = item.find('=');
    const auto bad = [&](const std::string& why) {
      return InputError("topology.link_rates: '" + item + "': " + why +
                        " (expected NODE:PORT=RATE, e.g. leaf0:4=50Gbps)");
    };
    if (colon == std::string::npos || eq == std::string::npos || eq < colon) throw bad("not NODE:PORT=RATE");
    LinkRate r;
    r.node = item.substr(0, colon);
    if (r.node.empty()) throw bad("no node");
    const std::string port = item.substr(colon + 1, eq - colon - 1);
    if (port.empty() || port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5)
      throw bad("the port must be a number");
    r.port = static_cast<std::uint32_t>(std::stoul(port));
    try {
      r.rate = parse_bit_rate(item.substr(eq + 1));
    } catch (const InputError& e) {
      throw bad(e.what());
    }
    if (r.rate.bps() <= 0) throw bad("the rate must be positive");
    v.push_back(r);
  }
  return v;
}

std::string link_rates_text(const std::vector<LinkRate>& v) {
  std::string s;
  for (const LinkRate& r : v)
    s += (s.empty() ? "" : ",") + r.node + ":" + std::to_string(r.port) + "=" + to_string(r.rate);
  return s;
}

namespace {
void build_shape(Network& net, const TopologySpec& t);

// The next whitespace-separated word of `text` from `at`, and the line it is on.
bool next_word(const std::string& text, std::size_t& at, std::size_t& line, std::string& word) {
  while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) line += text[at++] == '\n' ? 1 : 0;
  if (at >= text.size()) return false;
  const std::size_t from = at;
  while (at < text.size() && !std::isspace(static_cast<unsigned char>(text[at]))) ++at;
  word = text.substr(from, at - from);
  return true;
}
}  // namespace

std::uint32_t Ns3Topology::hosts() const {
  std::uint32_t h = 0;
  for (const bool s : is_switch) h += s ? 0 : 1;
  return h;
}

BitRate parse_ns3_data_rate(std::string_view text) {
  const std::size_t unit = text.find_first_not_of("0123456789.");
  const std::string_view number = text.substr(0, unit == std::string_view::npos ? text.size() : unit);
  const std::string_view name = unit == std::string_view::npos ? std::string_view{} : text.substr(unit);
  struct Unit {
    std::string_view ns3, ours;
    bool bytes;
  };
  static constexpr Unit kUnits[] = {{"bps", "bps", false},   {"b/s", "bps", false},   {"kbps", "Kbps", false},
                                    {"kb/s", "Kbps", false}, {"Kbps", "Kbps", false}, {"Kb/s", "Kbps", false},
                                    {"Mbps", "Mbps", false}, {"Mb/s", "Mbps", false}, {"Gbps", "Gbps", false},
                                    {"Gb/s", "Gbps", false}, {"Bps", "bps", true},    {"B/s", "bps", true},
                                    {"KBps", "Kbps", true},  {"KB/s", "Kbps", true},  {"kBps", "Kbps", true},
                                    {"kB/s", "Kbps", true},  {"MBps", "Mbps", true},  {"MB/s", "Mbps", true},
                                    {"GBps", "Gbps", true},  {"GB/s", "Gbps", true}};
  for (const Unit& u : kUnits) {
    if (u.ns3 != name || number.empty()) continue;
    const BitRate r = parse_bit_rate(std::string(number) + std::string(u.ours));
    if (!u.bytes) return r;
    if (r.bps() > INT64_MAX / 8) break;
    return BitRate::from_bps(r.bps() * 8);
  }
  throw InputError(fmt::format("'{}': expected a rate as ns-3 writes it, a number and one of bps, b/s, Kbps, Kb/s, "
                               "Mbps, Mb/s, Gbps, Gb/s or a byte rate (Bps, KB/s, MB/s, GB/s, ...)",
                               text));
}

Ns3Topology read_ns3_topology(const std::string& path) {
  if (path.empty()) throw InputError("topology.kind = \"ns3\" needs topology.file, the ns-3 model's topology.txt");
  const std::string text = read_input(path, "ns-3 topology", kTableBytes);
  std::size_t at = 0, line = 1;
  std::string word;
  const auto word_of = [&](const char* what) {
    if (!next_word(text, at, line, word))
      throw InputError(fmt::format("{}:{}: the file ends where {} was expected", path, line, what));
    return word;
  };
  const auto number = [&](const char* what, std::uint64_t max) {
    const std::string w = word_of(what);
    if (w.empty() || w.size() > 10 || w.find_first_not_of("0123456789") != std::string::npos || std::stoull(w) > max)
      throw InputError(fmt::format("{}:{}: {}: expected a whole number 0..{}, got '{}'", path, line, what, max, w));
    return static_cast<std::uint32_t>(std::stoull(w));
  };
  Ns3Topology t;
  t.nodes = number("the number of nodes", kMaxHosts + 65536);
  const std::uint32_t switches = number("the number of switches", t.nodes);
  const std::uint32_t links = number("the number of links", 16u << 20);
  t.is_switch.assign(t.nodes, false);
  for (std::uint32_t s = 0; s < switches; ++s) {
    const std::uint32_t id = number("a switch's node id", t.nodes - 1);
    if (t.is_switch[id]) throw InputError(fmt::format("{}:{}: switch {} is listed twice", path, line, id));
    t.is_switch[id] = true;
  }
  if (t.hosts() < 2) throw InputError(fmt::format("{}: {} host(s): a network needs two at least", path, t.hosts()));
  std::vector<std::uint32_t> host_links(t.nodes, 0);
  for (std::uint32_t k = 0; k < links; ++k) {
    Ns3Topology::Link l{};
    l.a = number("a link's first node", t.nodes - 1);
    const std::size_t at_line = line;
    l.b = number("a link's second node", t.nodes - 1);
    if (l.a == l.b) throw InputError(fmt::format("{}:{}: a link from node {} to itself", path, at_line, l.a));
    try {
      l.rate = parse_ns3_data_rate(word_of("a link's rate"));
      l.delay = parse_time(word_of("a link's delay"));
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}:{}: {}", path, line, e.what()));
    }
    if (l.rate.bps() <= 0) throw InputError(fmt::format("{}:{}: a link's rate must be positive", path, line));
    const std::string error = word_of("a link's error rate");
    char* end = nullptr;
    const double e = std::strtod(error.c_str(), &end);
    if (end != error.c_str() + error.size() || !(e >= 0))
      throw InputError(fmt::format("{}:{}: error rate '{}': expected a number", path, line, error));
    if (e != 0)
      throw InputError(fmt::format("{}:{}: error rate {}: random loss on every link is not modelled (impair.* drops "
                                   "on one link); write 0",
                                   path, line, error));
    for (const std::uint32_t n : {l.a, l.b})
      if (!t.is_switch[n] && ++host_links[n] > 1)
        throw InputError(fmt::format("{}:{}: host node {} has a second link: a host has one NIC port", path, line, n));
    t.links.push_back(l);
  }
  for (std::uint32_t n = 0; n < t.nodes; ++n)
    if (!t.is_switch[n] && host_links[n] == 0) throw InputError(fmt::format("{}: host node {} has no link", path, n));
  if (next_word(text, at, line, word))
    throw InputError(fmt::format("{}:{}: '{}' after the {} links the first line announces", path, line, word, links));
  return t;
}

void build_topology(Network& net, const TopologySpec& t) {
  build_shape(net, t);
  std::vector<const Port*> set;  // the links given so far, by the end named
  for (const LinkRate& r : t.link_rates) {
    Node* node = nullptr;
    for (std::uint32_t h = 0; h < net.host_count() && !node; ++h)
      if (net.host(h).name() == r.node) node = &net.host(h);
    for (std::uint32_t s = 0; s < net.switch_count() && !node; ++s)
      if (net.switch_at(s).name() == r.node) node = &net.switch_at(s);
    if (!node) throw InputError("topology.link_rates: no node '" + r.node + "' in this topology");
    if (r.port >= node->port_count())
      throw InputError("topology.link_rates: " + r.node + " has no port " + std::to_string(r.port) + " (it has " +
                       std::to_string(node->port_count()) + ")");
    Port& end = node->port(r.port);
    for (const Port* other : set)
      if (other == &end || other == end.peer())
        throw InputError("topology.link_rates: the link at " + r.node + ":" + std::to_string(r.port) +
                         " is given twice (an item per link, either end)");
    set.push_back(&end);
    Port::set_link_rate(end, r.rate);
  }
}

namespace {

void build_shape(Network& net, const TopologySpec& t) {
  if (net.host_count() != 0 || net.switch_count() != 0) throw std::logic_error("build_topology: network not empty");
  const std::uint32_t hosts = host_count(t);
  check_port_counts(t);
  const LinkSpec& hl = t.host_link;
  const LinkSpec& fl = t.fabric_link;
  auto host = [&](std::uint32_t h) -> Node& { return net.host(h); };
  auto sw = [&](std::uint32_t s) -> Node& { return net.switch_at(s); };

  switch (t.kind) {
    case TopologyKind::back_to_back:
      net.add_host();
      net.add_host();
      net.connect(host(0), host(1), hl.rate, hl.delay);
      return;
    case TopologyKind::single_switch: {
      at_least(t.hosts, 2, "hosts");
      for (std::uint32_t h = 0; h < hosts; ++h) net.add_host();
      net.add_switch("sw0");
      for (std::uint32_t h = 0; h < hosts; ++h) net.connect(host(h), sw(0), hl.rate, hl.delay);
      return;
    }
    case TopologyKind::two_switches: {
      at_least(t.s1_hosts, 1, "s1_hosts");
      at_least(t.s2_hosts, 1, "s2_hosts");
      at_least(t.inter_switch_links, 1, "inter_switch_links");
      for (std::uint32_t h = 0; h < hosts; ++h) net.add_host();
      net.add_switch("s1");
      net.add_switch("s2");
      for (std::uint32_t h = 0; h < hosts; ++h) net.connect(host(h), sw(h < t.s1_hosts ? 0 : 1), hl.rate, hl.delay);
      for (std::uint32_t l = 0; l < t.inter_switch_links; ++l) net.connect(sw(0), sw(1), fl.rate, fl.delay);
      return;
    }
    case TopologyKind::leaf_spine: {
      at_least(t.leaves, 1, "leaves");
      at_least(t.spines, 1, "spines");
      at_least(t.hosts_per_leaf, 1, "hosts_per_leaf");
      at_least(t.uplinks, 1, "uplinks");
      if (hosts < 2) throw InputError("topology: a leaf-spine needs at least two hosts");
      for (std::uint32_t h = 0; h < hosts; ++h) net.add_host();
      for (std::uint32_t l = 0; l < t.leaves; ++l) net.add_switch("leaf" + std::to_string(l));
      for (std::uint32_t s = 0; s < t.spines; ++s) net.add_switch("spine" + std::to_string(s));
      for (std::uint32_t h = 0; h < hosts; ++h) net.connect(host(h), sw(h / t.hosts_per_leaf), hl.rate, hl.delay);
      for (std::uint32_t l = 0; l < t.leaves; ++l)
        for (std::uint32_t s = 0; s < t.spines; ++s)
          for (std::uint32_t u = 0; u < t.uplinks; ++u) net.connect(sw(l), sw(t.leaves + s), fl.rate, fl.delay);
      return;
    }
    case TopologyKind::ring: {
      at_least(t.ring_switches, 3, "ring_switches");
      at_least(t.hosts_per_switch, 1, "hosts_per_switch");
      for (std::uint32_t h = 0; h < hosts; ++h) net.add_host();
      for (std::uint32_t s = 0; s < t.ring_switches; ++s) net.add_switch("sw" + std::to_string(s));
      for (std::uint32_t h = 0; h < hosts; ++h) net.connect(host(h), sw(h / t.hosts_per_switch), hl.rate, hl.delay);
      for (std::uint32_t s = 0; s < t.ring_switches; ++s)
        net.connect(sw(s), sw((s + 1) % t.ring_switches), fl.rate, fl.delay);
      return;
    }
    case TopologyKind::fat_tree: {
      if (t.k < 2 || t.k % 2 != 0) throw InputError("topology.k must be even and at least 2");
      const std::uint32_t half = t.k / 2;
      for (std::uint32_t h = 0; h < hosts; ++h) net.add_host();
      // Switch numbering: edges (pod-major), then aggregations, then cores.
      for (std::uint32_t p = 0; p < t.k; ++p)
        for (std::uint32_t e = 0; e < half; ++e) net.add_switch("edge" + std::to_string(p) + "_" + std::to_string(e));
      for (std::uint32_t p = 0; p < t.k; ++p)
        for (std::uint32_t a = 0; a < half; ++a) net.add_switch("agg" + std::to_string(p) + "_" + std::to_string(a));
      for (std::uint32_t c = 0; c < half * half; ++c) net.add_switch("core" + std::to_string(c));
      const std::uint32_t edges = t.k * half, aggs = t.k * half;
      for (std::uint32_t h = 0; h < hosts; ++h) net.connect(host(h), sw(h / half), hl.rate, hl.delay);
      for (std::uint32_t p = 0; p < t.k; ++p)
        for (std::uint32_t e = 0; e < half; ++e)
          for (std::uint32_t a = 0; a < half; ++a)
            net.connect(sw(p * half + e), sw(edges + p * half + a), fl.rate, fl.delay);
      for (std::uint32_t p = 0; p < t.k; ++p)
        for (std::uint32_t a = 0; a < half; ++a)
          for (std::uint32_t c = 0; c < half; ++c)
            net.connect(sw(edges + p * half + a), sw(edges + aggs + a * half + c), fl.rate, fl.delay);
      return;
    }
    case TopologyKind::ns3: {
      const Ns3Topology n = read_ns3_topology(t.file);
      // Hosts first, then switches, each in node-id order.
      std::vector<Node*> node(n.nodes);
      for (std::uint32_t id = 0; id < n.nodes; ++id)
        if (!n.is_switch[id]) node[id] = &net.host(net.add_host());
      for (std::uint32_t id = 0; id < n.nodes; ++id)
        if (n.is_switch[id]) node[id] = &net.switch_at(net.add_switch("n" + std::to_string(id)));
      for (const auto& l : n.links) net.connect(*node[l.a], *node[l.b], l.rate, l.delay);
      return;
    }
  }
}

}  // namespace

}  // namespace fabriclab::fabric
