// exec::Nic on libfabric: an RDM endpoint with FI_RMA | FI_ATOMIC | FI_TRIGGER |
// FI_RMA_EVENT | FI_MSG, counters from fi_cntr_open, the window registered once per
// arrival counter (fi_mr_bind with FI_REMOTE_WRITE), triggered operations queued as
// deferred work (fi_control FI_QUEUE_WORK), software operations posted with
// FI_DELIVERY_COMPLETE and notifications sent as 8-byte messages.
//
// Debian's libfabric 1.17 has one provider with triggered operations, `sockets`
// (software triggers over TCP: correct, not offloaded). Its quirks, which this backend
// works around, are in shared/docs/triggered-ops.md section 7.
#pragma once

#include <memory>
#include <string>

#include "exec/nic.h"

namespace fabriclab::backends {

// Opens `provider` on 127.0.0.1. Throws InputError when the provider is missing or lacks
// the capabilities (naming what is missing) or cannot do SUM atomics on `dt`.
std::unique_ptr<exec::Nic> open_libfabric_nic(const std::string& provider, offload::Datatype dt);

}  // namespace fabriclab::backends
