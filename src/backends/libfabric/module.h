// The libfabric backend is a module, libfabriclab_libfabric.so beside the fabriclab
// binary, that `fabriclab exec` loads when it needs a NIC: linked into the binary,
// libfabric's providers (libinfinipath, through PSM) cost every command 0.2 s before
// main() and installed their signal handlers in every process.
//
//   exec::NicFactory open = backends::load_libfabric_backend();
//   auto nic = open("sockets", offload::Datatype::int64);
#pragma once

#include "exec/nic.h"

namespace fabriclab::backends {

// The module's open_libfabric_nic (libfabric_nic.h), loaded once. InputError naming the
// file and the loader's reason when it cannot be loaded.
exec::NicFactory load_libfabric_backend();

}  // namespace fabriclab::backends

// What the module exports, unmangled, for dlsym: its open_libfabric_nic.
extern "C" fabriclab::exec::NicFactory fabriclab_libfabric_backend();
