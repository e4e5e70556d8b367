#include "scenario/batch/tune_report.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "scenario/report/files.h"
#include "scenario/report/gnuplot.h"

namespace fabriclab::scenario {

namespace fs = std::filesystem;

namespace {

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

// A tuned value in its key's base unit, as an integer (bytes for SONiC).
std::string base_integer(const TuneParam& p, const std::string& text) {
  return std::to_string(std::llround(p.number(text)));
}

// The range of one axis: gnuplot's own, unless every value is the same (gnuplot then
// warns of an empty range on stderr): a range around that value.
std::string axis_range(char axis, const std::vector<double>& values, bool log = false) {
  double lo = INFINITY, hi = -INFINITY;
  for (double v : values)
    if (std::isfinite(v) && (!log || v > 0)) lo = std::min(lo, v), hi = std::max(hi, v);
  // No value at all (no trial scored): a fixed empty axis, as gnuplot cannot autoscale none.
  if (!std::isfinite(lo)) return fmt::format("set {}range [0:1]\n", axis);
  if (lo < hi) return fmt::format("set autoscale {}\n", axis);
  if (log) return fmt::format("set {}range [{:.9g}:{:.9g}]\n", axis, lo / 2, hi * 2);
  const double pad = std::max(1.0, std::fabs(lo) * 0.05);
  return fmt::format("set {}range [{:.9g}:{:.9g}]\n", axis, lo - pad, hi + pad);
}

}  // namespace

std::string nic_sysfs_script(const std::vector<TuneParam>& space, const std::vector<std::string>& values) {
  std::string lines, none;
  for (std::size_t d = 0; d < space.size(); ++d) {
    const std::string& key = space[d].key;
    for (const char* group : {"roce_rp", "roce_np"}) {
      const std::string prefix = fmt::format("nic.{}.", group);
      if (!starts_with(key, prefix)) continue;
      const std::string name = key.substr(prefix.size());
      // The files an mlx5 NIC has under ecn/roce_rp and ecn/roce_np; every other key is
      // fabriclab's own choice (a preset, a model variant), not a firmware file.
      static const std::set<std::string> sysfs{"clamp_tgt_rate",
                                               "clamp_tgt_rate_after_time_inc",
                                               "dce_tcp_g",
                                               "dce_tcp_rtt",
                                               "initial_alpha_value",
                                               "rate_reduce_monitor_period",
                                               "rate_to_set_on_first_cnp",
                                               "rpg_ai_rate",
                                               "rpg_byte_reset",
                                               "rpg_gd",
                                               "rpg_hai_rate",
                                               "rpg_max_rate",
                                               "rpg_min_dec_fac",
                                               "rpg_min_rate",
                                               "rpg_threshold",
                                               "rpg_time_reset",
                                               "cnp_802p_prio",
                                               "cnp_dscp",
                                               "min_time_between_cnps"};
      if (!sysfs.count(name)) {
        none += fmt::format("#   {} = {}\n", key, values[d]);
        continue;
      }
      // A rate key's value in Mb/s, written as it is when whole: a fraction (from a list of
      // choices) has no file it fits.
      if (space[d].unit != 1 && values[d].find('.') != std::string::npos) {
        none += fmt::format("#   {} = {} (Mb/s: a NIC takes whole Mb/s)\n", key, values[d]);
        continue;
      }
      lines += fmt::format("echo {} > \"/sys/class/net/$IF/ecn/{}/{}\"\n", values[d], group, name);
    }
  }
  if (lines.empty() && none.empty()) return "";
  std::string out = "#!/bin/sh\n"
                    "# The tuned DCQCN values on a ConnectX NIC (mlx5), as root: sh best-nic.sh IF\n"
                    "# Keys not tuned keep the firmware's values (fabriclab's nvidia preset models them).\n"
                    "set -e\n"
                    "IF=${1:?usage: best-nic.sh INTERFACE}\n" +
                    lines;
  if (!none.empty()) out += "# Tuned, with no sysfs file (fabriclab's model choices):\n" + none;
  return out;
}

std::string sonic_config_json(const std::vector<TuneParam>& space, const std::vector<std::string>& values,
                              const std::function<std::string(const std::string&)>& shown, std::string* left_out) {
  nlohmann::ordered_json wred, buffer;
  bool scheduler = false;
  for (std::size_t d = 0; d < space.size(); ++d) {
    const TuneParam& p = space[d];
    const std::string& key = p.key;
    if (starts_with(key, "switch.wred.")) {
      const std::string name = key.substr(12);
      if (name == "mark_at" || name == "queue_bytes") continue;  // how fabriclab measures the queue: no SONiC field
      const bool bytes = p.kind == params::Kind::bytes;
      wred[name] = bytes ? base_integer(p, values[d]) : values[d];
    } else if (key == "switch.mmu.dynamic_th") {
      buffer["dynamic_th"] = values[d];
    } else if (key == "switch.pfc.xon_offset") {
      buffer["xon_offset"] = base_integer(p, values[d]);
    } else if (key == "switch.pfc.headroom_size") {
      // Used only with a given headroom; with "auto" SONiC's buffer manager sizes it from
      // the port's speed and cable, as fabriclab's formula does.
      if (shown("switch.pfc.headroom") == "given") buffer["xoff"] = base_integer(p, values[d]);
    } else if (key == "switch.dwrr.weights" || key == "switch.dwrr.strict") {
      scheduler = shown("switch.scheduler") == "dwrr";
    }
  }
  nlohmann::ordered_json schedulers;
  if (scheduler) {
    const auto list = [&](const std::string& key) {
      std::vector<std::string> out;
      std::string item;
      std::istringstream in(shown(key));
      while (std::getline(in, item, ',')) out.push_back(item);
      return out;
    };
    const std::vector<std::string> weights = list("switch.dwrr.weights"), strict = list("switch.dwrr.strict");
    // SONiC keeps a scheduler's weight in 8 bits (orchagent stores it as a uint8): a larger
    // one would be cut silently, so the profiles are left out and the report says why.
    const bool fits = std::all_of(weights.begin(), weights.end(),
                                  [](const std::string& w) { return std::stol(w) <= 255; });
    if (!fits && left_out)
      *left_out = fmt::format("the DWRR weights {} are not written as SONiC schedulers: SONiC takes weights up to 255",
                              shown("switch.dwrr.weights"));
    for (std::size_t q = 0; fits && q < weights.size(); ++q) {
      const bool is_strict = std::find(strict.begin(), strict.end(), std::to_string(q)) != strict.end();
      schedulers[fmt::format("fabriclab.q{}", q)] = is_strict ? nlohmann::ordered_json{{"type", "STRICT"}}
                                                              : nlohmann::ordered_json{{"type", "DWRR"},
                                                                                       {"weight", weights[q]}};
    }
  }
  if (wred.empty() && buffer.empty() && schedulers.empty()) return "";
  nlohmann::ordered_json db;
  if (!wred.empty()) {
    wred["wred_green_enable"] = "true";
    db["WRED_PROFILE"]["AZURE_LOSSLESS"] = wred;
  }
  if (!buffer.empty()) db["BUFFER_PROFILE"]["pg_lossless_tuned_profile"] = buffer;
  if (!schedulers.empty()) db["SCHEDULER"] = schedulers;
  return db.dump(4) + "\n";
}

std::vector<std::size_t> pareto_front(const std::vector<TrialPoint>& trials) {
  std::vector<std::size_t> run;
  for (std::size_t i = 0; i < trials.size(); ++i)
    if (trials[i].valid && std::isfinite(trials[i].goodput_gbps) && std::isfinite(trials[i].pause_frames))
      run.push_back(i);
  std::vector<std::size_t> front;
  for (std::size_t i : run) {
    bool dominated = false;
    for (std::size_t j : run) {
      const TrialPoint &a = trials[i], &b = trials[j];
      if (b.goodput_gbps >= a.goodput_gbps && b.pause_frames <= a.pause_frames &&
          (b.goodput_gbps > a.goodput_gbps || b.pause_frames < a.pause_frames)) {
        dominated = true;
        break;
      }
    }
    // Among equal points, the first.
    for (std::size_t j : front)
      dominated = dominated || (trials[j].goodput_gbps == trials[i].goodput_gbps &&
                                trials[j].pause_frames == trials[i].pause_frames);
    if (!dominated) front.push_back(i);
  }
  std::sort(front.begin(), front.end(),
            [&](std::size_t a, std::size_t b) { return trials[a].goodput_gbps < trials[b].goodput_gbps; });
  return front;
}

void draw_tune_plots(const fs::path& dir, const std::vector<TuneParam>& space, const std::vector<TrialPoint>& trials) {
  // The axes' values, of the trials that ran.
  std::vector<double> index, objective, goodput, pauses;
  for (std::size_t i = 0; i < trials.size(); ++i)
    if (trials[i].valid) {
      index.push_back(static_cast<double>(i));
      objective.push_back(trials[i].objective);
      goodput.push_back(trials[i].goodput_gbps);
      pauses.push_back(trials[i].pause_frames);
    }
  // objective.dat: trial, objective, feasible, best so far ("NaN" where there is none).
  std::string obj = "# trial objective feasible best_so_far\n";
  double best = -INFINITY;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const TrialPoint& t = trials[i];
    if (t.feasible) best = std::max(best, t.objective);
    obj += fmt::format("{} {} {} {}\n", i, t.valid ? fmt::format("{:.6g}", t.objective) : "NaN", t.feasible ? 1 : 0,
                       std::isfinite(best) ? fmt::format("{:.6g}", best) : "NaN");
  }
  write_file(dir / "objective.dat", obj);
  draw_plot(dir, "objective",
            axis_range('x', index) + axis_range('y', objective) +
                (std::none_of(objective.begin(), objective.end(), [](double v) { return std::isfinite(v); })
                     ? "set label 1 'no trial was scored' at graph 0.5, 0.5 center\n"
                     : "") +
                "set xlabel 'trial'\nset ylabel 'objective'\nset key bottom right\n"
                "plot 'objective.dat' using 1:($3 == 1 ? $2 : 1/0) with points pt 7 title 'feasible', "
                "'' using 1:($3 == 0 ? $2 : 1/0) with points pt 6 title 'infeasible', "
                "'' using 1:4 with steps lw 2 title 'best feasible so far'\n");

