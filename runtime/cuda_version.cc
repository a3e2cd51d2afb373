#include "runtime/cuda_version.h"

#include <dirent.h>
#include <glob.h>

#include <algorithm>
#include <charconv>

#include "runtime/error.h"
#include "runtime/gpu.h"

namespace ktrain::launch {
namespace {

using Env = std::map<std::string, std::string>;

std::string get(const Env& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? "" : it->second;
}

// Splits `text` at `sep`, dropping empty pieces.
std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(sep, pos);
    if (end == std::string::npos) end = text.size();
    if (end > pos) out.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

// Adds `pattern` to `out`, its glob expanded, skipping folders already there.
void add_dirs(const std::string& pattern, std::vector<std::string>& out) {
  std::vector<std::string> found;
  if (pattern.find_first_of("*?[") == std::string::npos) {
    found.push_back(pattern);
  } else {
    glob_t g{};
    if (::glob(pattern.c_str(), GLOB_ONLYDIR, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) found.emplace_back(g.gl_pathv[i]);
    }
    ::globfree(&g);
  }
  for (auto& d : found) {
    while (d.size() > 1 && d.back() == '/') d.pop_back();
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  }
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool older(CudaVersion a, CudaVersion b) {
  return a.major != b.major ? a.major < b.major : a.minor < b.minor;
}

}  // namespace

std::string CudaVersion::text() const {
  return std::to_string(major) + "." + std::to_string(minor);
}

std::optional<CudaVersion> parse_cuda_version(std::string_view text) {
  std::vector<int> parts;
  size_t pos = 0;
  while (true) {
    size_t end = text.find('.', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view part = text.substr(pos, end - pos);
    int v = 0;
    auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || part.size() > 6 || !std::all_of(part.begin(), part.end(), is_digit) ||
        ec != std::errc() || p != part.data() + part.size()) {
      return std::nullopt;
    }
    parts.push_back(v);
    if (end == text.size()) break;
    pos = end + 1;
  }
  // Minor versions are encoded in two decimal digits (minor * 10 below 1000).
  if (parts[0] < 1 || parts[0] > 999 || (parts.size() > 1 && parts[1] > 99)) return std::nullopt;
  return CudaVersion{parts[0], parts.size() > 1 ? parts[1] : 0};
}

std::optional<int> parse_driver_cuda(std::string_view text) {
  int v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || !std::all_of(text.begin(), text.end(), is_digit) || ec != std::errc() ||
      p != text.data() + text.size() || v <= 0) {
    return std::nullopt;
  }
  return v;
}

CudaVersion driver_cuda_version(int driver) {
  return {driver / 1000, driver % 1000 / 10};
}

bool driver_runs(int driver, CudaVersion need) {
  return driver >= need.encoded();
}

std::optional<CudaVersion> cudart_file_version(std::string_view file_name) {
  constexpr std::string_view kPrefix = "libcudart.so.";
  if (file_name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  return parse_cuda_version(file_name.substr(kPrefix.size()));
}

std::vector<std::string> cudart_search_dirs(const Env& env) {
  std::vector<std::string> out;
  if (auto roots = get(env, "KTRAIN_CUDA_LIB_ROOTS"); !roots.empty()) {
    for (const auto& d : split(roots, ':')) add_dirs(d, out);
    return out;
  }
  for (const auto& d : split(get(env, "LD_LIBRARY_PATH"), ':')) add_dirs(d, out);
  for (const char* d : {"/usr/local/cuda/lib64", "/usr/local/cuda/targets/*/lib",
                        "/usr/lib/x86_64-linux-gnu", "/usr/lib64"}) {
    add_dirs(d, out);
  }
  // Where NCCL is looked for, the CUDA runtime is too: conda's lib, and pip's
  // nvidia/cuda_runtime/lib beside nvidia/nccl/lib.
  const std::string nccl = "/nvidia/nccl/lib";
  for (auto p : nccl_search_patterns(env)) {
    p = p.substr(0, p.rfind('/'));
    if (p.size() >= nccl.size() && p.compare(p.size() - nccl.size(), nccl.size(), nccl) == 0) {
      p.replace(p.size() - nccl.size(), nccl.size(), "/nvidia/cuda_runtime/lib");
    }
    add_dirs(p, out);
  }
  return out;
}

CudaNeed newest_cudart(const std::vector<std::string>& dirs) {
  CudaNeed need;
  for (const auto& dir : dirs) {
    DIR* d = ::opendir(dir.c_str());
    if (!d) continue;
    while (const dirent* e = ::readdir(d)) {
      auto v = cudart_file_version(e->d_name);
      if (v && (!need.version || older(*need.version, *v))) {
        need.version = v;
        need.source = (dir == "/" ? "" : dir) + "/" + e->d_name;
      }
    }
    ::closedir(d);
  }
  return need;
}

CudaVersion parse_cuda_setting(const std::string& variable, const std::string& value) {
  auto v = parse_cuda_version(value);
  if (!v) {
    config_error(variable + ": '" + value +
                 "' is not a CUDA version (expected MAJOR.MINOR, e.g. 12.1 or 12.1.0)");
  }
  return *v;
}

CudaNeed find_cuda_need(const Env& env, const std::vector<std::string>& lib_dirs) {
  CudaNeed need;
  if (auto v = get(env, "KTRAIN_CUDA_VERSION"); !v.empty()) {
    need.version = parse_cuda_setting("KTRAIN_CUDA_VERSION", v);
    need.source = "KTRAIN_CUDA_VERSION=" + v;
    return need;
  }
  if (auto v = get(env, "CUDA_VERSION"); !v.empty()) {
    if (auto parsed = parse_cuda_version(v)) {
      need.version = parsed;
      need.source = "CUDA_VERSION=" + v;
      return need;
    }
    need.warnings.push_back("warning: ignoring CUDA_VERSION='" + v +
                            "': not a CUDA version (expected MAJOR.MINOR, e.g. 12.1.0)");
  }
  CudaNeed found = newest_cudart(lib_dirs);
  found.warnings = std::move(need.warnings);
  return found;
}

std::string driver_too_old_message(const std::string& node, int driver, const CudaNeed& need) {
  const CudaVersion v = need.version.value_or(CudaVersion{});
  return node + ": the NVIDIA driver supports CUDA " + driver_cuda_version(driver).text() +
         " but the image needs CUDA " + v.text() + " (" + need.source +
         "); use a node pool with a newer driver (train.cuda keeps pods off such nodes where "
         "GPU feature discovery labels them), or add NVIDIA's CUDA forward-compatibility "
         "package (cuda-compat-" +
         std::to_string(v.major) + "-" + std::to_string(v.minor) + ") to the image";
}

}  // namespace ktrain::launch
