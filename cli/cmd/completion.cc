#include "cmd/completion.h"

#include <cctype>
#include <memory>
#include <ostream>
#include <sstream>
#include <vector>

#include "base/error.h"

namespace ktrain::cmd {

namespace {

/// The shells `ktrain completion` writes scripts for.
constexpr const char* kShells[] = {"bash", "zsh", "fish"};

/// Flags whose value is a file or a folder (completed with file names).
bool takes_file(const std::string& lname) {
  return lname == "file" || lname == "kubeconfig" || lname == "templates" || lname == "context-dir";
}

/// One flag: its names and whether it takes a value.
struct Flag {
  std::vector<std::string> shorts;  ///< without "-"
  std::vector<std::string> longs;   ///< without "--"
  std::string description;
  bool takes_value = false;
  bool file = false;
  /// The values it takes, from a type name such as "client|server|none"; empty when free.
  std::vector<std::string> choices;

  /// Every spelling, "-f --file".
  std::vector<std::string> spellings() const {
    std::vector<std::string> s;
    for (const auto& n : shorts) s.push_back("-" + n);
    for (const auto& n : longs) s.push_back("--" + n);
    return s;
  }
};

/// A verb and its flags.
struct Verb {
  std::string name;
  std::string description;
  std::vector<Flag> flags;
  bool takes_run = false;  ///< has a RUN argument (completed with `ktrain list -o name`)
};

/// "a|b|c" -> {a, b, c}: a flag's type name lists its values (shown so in --help too).
/// Any other type name (TEXT, DIR, REF) means a free value.
std::vector<std::string> choices_of(const std::string& type_name) {
  if (type_name.find('|') == std::string::npos) return {};
  std::vector<std::string> values;
  std::string word;
  for (char c : type_name + "|") {
    if (c == '|') {
      if (!word.empty()) values.push_back(word);
      word.clear();
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '/' || c == '.') {
      word += c;
    } else {
      return {};
    }
  }
  return values;
}

std::vector<Flag> flags_of(const CLI::App& app, bool global_only) {
  std::vector<Flag> flags;
  for (const CLI::Option* opt : app.get_options()) {
    if (!opt->nonpositional()) continue;
    if (global_only && opt->get_group() != "Global") continue;
    Flag f;
    f.shorts = opt->get_snames();
    f.longs = opt->get_lnames();
    f.description = opt->get_description();
    f.takes_value = opt->get_expected_max() > 0;  // a flag expects no value
    for (const auto& l : f.longs) f.file = f.file || takes_file(l);
    if (f.takes_value) f.choices = choices_of(opt->get_type_name());
    flags.push_back(std::move(f));
  }
  return flags;
}

/// The visible verbs of `app` (hidden ones have an empty group, e.g. __keeper).
std::vector<Verb> verbs_of(const CLI::App& app) {
  std::vector<Verb> verbs;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_group().empty() || sub->get_name().empty()) continue;
    bool takes_run = false;
    for (const CLI::Option* opt : sub->get_options()) {
      takes_run = takes_run || (!opt->nonpositional() && opt->get_name() == "RUN");
    }
    verbs.push_back({sub->get_name(), sub->get_description(), flags_of(*sub, false), takes_run});
  }
  return verbs;
}

std::string join(const std::vector<std::string>& words, const std::string& sep = " ") {
  std::string s;
  for (const auto& w : words) s += (s.empty() ? "" : sep) + w;
  return s;
}

/// `s` in single quotes for a POSIX shell, zsh or fish.
std::string quote(const std::string& s, bool fish = false) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q += fish ? "\\'" : "'\\''";
    } else if (fish && c == '\\') {
      q += "\\\\";
    } else {
      q += c;
    }
  }
  return q + "'";
}

std::vector<std::string> spellings(const std::vector<Flag>& flags, bool values, bool files) {
  std::vector<std::string> s;
  for (const auto& f : flags) {
    if (values && !f.takes_value) continue;
    if (files && !f.file) continue;
    for (auto& n : f.spellings()) s.push_back(std::move(n));
  }
  return s;
}

std::vector<std::string> names(const std::vector<Verb>& verbs, bool only_run_verbs = false) {
  std::vector<std::string> n;
  for (const auto& v : verbs) {
    if (!only_run_verbs || v.takes_run) n.push_back(v.name);
  }
  return n;
}

