#include "runtime/cuda_version.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "runtime/error.h"
#include "runtime/gpu.h"

using namespace ktrain::launch;
namespace fs = std::filesystem;

namespace {

// A scratch folder tree, removed at the end of the test.
struct TempTree {
  fs::path root = fs::temp_directory_path() / ("ktrain-cudart-" + std::to_string(::getpid()));
  TempTree() { fs::create_directories(root); }
  ~TempTree() { fs::remove_all(root); }
  std::string touch(const std::string& rel) const {
    fs::path p = root / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p).put('x');
    return p.string();
  }
  std::string dir(const std::string& rel) const { return (root / rel).string(); }
};

}  // namespace

TEST_CASE("cuda version: 12.1, 12.1.0 and NGC's 12.4.1.003 count major and minor") {
  auto v = parse_cuda_version("12.1");
  REQUIRE(v);
  CHECK(v->major == 12);
  CHECK(v->minor == 1);
  CHECK(parse_cuda_version("12.1.0")->encoded() == 12010);
  CHECK(parse_cuda_version("12.4.1.003")->text() == "12.4");
  CHECK(parse_cuda_version("11.8")->encoded() == 11080);
}

TEST_CASE("cuda version: a bare major means its .0") {
  auto v = parse_cuda_version("12");
  REQUIRE(v);
  CHECK(v->text() == "12.0");
  CHECK(v->encoded() == 12000);
}

TEST_CASE("cuda version: anything but dotted numbers is refused") {
  for (const char* bad : {"", "12.", ".1", "12..1", "v12.1", "12.1-devel", "12,1", "twelve", "-1",
                          "12.-1", "0.5", "12.100", " 12.1", "12.1 "}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_cuda_version(bad));
  }
}

TEST_CASE("cuda version: a 13.0 driver runs 12.1, an 11.2 driver does not, 12.1 runs 12.1") {
  CHECK(driver_runs(13000, *parse_cuda_version("12.1")));
  CHECK_FALSE(driver_runs(11020, *parse_cuda_version("12.1")));
  CHECK(driver_runs(12010, *parse_cuda_version("12.1.105")));
  CHECK_FALSE(driver_runs(12000, *parse_cuda_version("12.1")));
  CHECK(driver_runs(12040, *parse_cuda_version("12")));
  CHECK(driver_cuda_version(12040).text() == "12.4");
  CHECK(driver_cuda_version(11020).text() == "11.2");
}

TEST_CASE("cuda version: the helper's driver_cuda fact is parsed from its output") {
  HelperResult r;
  parse_helper_output("info driver CUDA 12.4, 8 GPU(s)\ncount 8\ndriver_cuda 12040\n", r);
  REQUIRE(r.facts.count("driver_cuda") == 1);
  CHECK(parse_driver_cuda(r.facts["driver_cuda"]) == 12040);
  CHECK(r.facts["count"] == "8");
  CHECK(r.info.size() == 1);
  CHECK_FALSE(parse_driver_cuda(""));
  CHECK_FALSE(parse_driver_cuda("0"));
  CHECK_FALSE(parse_driver_cuda("-12040"));
  CHECK_FALSE(parse_driver_cuda("12.4"));
  CHECK_FALSE(parse_driver_cuda("99999999999"));
}

TEST_CASE("cuda version: libcudart file names carry the runtime's version") {
  CHECK(cudart_file_version("libcudart.so.12")->text() == "12.0");
  CHECK(cudart_file_version("libcudart.so.12.1.105")->text() == "12.1");
  CHECK(cudart_file_version("libcudart.so.11.0")->text() == "11.0");
  CHECK_FALSE(cudart_file_version("libcudart.so"));
  CHECK_FALSE(cudart_file_version("libcudart_static.a"));
  CHECK_FALSE(cudart_file_version("libcudart.so.12.bak"));
  CHECK_FALSE(cudart_file_version("libcublas.so.12"));
}

TEST_CASE("cuda version: the newest libcudart of every folder is the image's need") {
  TempTree t;
  t.touch("cuda/lib64/libcudart.so");
  t.touch("cuda/lib64/libcudart.so.11.0");
  t.touch("cuda/lib64/libcudart.so.11.8.89");
  const std::string newest = t.touch("site/nvidia/cuda_runtime/lib/libcudart.so.12");
  t.touch("other/libcudart_static.a");
  CudaNeed need = newest_cudart({t.dir("missing"), t.dir("cuda/lib64"), t.dir("other"),
                                 t.dir("site/nvidia/cuda_runtime/lib")});
  REQUIRE(need.version);
  CHECK(need.version->text() == "12.0");
  CHECK(need.source == newest);

  const std::string precise = t.touch("cuda/lib64/libcudart.so.12.3.101");
  need = newest_cudart({t.dir("cuda/lib64"), t.dir("site/nvidia/cuda_runtime/lib")});
  CHECK(need.version->text() == "12.3");
  CHECK(need.source == precise);

  CHECK_FALSE(newest_cudart({t.dir("other"), t.dir("missing")}).version);
}

