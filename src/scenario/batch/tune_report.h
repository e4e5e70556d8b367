// What `fabriclab tune` writes beside its table: the tuned settings in the forms a NIC
// and a switch take, and the plots of the search (scenario/batch/tune.h).
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "scenario/batch/tune.h"

namespace fabriclab::scenario {

// The tuned values of nic.roce_rp.* and nic.roce_np.* as the lines that set them on a
// ConnectX NIC (mlx5 sysfs: /sys/class/net/$IF/ecn/roce_rp|roce_np/NAME; the keys share
// the firmware's names), in a script for one interface; keys without such a file are
// named in a comment. Empty when no dimension is a NIC key.
std::string nic_sysfs_script(const std::vector<TuneParam>& space, const std::vector<std::string>& values);

// The tuned switch.wred.*, switch.mmu.dynamic_th, switch.pfc.xon_offset,
// switch.pfc.headroom_size and switch.dwrr.* as SONiC CONFIG_DB tables (WRED_PROFILE
// AZURE_LOSSLESS, the lossless BUFFER_PROFILE, SCHEDULER profiles fabriclab.q0..q7 to
// bind to a port's queues), for `sudo config load`, bytes as integers. `shown` gives any
// key's value in the tuned settings (the scenario with them): the headroom's size is the
// profile's xoff only when switch.pfc.headroom is "given", the DWRR values are
// schedulers only when switch.scheduler is "dwrr" and every weight fits SONiC's 8 bits
// (else `left_out` says why they are not written). Empty when nothing applies.
std::string sonic_config_json(const std::vector<TuneParam>& space, const std::vector<std::string>& values,
                              const std::function<std::string(const std::string&)>& shown,
                              std::string* left_out = nullptr);

// One trial as the plots see it.
struct TrialPoint {
  std::vector<std::string> values;
  double objective = 0;
  bool feasible = false, valid = true;
  double goodput_gbps = 0, pause_frames = 0;  // means over the trial's seeds (NaN: not run)
};

// DIR/objective.png (objective per trial, the best so far), DIR/tradeoff.png (goodput
// against PFC pause frames, the Pareto front: no other trial has more goodput and fewer
// pauses) and DIR/sensitivity.png (the objective against each dimension). Throws
// InputError if gnuplot fails.
void draw_tune_plots(const std::filesystem::path& dir, const std::vector<TuneParam>& space,
                     const std::vector<TrialPoint>& trials);

// The indices of the Pareto front of (maximise goodput, minimise pauses), by goodput.
std::vector<std::size_t> pareto_front(const std::vector<TrialPoint>& trials);

}  // namespace fabriclab::scenario