/// `case` arms of a bash or zsh script for the values of flags that list theirs: the verb's
/// own as "VERB:FLAG", then the global ones as "*:FLAG" (they come before or after the verb).
std::string value_cases(const std::vector<Verb>& verbs, const std::vector<Flag>& globals,
                        bool zsh) {
  std::ostringstream s;
  auto arm = [&](const std::string& verb, const Flag& f) {
    if (f.choices.empty()) return;
    std::vector<std::string> patterns;
    for (const auto& n : f.spellings()) patterns.push_back(verb + ":" + n);
    s << "    " << join(patterns, "|") << ")\n";
    if (zsh) {
      s << "      compadd -- " << join(f.choices) << "; return ;;\n";
    } else {
      s << "      COMPREPLY=($(compgen -W " << quote(join(f.choices)) << " -- \"$cur\"))\n"
        << "      return 0 ;;\n";
    }
  };
  for (const auto& v : verbs) {
    for (const auto& f : v.flags) arm(v.name, f);
  }
  for (const auto& f : globals) arm("*", f);
  return s.str();
}

/// Shell lines that collect, from the words typed so far, what picks the cluster
/// (-n, --context, --kubeconfig, --local) into the array `ctx`, so that run names are
/// listed where the command will run. bash splits "--context=x" at "=".
const char* kBashContext =
    "  ctx=()\n"
    "  for (( i = 1; i < COMP_CWORD; i++ )); do\n"
    "    w=\"${COMP_WORDS[i]}\"\n"
    "    case \"$w\" in\n"
    "      -n|--namespace|--context|--kubeconfig)\n"
    "        if [[ \"${COMP_WORDS[i+1]}\" == = ]]; then (( i++ )); fi\n"
    "        (( i + 1 < COMP_CWORD )) || break\n"
    "        (( i++ ))\n"
    "        ctx+=(\"$w\" \"${COMP_WORDS[i]/#\\~/$HOME}\") ;;\n"
    "      --local) ctx+=(--local) ;;\n"
    "    esac\n"
    "  done\n";
const char* kZshContext =
    "  ctx=()\n"
    "  for (( i = 2; i < CURRENT; i++ )); do\n"
    "    w=${words[i]}\n"
    "    case $w in\n"
    "      -n|--namespace|--context|--kubeconfig)\n"
    "        (( i + 1 < CURRENT )) || break\n"
    "        (( i++ ))\n"
    "        ctx+=($w ${words[i]/#\\~/$HOME}) ;;\n"
    "      --namespace=*|--context=*|--kubeconfig=*) ctx+=(${w/=\\~/=$HOME}) ;;\n"
    "      --local) ctx+=(--local) ;;\n"
    "    esac\n"
    "  done\n";

