// The parameters of the timed NIC model, declared once beside NicParams (core/params.h).
// The model's keys span the NIC ("nic.counters"), the network ("network.latency") and
// the host's software path ("host.poll").
#pragma once

#include "core/params.h"
#include "nicmodel/model.h"

namespace fabriclab::nicmodel {

// Every key of the timed model.
const params::Table<NicParams>& nic_params_table();
// The NIC's and host's keys only (not network.*): what the packet-level fabric, which
// times messages itself, takes from the model.
const params::Table<NicParams>& nic_resources_table();

}  // namespace fabriclab::nicmodel
