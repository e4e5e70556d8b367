#include "fabric/topology.h"

#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"

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
  }
  if (n > kMaxHosts) throw InputError("the topology has " + std::to_string(n) + " hosts (at most 2^20)");
  return static_cast<std::uint32_t>(n);
}

void build_topology(Network& net, const TopologySpec& t) {
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
  }
}

}  // namespace fabriclab::fabric
