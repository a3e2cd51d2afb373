#pragma once
// `ktrain events RUN` (and `status --events`): the events about a run's objects,
// oldest first, each with what it means for the run when its reason matters.

#include <chrono>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/run_status.h"
#include "cmd/command.h"

namespace ktrain::cmd {

/// A table of `events`: age, type, reason, object, message (xN when repeated), and under a
/// line whose reason matters, what it means.
void print_events(Env& env, const std::vector<RunEvent>& events,
                  std::chrono::system_clock::time_point now);

/// `events` as JSON (time, firstTime, count, type, reason, object, message, source, meaning).
nlohmann::ordered_json events_json(const std::vector<RunEvent>& events);

/// Registers `ktrain events`.
void add_events_command(CLI::App& app, Env& env, CommandResult& result);

}  // namespace ktrain::cmd
