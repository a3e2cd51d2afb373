#include "runtime/config.h"

#include <doctest/doctest.h>

#include "runtime/error.h"

using namespace ktrain::launch;

namespace {
using Env = std::map<std::string, std::string>;

// The environment the rendered Job sets for node 2 of 4.
Env job_env() {
  return {{"KTRAIN_RUN", "bert-7f3k2"},
          {"KTRAIN_NNODES", "4"},
          {"JOB_COMPLETION_INDEX", "2"},
          {"KTRAIN_NPROC_PER_NODE", "auto"},
          {"KTRAIN_GPUS", "8"},
          {"KTRAIN_MASTER_ADDR", "bert-7f3k2-0.bert-7f3k2"},
          {"KTRAIN_RDZV_PORT", "29400"},
          {"KTRAIN_MASTER_PORT", "29500"},
          {"KTRAIN_RDZV_TIMEOUT", "900"},
          {"KTRAIN_RDZV_SECRET", "s3cret"},
          {"KTRAIN_FRAMEWORK", "pytorch"},
          {"KTRAIN_PREFLIGHT", "full"},
          {"KTRAIN_GRACE_PERIOD", "25"},
          {"KTRAIN_POD_IP", "10.1.2.3"}};
}

std::string error_of(const std::vector<std::string>& args, const Env& env) {
  try {
    parse_config(args, env);
  } catch (const LaunchError& e) {
    CHECK(e.status() == 78);
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("config: the rendered Job's environment gives the whole topology") {
  Config c = parse_config({"--", "python", "train.py", "--lr", "0.1"}, job_env());
  CHECK(c.run == "bert-7f3k2");
  CHECK(c.nnodes == 4);
  CHECK(c.node_rank == 2);       // from JOB_COMPLETION_INDEX
  CHECK(c.nproc_per_node == 0);  // auto
  CHECK(c.gpus == 8);
  CHECK(c.master_addr == "bert-7f3k2-0.bert-7f3k2");
  CHECK(c.rdzv_port == 29400);
  CHECK(c.master_port == 29500);
  CHECK(c.rdzv_timeout_s == 900);
  CHECK(c.grace_period_s == 25);
  CHECK(c.framework == Framework::kPytorch);
  CHECK(c.preflight == Preflight::kFull);
  CHECK(c.secret == "s3cret");
  CHECK(c.pod_ip == "10.1.2.3");
  CHECK(c.termination_log == "/dev/termination-log");
  CHECK(c.command == std::vector<std::string>{"python", "train.py", "--lr", "0.1"});
}

TEST_CASE("config: flags override the environment; KTRAIN_NODE_RANK beats JOB_COMPLETION_INDEX") {
  Env env = job_env();
  env.emplace("KTRAIN_NODE_RANK", "1");  // (not operator[]: a GCC 12 -Wrestrict false positive)
  Config c = parse_config(
      {"--nnodes", "8", "--node-rank=5", "--nproc-per-node", "4", "--framework", "paddle",
       "--preflight=off", "--rdzv-timeout", "0.5", "--grace-period", "0", "--master-addr",
       "10.0.0.1", "--rdzv-port", "1234", "--master-port=2345", "--", "train"},
      env);
  CHECK(c.nnodes == 8);
  CHECK(c.node_rank == 5);
  CHECK(c.nproc_per_node == 4);
  CHECK(c.framework == Framework::kPaddle);
  CHECK(c.preflight == Preflight::kOff);
  CHECK(c.rdzv_timeout_s == 0.5);
  CHECK(c.grace_period_s == 0);
  CHECK(c.master_addr == "10.0.0.1");
  CHECK(c.rdzv_port == 1234);
  CHECK(c.master_port == 2345);
  CHECK(parse_config({"--", "x"}, env).node_rank == 1);
}

TEST_CASE("config: a single node needs nothing but the command") {
  Config c = parse_config({"--", "true"}, {});
  CHECK(c.nnodes == 1);
  CHECK(c.node_rank == 0);
  CHECK(c.master_addr == "127.0.0.1");
  CHECK(c.framework == Framework::kNone);
  CHECK(c.preflight == Preflight::kOff);
  CHECK(parse_config({"true"}, {}).command == std::vector<std::string>{"true"});
  CHECK(parse_config({"--help"}, {}).help);
  CHECK(parse_config({"--version"}, {}).version);
  // --latest-checkpoint needs nothing else (status runs it in a live pod).
  const Config probe = parse_config({"--latest-checkpoint"}, {});
  CHECK(probe.latest_checkpoint);
  CHECK(probe.command.empty());
}

TEST_CASE("config: problems are errors (78) that name the flag or variable") {
  Env env = job_env();
  CHECK(error_of({}, {}).find("no command") != std::string::npos);
  CHECK(error_of({"--", "x"}, {{"KTRAIN_NNODES", "two"}}).find("KTRAIN_NNODES") !=
        std::string::npos);
  CHECK(error_of({"--nnodes", "0", "--", "x"}, {}).find("--nnodes") != std::string::npos);
  CHECK(error_of({"--bogus", "--", "x"}, {}).find("unknown flag '--bogus'") != std::string::npos);
  CHECK(error_of({"--nnodes"}, {}).find("--nnodes needs a value") != std::string::npos);
  CHECK(error_of({"--framework", "torch", "--", "x"}, {}).find("unknown framework 'torch'") !=
        std::string::npos);
  CHECK(error_of({"--preflight", "deep", "--", "x"}, {}).find("unknown preflight level") !=
        std::string::npos);
  CHECK(error_of({"--rdzv-timeout", "0", "--", "x"}, {}).find("more than 0") != std::string::npos);
  CHECK(error_of({"--grace-period", "-1", "--", "x"}, {}).find("at least 0") != std::string::npos);
  CHECK(error_of({"--rdzv-port", "70000", "--", "x"}, {}).find("out of range") !=
        std::string::npos);
  Env no_rank = env;
  no_rank.erase("JOB_COMPLETION_INDEX");
  CHECK(error_of({"--", "x"}, no_rank).find("node rank is not set") != std::string::npos);
  Env no_addr = env;
  no_addr.erase("KTRAIN_MASTER_ADDR");
  CHECK(error_of({"--", "x"}, no_addr).find("KTRAIN_MASTER_ADDR") != std::string::npos);
  Env no_secret = env;
  no_secret.erase("KTRAIN_RDZV_SECRET");
  CHECK(error_of({"--", "x"}, no_secret).find("KTRAIN_RDZV_SECRET") != std::string::npos);
  CHECK(error_of({"--node-rank", "4", "--", "x"}, env).find("not below the node count 4") !=
        std::string::npos);
  CHECK(error_of({"--nproc-per-node", "16", "--", "x"}, env).find("at most one process per GPU") !=
        std::string::npos);
  CHECK(error_of({"--nproc-per-node", "3", "--", "x"}, env).find("shared evenly") !=
        std::string::npos);
  CHECK(error_of({"--master-port", "29400", "--", "x"}, env).find("must differ") !=
        std::string::npos);
  // Even for a job without GPUs, where nothing else reads it.
  CHECK(error_of({"--", "x"}, {{"KTRAIN_CUDA_VERSION", "cu121"}}) ==
        "KTRAIN_CUDA_VERSION: 'cu121' is not a CUDA version (expected MAJOR.MINOR, e.g. 12.1 or "
        "12.1.0)");
}

TEST_CASE("config: --help lists every variable and flag") {
  std::string h = help_text();
  for (const char* v : {"KTRAIN_RUN",
                        "KTRAIN_NNODES",
                        "KTRAIN_NODE_RANK",
                        "JOB_COMPLETION_INDEX",
                        "KTRAIN_NPROC_PER_NODE",
                        "KTRAIN_GPUS",
                        "KTRAIN_MASTER_ADDR",
                        "KTRAIN_RDZV_PORT",
                        "KTRAIN_MASTER_PORT",
                        "KTRAIN_RDZV_TIMEOUT",
                        "KTRAIN_RDZV_SECRET",
                        "KTRAIN_FRAMEWORK",
                        "KTRAIN_PREFLIGHT",
                        "KTRAIN_GRACE_PERIOD",
                        "KTRAIN_POD_IP",
                        "KTRAIN_PARAM_",
                        "KTRAIN_MIN_BUSBW",
                        "KTRAIN_TERMINATION_LOG",
                        "KTRAIN_GPUCHECK",
                        "KTRAIN_CUDA_VERSION",
                        "KTRAIN_NODE_NAME",
                        "--nnodes",
                        "--node-rank",
                        "--nproc-per-node",
                        "--master-addr",
                        "--rdzv-port",
                        "--master-port",
                        "--framework",
                        "--preflight",
                        "--rdzv-timeout",
                        "--grace-period",
                        "--latest-checkpoint",
                        "KTRAIN_CHECKPOINT_DIR",
                        "--help",
                        "--version"}) {
    CHECK_MESSAGE(h.find(v) != std::string::npos, v);
  }
}

TEST_CASE("config: KTRAIN_NODE_RANK_OFFSET numbers an operator's Workers after its Master") {
  // A PyTorchJob's Worker 2 of a 4-node job: replica index 2 (from its label), node rank 3.
  Env env = job_env();
  env.erase("JOB_COMPLETION_INDEX");
  env.emplace("KTRAIN_NODE_RANK", "2");
  env.emplace("KTRAIN_NODE_RANK_OFFSET", "1");
  CHECK(parse_config({"--", "x"}, env).node_rank == 3);
  // Past the last node: the offset is checked with the rank.
  env["KTRAIN_NODE_RANK"] = "3";
  CHECK(error_of({"--", "x"}, env).find("node rank 4 is not below the node count 4") !=
        std::string::npos);
  env["KTRAIN_NODE_RANK_OFFSET"] = "-1";
  CHECK(error_of({"--", "x"}, env).find("KTRAIN_NODE_RANK_OFFSET") != std::string::npos);
}

TEST_CASE("config: without the Secret, a Job's pods key the rendezvous on the Job's uid") {
  // `ktrain render | kubectl apply`: no Secret <run>-rdzv, the optional reference gives
  // nothing, and the Job controller's uid label is the per-run key.
  Env env = job_env();
  env.erase("KTRAIN_RDZV_SECRET");
  env["KTRAIN_RDZV_JOB_UID"] = "0c8f6a3e-7c1d-4a52-9d0e-3f2b1a4c5d6e";
  Config c = parse_config({"--", "x"}, env);
  CHECK(c.secret == "job-uid:0c8f6a3e-7c1d-4a52-9d0e-3f2b1a4c5d6e");
  CHECK(c.secret_from_job_uid);
  // The Secret, where it is there (ktrain submit made it), wins.
  env["KTRAIN_RDZV_SECRET"] = "s3cret";
  c = parse_config({"--", "x"}, env);
  CHECK(c.secret == "s3cret");
  CHECK_FALSE(c.secret_from_job_uid);
  // An empty uid (pods that no Job made) is no key: the error names both sources.
  env.erase("KTRAIN_RDZV_SECRET");
  env["KTRAIN_RDZV_JOB_UID"] = "";
  const std::string e = error_of({"--", "x"}, env);
  CHECK(e.find("KTRAIN_RDZV_SECRET") != std::string::npos);
  CHECK(e.find("KTRAIN_RDZV_JOB_UID") != std::string::npos);
}
