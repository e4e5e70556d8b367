// Plots drawn by gnuplot, a script beside each PNG so that a plot can be restyled and
// redrawn by hand.
//
//   draw_plot(dir, "busbw", "plot 'busbw.dat' using 2:xtic(1) with boxes");
#pragma once

#include <filesystem>
#include <string>

namespace fabriclab::scenario {

// Writes DIR/STEM.gp -- a PNG terminal, `set output "STEM.png"`, then `body` -- and runs
// gnuplot on it in DIR. Throws InputError if gnuplot is missing or fails (its message
// names the script and quotes gnuplot's). gnuplot's warnings are not printed.
void draw_plot(const std::filesystem::path& dir, const std::string& stem, const std::string& body);

}  // namespace fabriclab::scenario