std::string bash_script(const std::vector<Verb>& verbs, const std::vector<Flag>& top,
                        const std::vector<Flag>& globals) {
  std::ostringstream s;
  const auto global_values = spellings(globals, true, false);
  s << "# bash completion for ktrain. Generated by `ktrain completion bash`; load it with\n"
       "#   source <(ktrain completion bash)\n"
       "# or save it as ~/.local/share/bash-completion/completions/ktrain.\n"
       "_ktrain() {\n"
       "  local cur prev verb w i skip=0 opts values files ctx\n"
       "  COMPREPLY=()\n"
       "  cur=\"${COMP_WORDS[COMP_CWORD]}\"\n"
       "  prev=\"\"\n"
       "  (( COMP_CWORD > 0 )) && prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
       "  verb=\"\"\n"
       "  for (( i = 1; i < COMP_CWORD; i++ )); do\n"
       "    w=\"${COMP_WORDS[i]}\"\n"
       "    if (( skip )); then skip=0; continue; fi\n"
       "    case \"$w\" in\n"
       "      "
    << join(global_values, "|")
    << ") skip=1 ;;\n"
       "      -*) ;;\n"
       "      *) verb=\"$w\"; break ;;\n"
       "    esac\n"
       "  done\n"
       "  case \"$verb\" in\n";
  for (const auto& v : verbs) {
    s << "    " << v.name << ")\n"
      << "      opts=" << quote(join(spellings(v.flags, false, false))) << "\n"
      << "      values=" << quote(" " + join(spellings(v.flags, true, false)) + " ") << "\n"
      << "      files=" << quote(" " + join(spellings(v.flags, true, true)) + " ") << " ;;\n";
  }
  s << "    *)\n"
    << "      opts=\"\" values=\"\" files=\"\" ;;\n"
    << "  esac\n"
    << "  values=\"$values " << join(global_values) << " \"\n"
    << "  files=\"$files " << join(spellings(globals, true, true)) << " \"\n"
    << "  case \"$verb:$prev\" in\n"
    << value_cases(verbs, globals, false) << "  esac\n"
    << "  if [[ -n \"$prev\" && \"$files\" == *\" $prev \"* ]]; then\n"
    << "    compopt -o filenames 2>/dev/null\n"
    << "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
    << "    return 0\n"
    << "  fi\n"
    << "  if [[ -n \"$prev\" && \"$values\" == *\" $prev \"* ]]; then\n"
    << "    return 0\n"
    << "  fi\n"
    << "  if [[ -z \"$verb\" ]]; then\n"
    << "    if [[ \"$cur\" == -* ]]; then\n"
    << "      COMPREPLY=($(compgen -W " << quote(join(spellings(top, false, false)))
    << " -- \"$cur\"))\n"
    << "    else\n"
    << "      COMPREPLY=($(compgen -W " << quote(join(names(verbs))) << " -- \"$cur\"))\n"
    << "    fi\n"
    << "    return 0\n"
    << "  fi\n"
    << "  if [[ \"$cur\" == -* ]]; then\n"
    << "    COMPREPLY=($(compgen -W \"$opts " << join(spellings(globals, false, false))
    << "\" -- \"$cur\"))\n"
    << "  elif [[ \"$verb\" == completion ]]; then\n"
    << "    COMPREPLY=($(compgen -W " << quote("bash zsh fish") << " -- \"$cur\"))\n"
    << "  elif [[ " << quote(" " + join(names(verbs, true)) + " ") << " == *\" $verb \"* ]]; then\n"
    << kBashContext
    << "    COMPREPLY=($(compgen -W \"$(\"${COMP_WORDS[0]}\" list \"${ctx[@]}\" -o name "
       "2>/dev/null)\" -- \"$cur\"))\n"
    << "  fi\n"
    << "  return 0\n"
    << "}\n"
    << "complete -o default -F _ktrain ktrain\n";
  return s.str();
}

std::string zsh_script(const std::vector<Verb>& verbs, const std::vector<Flag>& top,
                       const std::vector<Flag>& globals) {
  std::ostringstream s;
  const auto global_values = spellings(globals, true, false);
  s << "#compdef ktrain\n"
       "# zsh completion for ktrain. Generated by `ktrain completion zsh`; save it as _ktrain\n"
       "# in a folder of $fpath, or load it with: source <(ktrain completion zsh)\n"
       "_ktrain() {\n"
       "  local verb w i skip=0 prev\n"
       "  local -a verbs opts values files ctx\n"
       "  verbs=(\n";
  for (const auto& v : verbs) s << "    " << quote(v.name + ":" + v.description) << "\n";
  s << "  )\n"
       "  for (( i = 2; i < CURRENT; i++ )); do\n"
       "    w=${words[i]}\n"
       "    if (( skip )); then skip=0; continue; fi\n"
       "    case $w in\n"
       "      "
    << join(global_values, "|")
    << ") skip=1 ;;\n"
       "      -*) ;;\n"
       "      *) verb=$w; break ;;\n"
       "    esac\n"
       "  done\n"
       "  case $verb in\n";
  for (const auto& v : verbs) {
    s << "    " << v.name << ")\n"
      << "      opts=(" << join(spellings(v.flags, false, false)) << ")\n"
      << "      values=(" << join(spellings(v.flags, true, false)) << ")\n"
      << "      files=(" << join(spellings(v.flags, true, true)) << ") ;;\n";
  }
  s << "  esac\n"
    << "  values+=(" << join(global_values) << ")\n"
    << "  files+=(" << join(spellings(globals, true, true)) << ")\n"
    << "  prev=${words[CURRENT-1]}\n"
    << "  case $verb:$prev in\n"
    << value_cases(verbs, globals, true) << "  esac\n"
    << "  if (( ${files[(Ie)$prev]} )); then _files; return; fi\n"
    << "  if (( ${values[(Ie)$prev]} )); then return; fi\n"
    << "  if [[ -z $verb ]]; then\n"
    << "    if [[ $PREFIX == -* ]]; then\n"
    << "      compadd -- " << join(spellings(top, false, false)) << "\n"
    << "    else\n"
    << "      _describe -t verbs 'ktrain verb' verbs\n"
    << "    fi\n"
    << "    return\n"
    << "  fi\n"
    << "  if [[ $PREFIX == -* ]]; then\n"
    << "    compadd -- $opts " << join(spellings(globals, false, false)) << "\n"
    << "  elif [[ $verb == completion ]]; then\n"
    << "    compadd -- bash zsh fish\n"
    << "  elif [[ " << quote(" " + join(names(verbs, true)) + " ") << " == *\" $verb \"* ]]; then\n"
    << kZshContext << "    compadd -- ${(f)\"$(${words[1]} list $ctx -o name 2>/dev/null)\"}\n"
    << "  else\n"
    << "    _files\n"
    << "  fi\n"
    << "}\n"
    << "if [[ $funcstack[1] == _ktrain ]]; then\n"
    << "  _ktrain \"$@\"\n"
    << "else\n"
    << "  compdef _ktrain ktrain\n"
    << "fi\n";
  return s.str();
}

