#pragma once
// train.sweep: the grid of parameter combinations, and how one combination reaches
// a job (KTRAIN_PARAM_* variables and {param} placeholders in the command). Shared by
// the renderer and the local backend so both run exactly the same commands.

#include <string>
#include <vector>

#include "project/project.h"

namespace ktrain::project {

/// One combination of a sweep.
struct SweepPoint {
  int index = -1;      ///< 0..n-1 in grid order (first parameter varies slowest); -1 = no sweep
  StringPairs params;  ///< parameter name -> value, in file order
};

/// Every combination of `train.sweep`; a single point with index -1 when there is no sweep.
std::vector<SweepPoint> sweep_points(const Train& train);

/// The environment variable that carries a parameter: "lr" -> "KTRAIN_PARAM_LR"
/// (upper-cased, anything but letters and digits becomes '_').
std::string param_env_name(const std::string& param);

/// `command` with each "{name}" of `params` replaced by its value.
std::vector<std::string> substitute_params(const std::vector<std::string>& command,
                                           const StringPairs& params);

/// The run name of one sweep point: "<base>" or "<base>-<index>".
std::string sweep_run_name(const std::string& base_run, const SweepPoint& point);

}  // namespace ktrain::project
