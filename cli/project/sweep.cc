#include "project/sweep.h"

#include <cctype>

namespace ktrain::project {

std::vector<SweepPoint> sweep_points(const Train& train) {
  std::vector<SweepPoint> points;
  if (train.sweep.empty()) {
    points.push_back(SweepPoint{});
    return points;
  }
  // Odometer over the parameters; the last one varies fastest.
  std::vector<size_t> at(train.sweep.size(), 0);
  for (const auto& p : train.sweep) {
    if (p.values.empty()) return {};
  }
  for (int index = 0;; ++index) {
    SweepPoint point;
    point.index = index;
    for (size_t i = 0; i < train.sweep.size(); ++i) {
      point.params.emplace_back(train.sweep[i].name, train.sweep[i].values[at[i]]);
    }
    points.push_back(std::move(point));
    size_t i = train.sweep.size();
    while (i > 0) {
      --i;
      if (++at[i] < train.sweep[i].values.size()) break;
      at[i] = 0;
      if (i == 0) return points;
    }
  }
}

std::string param_env_name(const std::string& param) {
  std::string name = "KTRAIN_PARAM_";
  for (unsigned char c : param) {
    name += std::isalnum(c) ? static_cast<char>(std::toupper(c)) : '_';
  }
  return name;
}

std::vector<std::string> substitute_params(const std::vector<std::string>& command,
                                           const StringPairs& params) {
  std::vector<std::string> out;
  out.reserve(command.size());
  for (std::string arg : command) {
    for (const auto& [name, value] : params) {
      const std::string placeholder = "{" + name + "}";
      for (size_t pos = arg.find(placeholder); pos != std::string::npos;
           pos = arg.find(placeholder, pos + value.size())) {
        arg.replace(pos, placeholder.size(), value);
      }
    }
    out.push_back(std::move(arg));
  }
  return out;
}

std::string sweep_run_name(const std::string& base_run, const SweepPoint& point) {
  if (point.index < 0) return base_run;
  return base_run + "-" + std::to_string(point.index);
}

}  // namespace ktrain::project