void fish_flag(std::ostringstream& s, const Flag& f, const std::string& condition) {
  s << "complete -c ktrain";
  if (!condition.empty()) s << " -n " << quote(condition, true);
  for (const auto& n : f.shorts) s << " -s " << n;
  for (const auto& n : f.longs) s << " -l " << n;
  if (f.file) {
    s << " -r -F";
  } else if (f.takes_value) {
    s << " -x";
  }
  if (!f.choices.empty()) s << " -a " << quote(join(f.choices), true);
  if (!f.description.empty()) s << " -d " << quote(f.description, true);
  s << "\n";
}

std::string fish_script(const std::vector<Verb>& verbs, const std::vector<Flag>& top) {
  std::ostringstream s;
  s << "# fish completion for ktrain. Generated by `ktrain completion fish`; save it as\n"
       "# ~/.config/fish/completions/ktrain.fish, or load it with:\n"
       "#   ktrain completion fish | source\n"
       "complete -c ktrain -f\n"
       "# Run names where the command will run: -n, --context, --kubeconfig, --local.\n"
       "function __ktrain_runs\n"
       "    set -l words (commandline -opc)\n"
       "    set -l ctx\n"
       "    set -l i 2\n"
       "    while test $i -le (count $words)\n"
       "        switch $words[$i]\n"
       "            case -n --namespace --context --kubeconfig\n"
       "                if test $i -lt (count $words)\n"
       "                    set -a ctx $words[$i] $words[(math $i + 1)]\n"
       "                end\n"
       "                set i (math $i + 1)\n"
       "            case '--namespace=*' '--context=*' '--kubeconfig=*' --local\n"
       "                set -a ctx $words[$i]\n"
       "        end\n"
       "        set i (math $i + 1)\n"
       "    end\n"
       "    ktrain list $ctx -o name 2>/dev/null\n"
       "end\n";
  for (const auto& f : top) fish_flag(s, f, "");
  for (const auto& v : verbs) {
    s << "complete -c ktrain -n __fish_use_subcommand -a " << v.name << " -d "
      << quote(v.description, true) << "\n";
  }
  for (const auto& v : verbs) {
    const std::string condition = "__fish_seen_subcommand_from " + v.name;
    for (const auto& f : v.flags) fish_flag(s, f, condition);
  }
  s << "complete -c ktrain -n " << quote("__fish_seen_subcommand_from completion", true)
    << " -a 'bash zsh fish'\n";
  for (const auto& v : verbs) {
    if (!v.takes_run) continue;
    s << "complete -c ktrain -n " << quote("__fish_seen_subcommand_from " + v.name, true)
      << " -a '(__ktrain_runs)'\n";
  }
  return s.str();
}

}  // namespace

std::string completion_script(const CLI::App& app, const std::string& shell) {
  const auto verbs = verbs_of(app);
  const auto top = flags_of(app, false);
  const auto globals = flags_of(app, true);
  if (shell == "bash") return bash_script(verbs, top, globals);
  if (shell == "zsh") return zsh_script(verbs, top, globals);
  if (shell == "fish") return fish_script(verbs, top);
  throw UsageError("completion " + shell + ": expected one of the shells " +
                   join({kShells[0], kShells[1], kShells[2]}, ", "));
}

void add_completion_command(CLI::App& app, Env& env, CommandResult& result) {
  auto shell = std::make_shared<std::string>();
  auto* sub =
      app.add_subcommand("completion", "Print a shell completion script (bash, zsh or fish)");
  sub->add_option("SHELL", *shell, "bash, zsh or fish")->required();
  sub->callback([shell, &app, &env, &result] {
    const std::string script = completion_script(app, *shell);
    *env.out << script;
    result.status = exit_code::kOk;
  });
}

}  // namespace ktrain::cmd
