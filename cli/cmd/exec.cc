#include "cmd/exec.h"

#include <unistd.h>

#include <memory>
#include <ostream>

#include "base/error.h"
#include "cmd/pod_target.h"
#include "cmd/run_common.h"
#include "cmd/terminal.h"
#include "kube/connection.h"
#include "kube/streams.h"

namespace ktrain::cmd {

namespace {

struct ExecOptions {
  TargetFlags target;
  PodChoice choice;
  std::string run;
  std::string container;
  std::vector<std::string> command;
  bool stdin = false;
  bool tty = false;

  int run_exec(Env& env) const {
    if (command.empty()) {
      throw UsageError("exec needs a command after --, e.g. ktrain exec " + run + " -it -- bash");
    }
    require_cluster_run(env, target, run, "exec");
    kube::Connection conn(env);
    PodTarget t = resolve_pod(env, conn.client(), run, choice);
    if (!container.empty()) t.container = container;
    return exec_in(env, conn.client(), t, command, stdin, tty);
  }
};

}  // namespace

int exec_in(Env& env, kube::Client& client, const PodTarget& t,
            const std::vector<std::string>& command, bool stdin, bool tty) {
  bool use_tty = tty;
  if (use_tty && (!stdin || !::isatty(0))) {
    if (!stdin) {
      throw UsageError("-t needs -i: a terminal is interactive (use -it)");
    }
    env.warn("stdin is not a terminal: running without one");
    use_tty = false;
  }
  env.out->flush();
  env.err->flush();
  kube::ExecRequest req;
  req.ns = t.ns;
  req.pod = t.pod;
  req.container = t.container;
  req.command = command;
  req.stdin = stdin;
  req.tty = use_tty;
  std::unique_ptr<ResizeSignal> resize;
  std::unique_ptr<RawTerminal> raw;
  if (use_tty) {
    req.term_size = [] { return terminal_size(0); };
    resize = std::make_unique<ResizeSignal>();
    req.resize_fd = resize->fd();
    raw = std::make_unique<RawTerminal>(0);
  }
  kube::ExecResult r = kube::exec(client, req);
  raw.reset();
  if (!r.message.empty()) *env.err << "ktrain: error: " << r.message << "\n";
  return r.exit_code;
}

void add_exec_command(CLI::App& app, Env& env, CommandResult& result) {
  auto opts = std::make_shared<ExecOptions>();
  auto* sub = app.add_subcommand("exec", "Run a command in a pod of a run (node 0 by default)");
  sub->add_option("RUN", opts->run, "The run or service (from submit or list)")->required();
  sub->add_option("COMMAND", opts->command, "The command and its arguments, after --");
  opts->choice.add_to(*sub);
  sub->add_option("-c,--container", opts->container,
                  "The container (default: the run's own, as logs reads it)");
  sub->add_flag("-i,--stdin", opts->stdin, "Pass stdin to the command (until it ends)");
  sub->add_flag("-t,--tty", opts->tty,
                "Give the command a terminal (with -i): raw keys, Ctrl-C and resizes go to it");
  opts->target.add_to(*sub);
  sub->footer(
      "The exit status is the command's. The stream is a WebSocket (v5.channel.k8s.io) to "
      "the API server, which Kubernetes 1.30 and later serve.\n\nExamples:\n"
      "  ktrain exec myrun -- nvidia-smi\n"
      "  ktrain exec myrun --rank 9 -it -- bash\n"
      "  tar c data | ktrain exec myrun -i -- tar x -C /scratch");
  sub->callback([opts, &env, &result] { result.status = opts->run_exec(env); });
}

}  // namespace ktrain::cmd
