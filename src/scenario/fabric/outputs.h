// The files of a fabric run: flows.csv, ports.csv and summary.json, from the network after
// its run (internal to scenario/fabric).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "fabric/counters.h"
#include "fabric/network.h"
#include "scenario/fabric/fabric_scenario.h"
#include "scenario/fabric/slowdown.h"
#include "scenario/report/files.h"
#include "scenario/observers/reorder_recorder.h"

namespace fabriclab::scenario {

// flows.csv, into `out` a piece at a time when given; sets o.retransmitted and the FCT
// percentiles.
void flows_csv(fabric::Network& net, FabricOutcome& o, const Slowdowns& slow, FileWriter* out);
// traffic_matrix.csv (output.traffic_matrix): src,dst,bytes -- the payload the flows placed
// per pair of hosts, by host name, pairs in order, none of 0 bytes: the file a [[load]]
// of pairs = "matrix" reads (workload/load.h).
std::string traffic_matrix_csv(const fabric::Network& net);
// ports.csv (PortCounters' fields); `all` gets every port's counts added up. Throws
// std::logic_error when the ports' drops and the ledger's drops by reason disagree.
std::string ports_csv(const fabric::Network& net, fabric::PortCounters& all);
// summary.json; `all`: every port's counts (ports_csv); `reorder` when
// output.reorder_metrics watched ports.
nlohmann::ordered_json summary_json(const FabricSetup& setup, const std::string& scenario, fabric::Network& net,
                                    const FabricOutcome& o, const fabric::PortCounters& all,
                                    const ReorderRecorder* reorder, const Slowdowns& slow);

}  // namespace fabriclab::scenario
