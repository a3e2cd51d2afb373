#include "backend/local_run.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/error.h"

namespace ktrain::backend {

namespace fs = std::filesystem;

namespace {

RunState state_from_string(const std::string& s) {
  for (auto st : {RunState::kPending, RunState::kRunning, RunState::kSucceeded, RunState::kFailed,
                  RunState::kStopped}) {
    if (s == to_string(st)) return st;
  }
  return RunState::kUnknown;
}

}  // namespace

nlohmann::json to_json(const LocalRun& run) {
  nlohmann::json env = nlohmann::json::array();
  for (const auto& [k, v] : run.env) env.push_back({k, v});
  nlohmann::json params = nlohmann::json::array();
  for (const auto& [k, v] : run.params) params.push_back({k, v});
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : run.node_status) {
    nlohmann::json j = {{"index", n.index},
                        {"pid", n.pid},
                        {"started", n.started},
                        {"finished", n.finished},
                        {"cause", n.cause}};
    j["exitCode"] = n.exit_code ? nlohmann::json(*n.exit_code) : nlohmann::json();
    j["signal"] = n.signal ? nlohmann::json(*n.signal) : nlohmann::json();
    nodes.push_back(std::move(j));
  }
  return {{"name", run.name},
          {"kind", run.kind},
          {"port", run.port},
          {"sweep", run.sweep},
          {"project", run.project},
          {"labels", run.labels},
          {"directory", run.directory},
          {"launcher", run.launcher},
          {"command", run.command},
          {"env", env},
          {"framework", run.framework},
          {"preflight", run.preflight},
          {"nodes", run.nodes},
          {"nproc", run.nproc},
          {"gpus", run.gpus},
          {"gracePeriod", run.grace_s},
          {"queued", run.queued},
          {"params", params},
          {"created", run.created},
          {"state", to_string(run.state)},
          {"keeperPid", run.keeper_pid},
          {"reason", run.reason},
          {"firstFailed", run.first_failed},
          {"nodeStatus", nodes}};
}

LocalRun local_run_from_json(const nlohmann::json& j) {
  LocalRun run;
  run.name = j.at("name").get<std::string>();
  run.kind = j.value("kind", "train");
  run.port = j.value("port", 0);
  run.sweep = j.value("sweep", "");
  run.project = j.value("project", "");
  run.grace_s = j.value("gracePeriod", 30);
  run.queued = j.value("queued", false);
  for (const auto& kv : j.value("params", nlohmann::json::array())) {
    run.params.emplace_back(kv.at(0).get<std::string>(), kv.at(1).get<std::string>());
  }
  run.labels = j.value("labels", std::map<std::string, std::string>{});
  run.directory = j.value("directory", "");
  run.launcher = j.value("launcher", "ktrain-launch");
  run.command = j.value("command", std::vector<std::string>{});
  for (const auto& kv : j.value("env", nlohmann::json::array())) {
    run.env.emplace_back(kv.at(0).get<std::string>(), kv.at(1).get<std::string>());
  }
  run.framework = j.value("framework", "none");
  run.preflight = j.value("preflight", "off");
  run.nodes = j.value("nodes", 1);
  run.nproc = j.value("nproc", 1);
  run.gpus = j.value("gpus", 0);
  run.created = j.value("created", "");
  run.state = state_from_string(j.value("state", "Unknown"));
  run.keeper_pid = j.value("keeperPid", 0);
  run.reason = j.value("reason", "");
  run.first_failed = j.value("firstFailed", -1);
  for (const auto& n : j.value("nodeStatus", nlohmann::json::array())) {
    LocalNode node;
    node.index = n.value("index", 0);
    node.pid = n.value("pid", 0);
    if (n.contains("exitCode") && n["exitCode"].is_number())
      node.exit_code = n["exitCode"].get<int>();
    if (n.contains("signal") && n["signal"].is_number()) node.signal = n["signal"].get<int>();
    node.started = n.value("started", "");
    node.finished = n.value("finished", "");
    node.cause = n.value("cause", "");
    run.node_status.push_back(std::move(node));
  }
  return run;
}

std::string local_runs_root(const Env& env) {
  if (auto x = env.var("XDG_STATE_HOME"); x && !x->empty()) return *x + "/ktrain/runs";
  if (auto h = env.var("HOME"); h && !h->empty()) return *h + "/.local/state/ktrain/runs";
  throw Error("cannot find the local state folder: neither XDG_STATE_HOME nor HOME is set");
}

LocalRun read_local_run(const std::string& dir) {
  std::ifstream f(dir + "/run.json");
  if (!f) throw Error("cannot read '" + dir + "/run.json'");
  try {
    return local_run_from_json(nlohmann::json::parse(f));
  } catch (const nlohmann::json::exception& e) {
    throw Error("'" + dir + "/run.json' is damaged: " + e.what());
  }
}

void write_local_run(const std::string& dir, const LocalRun& run) {
  const std::string tmp = dir + "/.run.json.tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << to_json(run).dump(2) << "\n";
    if (!f.flush()) throw Error("cannot write '" + tmp + "'");
  }
  std::error_code ec;
  fs::rename(tmp, dir + "/run.json", ec);
  if (ec) throw Error("cannot write '" + dir + "/run.json': " + ec.message());
}

}  // namespace ktrain::backend
