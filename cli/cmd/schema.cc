#include "cmd/schema.h"

#include <memory>
#include <ostream>
#include <string>

#include "base/error.h"
#include "project/json_schema.h"

namespace ktrain::cmd {

namespace {

struct SchemaOptions {
  int run(Env& env) const {
    const std::string& o = env.global.output;
    if (!o.empty() && o != "json") {
      throw UsageError("-o " + o + ": schema prints JSON (-o json)");
    }
    *env.out << project::project_json_schema().dump(2) << "\n";
    return exit_code::kOk;
  }
};

}  // namespace

void add_schema_command(CLI::App& app, Env& env, CommandResult& result) {
  auto opts = std::make_shared<SchemaOptions>();
  auto* sub = app.add_subcommand("schema", "Print the JSON Schema of ktrain.yaml, for editors");
  sub->footer(
      "The schema (JSON Schema draft-07) is made from the table that the project file's\n"
      "parser uses. Editors that use yaml-language-server (VS Code's YAML extension and\n"
      "others) complete and check ktrain.yaml with it. 'ktrain init' names it on the first\n"
      "line of the file it writes, by its $id:\n"
      "  # yaml-language-server: $schema=" +
      project::project_schema_id() +
      "\n"
      "That URL is not published: write the schema beside the file,\n"
      "  ktrain schema > .ktrain.schema.json\n"
      "and make the first line\n"
      "  # yaml-language-server: $schema=./.ktrain.schema.json\n"
      "or remove that line and map the schema to the file in VS Code's settings.json:\n"
      "  \"yaml.schemas\": {\"./.ktrain.schema.json\": [\"ktrain.yaml\", \"**/ktrain.yaml\"]}");
  sub->callback([opts, &env, &result] { result.status = opts->run(env); });
}

}  // namespace ktrain::cmd
