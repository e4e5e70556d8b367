// Topology builders: each adds hosts (numbered 0..H-1, named h0, h1, ...), switches and
// links to an empty Network.
//   back_to_back   two hosts, one link
//   single_switch  `hosts` hosts on one switch (sw0)
//   two_switches   `s1_hosts` on s1, `s2_hosts` on s2, `inter_switch_links` parallel s1-s2 links
//   leaf_spine     `leaves` leaves of `hosts_per_leaf` hosts, `spines` spines, `uplinks`
//                  parallel links from every leaf to every spine (oversubscription =
//                  hosts_per_leaf x host_rate / (spines x uplinks x fabric_rate))
//   ring           `ring_switches` switches in a ring, `hosts_per_switch` hosts on each
//                  (shortest paths go both ways around: a classic PFC deadlock setting)
//   fat_tree       3-tier k-ary fat-tree (Al-Fares et al., SIGCOMM 2008): k pods of k/2
//                  edge and k/2 aggregation switches, (k/2)^2 cores, k^3/4 hosts
//   ns3            any graph, from `file`: the HPCC ns-3 RDMA model's topology.txt (its
//                  first line "NODES SWITCHES LINKS", then the switches' node ids, then a
//                  line per link "A B RATE DELAY ERROR_RATE", rates and delays with ns-3's
//                  units: "100Gbps", "0.001ms"); every node not named a switch is a host
//                  with one link. Hosts are numbered by node id (host index = its rank
//                  among the hosts, named hN), switches come after them in node-id order
//                  (named nID, the file's id), and ports in the order of the file's links,
//                  as ns-3 numbers a node's devices. Links at their own rate and delay
//                  (host_rate, fabric_rate, link_delay do not apply); an error rate other
//                  than 0 is refused (random loss is impair.*'s, on one link).
// Host links use `host_link`, switch-to-switch links `fabric_link`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/params.h"
#include "core/units.h"
#include "fabric/network.h"

namespace fabriclab::fabric {

enum class TopologyKind : std::uint8_t { back_to_back, single_switch, two_switches, leaf_spine, fat_tree, ring, ns3 };
inline constexpr params::EnumNames<TopologyKind, 7> kTopologyKindNames{{{TopologyKind::back_to_back, "back_to_back"},
                                                                        {TopologyKind::single_switch, "single_switch"},
                                                                        {TopologyKind::two_switches, "two_switches"},
                                                                        {TopologyKind::leaf_spine, "leaf_spine"},
                                                                        {TopologyKind::fat_tree, "fat_tree"},
                                                                        {TopologyKind::ring, "ring"},
                                                                        {TopologyKind::ns3, "ns3"}}};

struct LinkSpec {
  BitRate rate = BitRate::from_bps(100'000'000'000);
  Time delay = Time::from_ps(1'000'000);
};

// One link's rate set apart from its tier's (topology.link_rates): the link at port
// `port` of node `node`, both directions.
struct LinkRate {
  std::string node;
  std::uint32_t port = 0;
  BitRate rate;
  bool operator==(const LinkRate&) const = default;
};
// "leaf0:4=50Gbps,spine1:0=25Gbps" (empty: none); throws InputError naming the item.
std::vector<LinkRate> parse_link_rates(const std::string& list);
std::string link_rates_text(const std::vector<LinkRate>& v);

struct TopologySpec {
  TopologyKind kind = TopologyKind::single_switch;
  std::uint32_t hosts = 17;  // single_switch: an incast of 16 into 1
  std::uint32_t s1_hosts = 8, s2_hosts = 8, inter_switch_links = 1;
  std::uint32_t leaves = 4, spines = 2, hosts_per_leaf = 4, uplinks = 1;
  std::uint32_t k = 4;
  std::uint32_t ring_switches = 4, hosts_per_switch = 1;
  LinkSpec host_link, fabric_link;
  std::vector<LinkRate> link_rates;  // after the shape is built
  std::string file;                  // ns3: topology.txt
};

// An ns-3 topology.txt read and checked (InputError naming the file and line).
struct Ns3Topology {
  std::uint32_t nodes = 0;
  std::vector<bool> is_switch;  // by node id
  struct Link {
    std::uint32_t a, b;
    BitRate rate;
    Time delay;
  };
  std::vector<Link> links;
  std::uint32_t hosts() const;
};
Ns3Topology read_ns3_topology(const std::string& path);
// A rate as ns-3's DataRate writes it: a decimal and bps, b/s, kbps, kb/s, Kbps, Kb/s,
// Mbps, Mb/s, Gbps, Gb/s (bits, powers of 1000) or Bps, B/s, KBps, KB/s, kBps, kB/s, MBps,
// MB/s, GBps, GB/s (bytes); exact to the bit per second, else InputError.
BitRate parse_ns3_data_rate(std::string_view text);

TopologyKind parse_topology_kind(const std::string& name);  // throws InputError
const char* to_string(TopologyKind k);
// The number of hosts the spec builds.
std::uint32_t host_count(const TopologySpec& t);
// Throws InputError naming the parameter when the spec cannot be built.
void build_topology(Network& net, const TopologySpec& t);

}  // namespace fabriclab::fabric
