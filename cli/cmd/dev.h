#pragma once
// `ktrain dev`: an interactive pod with the project's image, GPUs, volumes, shm and env
// (render/dev.h), started or found again, then a shell in it (--shell), JupyterLab in
// it forwarded to localhost (--jupyter), or its removal (--stop).

#include "cmd/command.h"

namespace ktrain::cmd {

void add_dev_command(CLI::App& app, Env& env, CommandResult& result);

}  // namespace ktrain::cmd
