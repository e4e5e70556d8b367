// The parameters of the traffic generator, declared once beside TrafficSpec
// (core/params.h); keys relative to it ("bytes", "training.iterations").
#pragma once

#include "core/params.h"
#include "workload/traffic.h"

namespace fabriclab::workload {

const params::Table<TrafficSpec>& traffic_table();

}  // namespace fabriclab::workload
