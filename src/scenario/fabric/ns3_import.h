// `fabriclab import-ns3 CONFIG.txt --out DIR`: a folder of the HPCC ns-3 RDMA model's
// inputs (alibaba-edu/High-Precision-Congestion-Control, simulation/scratch/third.cc, which
// SimAI and the ASTRA-sim ns-3 backend inherit) as a fabriclab scenario.
//
//   config.txt    "KEY VALUE..." a line (a '#' line, and the rest of a line from '{', are
//                 comments: config_doc.txt's "KEY VALUE {meaning}"); every key third.cc reads is mapped (the table in
//                 docs/fabric.md, "Importing the ns-3 model's inputs"), or refused naming
//                 the key and its line when fabriclab cannot do what the value asks.
//   TOPOLOGY_FILE its topology.txt (fabric::read_ns3_topology): a single switch with the
//                 hosts on its ports in order, all links alike, becomes topology.kind =
//                 "single_switch" (its switch is sw0, as the shape names it); any other
//                 graph is copied beside the scenario as topology.txt (topology.kind = "ns3").
//   FLOW_FILE     its flow.txt ("N", then "src dst pg dport size start" a line, sizes in
//                 bytes, start in seconds, ascending as the model needs them) becomes
//                 flows.csv (src,dst,bytes,start,priority,qps,dport: node ids as host
//                 indices, pg as the priority, dport kept for fct.txt).
//
// The file keys (TOPOLOGY_FILE, FLOW_FILE) are looked for relative to the config's folder,
// then to its parent (the model's layout: "mix/topology.txt" from simulation/), then to
// the working directory. Beyond config.txt, the scenario takes the model's mechanics where
// fabriclab has them as declared variants: its frames (48 header bytes, ACKs padded to
// 60, no gap, 43-byte PFC frames), its MMU (dynamic threshold 1/8 of the free buffer, 4 KiB
// reserve per queue, headroom 3 x the port's one-way BDP (headroom = "ns3"), resume 3 KiB below the limit,
// buffer freed as a packet starts out), its PFC (a pause holds until the resume, sent once),
// every priority a flow uses lossless, FCT to the sender's last ACK, and fct.txt/pfc.txt
// out. What still differs is listed in the scenario's header (and docs/fabric.md).
//
// The maps by link rate (KMIN_MAP, KMAX_MAP, PMAX_MAP) and the MMU's shift by port rate
// become switch.wred.by_rate and switch.mmu.dynamic_th_by_rate for the rates whose values
// differ from the NICs' rate's.
// Values the model takes that fabriclab can only approximate (ACKs on a class of their
// own, a window without VAR_WIN, ...) are
// errors naming the key, unless `approximate`: then each becomes a line of
// `approximations`, written in the scenario's header too. Keys the model reads that do
// not change a run (trace and queue-monitor files, DATA_RATE) are listed in `notes`.
#pragma once

#include <string>
#include <vector>

namespace fabriclab::scenario {

struct Ns3ImportOptions {
  bool approximate = false;
};

struct Ns3Import {
  std::string scenario;  // scenario.toml
  std::string flows;     // flows.csv
  std::string topology;  // topology.txt to write beside them ("" when the topology is a shape)
  std::vector<std::string> notes;
  std::vector<std::string> approximations;
};

// Throws InputError naming the file, line and key (every refused key at once, one a line).
Ns3Import import_ns3(const std::string& config_path, const Ns3ImportOptions& options = {});

// Writes scenario.toml, flows.csv and (for a graph) topology.txt into `dir` (made if
// missing); returns the scenario's path.
std::string write_ns3_import(const Ns3Import& imported, const std::string& dir);

}  // namespace fabriclab::scenario
