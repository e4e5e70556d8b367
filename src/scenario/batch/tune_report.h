// What `fabriclab tune` writes beside its table: the tuned settings in the forms a NIC
// and a switch take, and the plots of the search (scenario/batch/tune.h).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "scenario/batch/tune.h"

namespace fabriclab::scenario {

// The tuned values of nic.roce_rp.* and nic.roce_np.* as the lines that set them on a
// ConnectX NIC (mlx5 sysfs: /sys/class/net/$IF/ecn/roce_rp|roce_np/NAME; the keys share
// the firmware's names), in a script for one interface; keys without such a file are
// named in a comment. Empty when no dimension is a NIC key.
std::string nic_sysfs_script(const std::vector<TuneParam>& space, const std::vector<std::string>& values);

// The tuned switch.wred.*, switch.mmu.dynamic_th, switch.pfc.xon_offset and
// switch.pfc.headroom_size as SONiC CONFIG_DB tables (WRED_PROFILE AZURE_LOSSLESS and the
// lossless BUFFER_PROFILE, for `sudo config load`), bytes as integers. Empty when no
// dimension is such a key.
std::string sonic_config_json(const std::vector<TuneParam>& space, const std::vector<std::string>& values);

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