TEST_CASE("cuda version: the search folders follow LD_LIBRARY_PATH, CUDA's, the system's, pip's") {
  TempTree t;
  t.touch("venv/lib/python3.11/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12");
  auto dirs = cudart_search_dirs(
      {{"LD_LIBRARY_PATH", "/opt/a::/usr/local/cuda/lib64/"}, {"VIRTUAL_ENV", t.dir("venv")}});
  REQUIRE(dirs.size() >= 4);
  CHECK(dirs[0] == "/opt/a");
  CHECK(dirs[1] == "/usr/local/cuda/lib64");
  CHECK(std::count(dirs.begin(), dirs.end(), "/usr/local/cuda/lib64") == 1);
  CHECK(std::find(dirs.begin(), dirs.end(), "/usr/lib/x86_64-linux-gnu") != dirs.end());
  CHECK(std::find(dirs.begin(), dirs.end(), "/usr/lib64") != dirs.end());
  CHECK(std::find(dirs.begin(), dirs.end(),
                  t.dir("venv/lib/python3.11/site-packages/nvidia/cuda_runtime/lib")) !=
        dirs.end());
  for (const auto& d : dirs) CHECK(d.find("nccl") == std::string::npos);
}

TEST_CASE("cuda version: KTRAIN_CUDA_LIB_ROOTS replaces the search folders") {
  auto dirs = cudart_search_dirs(
      {{"KTRAIN_CUDA_LIB_ROOTS", "/x:/y"}, {"LD_LIBRARY_PATH", "/opt/a"}, {"HOME", "/h"}});
  CHECK(dirs == std::vector<std::string>{"/x", "/y"});
}

TEST_CASE("cuda version: KTRAIN_CUDA_VERSION first, then CUDA_VERSION, then libcudart") {
  TempTree t;
  t.touch("lib/libcudart.so.12.3.52");
  const std::vector<std::string> libs{t.dir("lib")};

  CudaNeed need =
      find_cuda_need({{"KTRAIN_CUDA_VERSION", "12.1"}, {"CUDA_VERSION", "12.4.1"}}, libs);
  CHECK(need.version->text() == "12.1");
  CHECK(need.source == "KTRAIN_CUDA_VERSION=12.1");

  need = find_cuda_need({{"CUDA_VERSION", "12.4.1"}}, libs);
  CHECK(need.version->text() == "12.4");
  CHECK(need.source == "CUDA_VERSION=12.4.1");

  need = find_cuda_need({}, libs);
  CHECK(need.version->text() == "12.3");
  CHECK(need.source == t.dir("lib") + "/libcudart.so.12.3.52");
  CHECK(need.warnings.empty());

  need = find_cuda_need({}, {t.dir("none")});
  CHECK_FALSE(need.version);
}

TEST_CASE("cuda version: a malformed CUDA_VERSION is ignored with a warning") {
  TempTree t;
  t.touch("lib/libcudart.so.12");
  CudaNeed need = find_cuda_need({{"CUDA_VERSION", "twelve"}}, {t.dir("lib")});
  REQUIRE(need.warnings.size() == 1);
  CHECK(need.warnings[0].find("CUDA_VERSION='twelve'") != std::string::npos);
  CHECK(need.version->text() == "12.0");
}

TEST_CASE("cuda version: a malformed KTRAIN_CUDA_VERSION is a configuration error (78)") {
  try {
    find_cuda_need({{"KTRAIN_CUDA_VERSION", "12.x"}, {"CUDA_VERSION", "12.1"}}, {});
    FAIL("no error");
  } catch (const LaunchError& e) {
    CHECK(e.status() == exit_status::kConfig);
    CHECK(std::string(e.what()) ==
          "KTRAIN_CUDA_VERSION: '12.x' is not a CUDA version (expected MAJOR.MINOR, e.g. 12.1 "
          "or 12.1.0)");
  }
}

TEST_CASE("cuda version: the refusal names the node, both versions, the source and the remedy") {
  CudaNeed need;
  need.version = parse_cuda_version("12.1.0");
  need.source = "CUDA_VERSION=12.1.0";
  CHECK(driver_too_old_message("node gpu-node-7", 11020, need) ==
        "node gpu-node-7: the NVIDIA driver supports CUDA 11.2 but the image needs CUDA 12.1 "
        "(CUDA_VERSION=12.1.0); use a node pool with a newer driver (train.cuda keeps pods off "
        "such nodes where GPU feature discovery labels them), or add NVIDIA's CUDA "
        "forward-compatibility package (cuda-compat-12-1) to the image");
}
