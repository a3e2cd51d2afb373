#include "base/cuda.h"

#include <charconv>
#include <tuple>
#include <utility>

namespace ktrain {

namespace {

/// A whole number of 1 to 3 digits at the front of `s`, which it leaves after it.
std::optional<int> small_number(std::string_view& s) {
  std::size_t n = 0;
  while (n < s.size() && n < 4 && s[n] >= '0' && s[n] <= '9') ++n;
  if (n == 0 || n > 3) return std::nullopt;
  int v = 0;
  std::from_chars(s.data(), s.data() + n, v);
  s.remove_prefix(n);
  return v;
}

std::string label_string(const nlohmann::json& labels, const char* key) {
  if (!labels.is_object()) return "";
  auto it = labels.find(key);
  return it != labels.end() && it->is_string() ? it->get<std::string>() : "";
}

/// The value of NAME=VALUE in an image config's Env, or nullopt.
std::optional<std::string> env_of(const nlohmann::json& config, std::string_view name) {
  auto it = config.find("Env");
  if (it == config.end() || !it->is_array()) return std::nullopt;
  for (const auto& e : *it) {
    if (!e.is_string()) continue;
    const std::string& s = e.get_ref<const std::string&>();
    if (s.size() > name.size() && s.compare(0, name.size(), name) == 0 && s[name.size()] == '=')
      return s.substr(name.size() + 1);
  }
  return std::nullopt;
}

nlohmann::ordered_json expr(const char* key, const char* op, std::vector<std::string> values) {
  nlohmann::ordered_json e = {{"key", key}, {"operator", op}};
  if (!values.empty()) e["values"] = values;
  return e;
}

}  // namespace

std::string CudaVersion::str() const {
  return std::to_string(major) + "." + std::to_string(minor);
}

std::optional<CudaVersion> parse_cuda_version(std::string_view s) {
  CudaVersion v;
  auto major = small_number(s);
  if (!major || *major == 0) return std::nullopt;
  v.major = *major;
  if (s.empty()) return v;
  if (s.front() != '.') return std::nullopt;
  s.remove_prefix(1);
  auto minor = small_number(s);
  if (!minor) return std::nullopt;
  v.minor = *minor;
  if (s.empty()) return v;
  if (s.front() != '.') return std::nullopt;
  s.remove_prefix(1);
  // A patch or build number: digits only ("12.1.105").
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  return v;
}

std::optional<ImageCuda> image_cuda(const nlohmann::json& config) {
  if (!config.is_object()) return std::nullopt;
  auto labels = config.find("Labels");
  if (labels != config.end()) {
    const std::string l = label_string(*labels, kImageCudaLabel);
    if (auto v = parse_cuda_version(l))
      return ImageCuda{*v, std::string("label ") + kImageCudaLabel};
  }
  if (auto e = env_of(config, "CUDA_VERSION")) {
    if (auto v = parse_cuda_version(*e)) return ImageCuda{*v, "CUDA_VERSION=" + *e};
  }
  if (auto e = env_of(config, "NVIDIA_REQUIRE_CUDA")) {
    // "cuda>=12.1 brand=tesla,driver>=470,driver<471 ..."
    const std::string_view req(*e);
    const std::size_t at = req.find("cuda>=");
    if (at != std::string_view::npos) {
      std::string_view rest = req.substr(at + 6);
      rest = rest.substr(0, rest.find_first_of(" ,"));
      if (auto v = parse_cuda_version(rest))
        return ImageCuda{*v, "NVIDIA_REQUIRE_CUDA cuda>=" + std::string(rest)};
    }
  }
  return std::nullopt;
}

std::optional<CudaVersion> node_cuda(const nlohmann::json& labels) {
  for (auto [maj, min] :
       {std::pair{kGfdCudaMajor, kGfdCudaMinor}, std::pair{kGfdOldCudaMajor, kGfdOldCudaMinor}}) {
    const std::string major = label_string(labels, maj);
    if (major.empty()) continue;
    const std::string minor = label_string(labels, min);
    return parse_cuda_version(major + "." + (minor.empty() ? "0" : minor));
  }
  return std::nullopt;
}

nlohmann::ordered_json cuda_node_terms(const CudaVersion& need) {
  using nlohmann::ordered_json;
  const std::string major = std::to_string(need.major);
  const std::string below_minor = std::to_string(need.minor - 1);
  ordered_json terms = ordered_json::array();
  auto term = [&](std::vector<ordered_json> exprs) {
    terms.push_back({{"matchExpressions", exprs}});
  };
  // A node labelled by GFD: a newer major, or the same major and at least the minor.
  // Gt compares the label's value as an integer.
  for (auto [maj, min, guard] : {std::tuple{kGfdCudaMajor, kGfdCudaMinor, false},
                                 std::tuple{kGfdOldCudaMajor, kGfdOldCudaMinor, true}}) {
    std::vector<ordered_json> newer{expr(maj, "Gt", {major})};
    std::vector<ordered_json> same{expr(maj, "In", {major})};
    if (need.minor > 0) same.push_back(expr(min, "Gt", {below_minor}));
    if (guard) {  // the old labels count only where the current ones are absent
      newer.insert(newer.begin(), expr(kGfdCudaMajor, "DoesNotExist", {}));
      same.insert(same.begin(), expr(kGfdCudaMajor, "DoesNotExist", {}));
    }
    term(newer);
    term(same);
  }
  // A node that GFD did not label.
  term({expr(kGfdCudaMajor, "DoesNotExist", {}), expr(kGfdOldCudaMajor, "DoesNotExist", {})});
  return terms;
}

}  // namespace ktrain