  std::string trade = "# trial goodput_gbps pause_frames\n";
  for (std::size_t i = 0; i < trials.size(); ++i)
    if (trials[i].valid && std::isfinite(trials[i].goodput_gbps))
      trade += fmt::format("{} {:.6g} {:.6g}\n", i, trials[i].goodput_gbps, trials[i].pause_frames);
  std::string front = "# trial goodput_gbps pause_frames\n";
  for (std::size_t i : pareto_front(trials))
    front += fmt::format("{} {:.6g} {:.6g}\n", i, trials[i].goodput_gbps, trials[i].pause_frames);
  write_file(dir / "tradeoff.dat", trade);
  write_file(dir / "pareto.dat", front);
  draw_plot(
      dir, "tradeoff",
      axis_range('x', pauses) + axis_range('y', goodput) +
          "set xlabel 'PFC pause frames (mean over seeds)'\nset ylabel 'aggregate goodput (Gb/s)'\nset key bottom "
          "right\n"
          "plot 'tradeoff.dat' using 3:2 with points pt 7 title 'trials', "
          "'pareto.dat' using 3:2 with linespoints lw 2 pt 5 title 'Pareto front'\n");

  // sensitivity: one panel per dimension, the objective of the valid trials against it
  // (a choice by its index).
  std::string sens = "# trial objective feasible then one column per dimension\n";
  std::vector<std::vector<double>> columns(space.size());
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const TrialPoint& t = trials[i];
    if (!t.valid) continue;
    sens += fmt::format("{} {:.6g} {}", i, t.objective, t.feasible ? 1 : 0);
    for (std::size_t d = 0; d < space.size(); ++d) {
      const TuneParam& p = space[d];
      if (p.scale == TuneParam::Scale::choice) {
        const auto at = std::find(p.choices.begin(), p.choices.end(), t.values[d]) - p.choices.begin();
        sens += fmt::format(" {}", at);
      } else {
        columns[d].push_back(p.number(t.values[d]));
        sens += fmt::format(" {:.9g}", columns[d].back());
      }
    }
    sens += "\n";
  }
  write_file(dir / "sensitivity.dat", sens);
  const std::size_t cols = std::min<std::size_t>(3, space.size()), rows = (space.size() + cols - 1) / cols;
  std::string body =
      fmt::format("set term pngcairo size {},{} noenhanced font 'sans,10'\nset output 'sensitivity.png'\n"
                  "set multiplot layout {},{}\nset ylabel 'objective'\nunset key\n{}",
                  420 * cols, 320 * rows, rows, cols, axis_range('y', objective));
  for (std::size_t d = 0; d < space.size(); ++d) {
    const TuneParam& p = space[d];
    const std::string unit = p.kind == params::Kind::time    ? " (ps)"
                             : p.kind == params::Kind::bytes ? " (B)"
                             : p.kind == params::Kind::rate  ? " (b/s)"
                             : p.unit_name == "Mbps"         ? " (Mb/s)"
                             : !p.unit_name.empty()          ? " (" + p.unit_name + ")"
                                                             : std::string();
    body += fmt::format("set xlabel '{}{}'\n", p.key, unit);
    body += p.scale == TuneParam::Scale::log ? "set logscale x\n" : "unset logscale x\n";
    if (p.scale == TuneParam::Scale::choice) {
      std::string tics;
      for (std::size_t c = 0; c < p.choices.size(); ++c)
        tics += fmt::format("{}'{}' {}", c ? ", " : "", p.choices[c], c);
      body += fmt::format("set xtics ({})\nset xrange [-0.5:{}]\n", tics, static_cast<double>(p.choices.size()) - 0.5);
    } else {
      body += "set xtics autofreq\n" + axis_range('x', columns[d], p.scale == TuneParam::Scale::log);
    }
    body += fmt::format(
        "plot 'sensitivity.dat' using {0}:($3 == 1 ? $2 : 1/0) with points pt 7, '' using {0}:($3 == 0 ? $2 : 1/0) "
        "with points pt 6\n",
        d + 4);
  }
  body += "unset multiplot\n";
  draw_plot(dir, "sensitivity", body);
}

}  // namespace fabriclab::scenario
