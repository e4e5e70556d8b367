// The HPCC ns-3 RDMA model's output formats (scratch/third.cc of
// alibaba-edu/High-Precision-Congestion-Control, which SimAI and the ASTRA-sim ns-3
// backend inherit), written beside fabriclab's own outputs with output.ns3 = true, so
// that the scripts written for that model (its analysis/fct_analysis.py) read our runs.
//
//   fct.txt  one line per finished flow, in finish order (ties: flow id):
//            "%08x %08x %u %u %lu %lu %lu %lu": source IP, destination IP, UDP source
//            port, destination port, size (bytes), start time (ns), FCT (ns), standalone
//            FCT (ns). A host's IP is the model's node_id_to_ip: 0x0b000001 + (h / 256)
//            x 0x10000 + (h % 256) x 0x100 for host index h (the file's node id when the
//            topology numbers its hosts first, as the model's generators do; after
//            topology.kind = "ns3" renumbered switches-first ids, fabriclab's); the source port is the flow's first
//            QP's (what a capture shows); the destination port is the flow's `dport` (100 unless a flows file's
//            dport column gives another: what the model's traffic generator gives every flow). The FCT ends where
//            flows.csv's does (nic.flow_end; the model's ends at the sender's last ACK: nic.flow_end =
//            last_ack_received matches it). The standalone FCT is fabriclab's ideal FCT (flows.csv's ideal_fct_ns: the
//            flow alone on the idle network), not the model's base RTT + bytes with headers / bottleneck rate, so that
//            fct / standalone is flows.csv's slowdown. Times truncated to the ns.
//   pfc.txt  one line per PFC frame a port received (per class it names), in time order
//            (ties: node, port, arrival): "%lu %u %u %u %u": time (ns), node id
//            (fabriclab's: hosts first, then switches), node type (0 host, 1 switch), interface index (the port + 1:
//            the model's device 0 is the loopback), 1 pause / 0 resume (zero quanta) -- the model's QbbNetDevice
//            "QbbPfc" trace, which get_pfc writes.
#pragma once

#include <string>

#include "fabric/network.h"
#include "scenario/fabric/slowdown.h"

namespace fabriclab::scenario {

// The model's address of host h.
std::uint32_t ns3_host_ip(std::uint32_t h);

std::string ns3_fct_txt(const fabric::Network& net, const Slowdowns& slow);
std::string ns3_pfc_txt(const fabric::Network& net);

}  // namespace fabriclab::scenario
