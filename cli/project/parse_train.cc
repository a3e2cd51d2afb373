// ktrain.yaml: the train section (command, resources, GPUs, CUDA, volumes, sweep).

#include "project/parse_internal.h"

namespace ktrain::project::detail {

void ProjectParser::train(const Value& v, Train& t) {
  if (!c_.map(v, "train", "{command: [python, train.py], gpus: 8}")) {
    train_ok_ = false;
    return;
  }
  c_.check_keys(v, "train", "train", kTrainKeys);
  if (const Value* x = field(v, "command")) {
    t.command = command(*x, "train.command");
  } else {
    c_.add(v.origin, "train.command",
           "missing; what to run in each worker, like `command: [python, train.py]`");
  }
  if (const Value* x = field(v, "framework"))
    if (auto s = c_.one_of(*x, "train.framework", kFrameworks)) t.framework = *s;
  if (const Value* x = field(v, "target"))
    if (auto s = c_.one_of(*x, "train.target", kTrainTargets)) t.target = *s;
  if (const Value* x = field(v, "runtime"))
    if (auto s = c_.dns_subdomain(*x, "train.runtime", 253, "torch-distributed")) t.runtime = *s;
  if (const Value* x = field(v, "nodes")) {
    if (const auto dots = x->text.find("..");
        x->kind == Kind::kScalar && dots != std::string::npos) {
      // min..max: elastic nodes.
      const std::string lo = x->text.substr(0, dots), hi = x->text.substr(dots + 2);
      auto count = [](const std::string& s) -> int {
        if (s.empty() || s.size() > 6 || s[0] == '0' ||
            s.find_first_not_of("0123456789") != std::string::npos)
          return -1;
        return std::stoi(s);
      };
      const int min = count(lo), max = count(hi);
      if (min < 1 || max < 1) {
        c_.add(x->origin, "train.nodes",
               "expected a whole number >= 1, or elastic nodes as min..max like 2..8; got '" +
                   x->text + "'");
      } else if (min >= max) {
        c_.add(x->origin, "train.nodes",
               "elastic nodes " + x->text + ": the fewest (" + lo + ") must be below the most (" +
                   hi + "); for a fixed count write nodes: " + hi);
      } else {
        t.nodes = max;
        t.min_nodes = min;
      }
    } else if (auto n = c_.whole(*x, "train.nodes", 1)) {
      t.nodes = *n;
    }
  }
  if (const Value* x = field(v, "gpus"))
    if (auto n = c_.whole(*x, "train.gpus", 0)) t.gpus = *n;
  if (const Value* x = field(v, "processesPerNode"))
    if (auto n = c_.whole(*x, "train.processesPerNode", 1)) t.processes_per_node = *n;
  if (const Value* x = field(v, "mig")) {
    if (auto s = c_.scalar(*x, "train.mig", "a MIG profile like 1g.10gb")) {
      if (!is_mig_profile(*s))
        c_.expected(*x, "train.mig", "a MIG profile like 1g.10gb or 3g.40gb");
      else
        t.mig = *s;
    }
  }
  if (const Value* x = field(v, "gpuType")) gpu_type(*x, "train.gpuType", t.gpu_type);
  if (const Value* x = field(v, "cuda")) cuda(*x, "train.cuda", t.cuda);
  if (const Value* x = field(v, "cpu"))
    if (auto s = c_.quantity(*x, "train.cpu", false)) t.cpu = *s;
  if (const Value* x = field(v, "memory"))
    if (auto s = c_.quantity(*x, "train.memory", false)) t.memory = *s;
  if (const Value* x = field(v, "shm"))
    if (auto s = c_.quantity(*x, "train.shm", false)) t.shm = *s;
  if (const Value* x = field(v, "env")) t.env = c_.env(*x, "train.env");
  if (const Value* x = field(v, "envFrom")) env_from(*x, "train.envFrom", t.env_from);
  if (const Value* x = field(v, "volumes")) volumes(*x, "train.volumes", t.volumes, mounts_);
  if (const Value* x = field(v, "restarts"))
    if (auto n = c_.whole(*x, "train.restarts", 0)) t.restarts = *n;
  if (const Value* x = field(v, "retry")) retry(*x, t);
  if (const Value* x = field(v, "deadline"))
    t.deadline_s = c_.duration(*x, "train.deadline", false);
  if (const Value* x = field(v, "ttl")) t.ttl_s = c_.duration(*x, "train.ttl", true);
  if (const Value* x = field(v, "gracePeriod")) {
    if (auto g = c_.duration(*x, "train.gracePeriod", false)) t.grace_period_s = *g;
  }
  if (const Value* x = field(v, "notify")) {
    if (c_.map(*x, "train.notify", "{command: ./notify.sh}")) {
      c_.check_keys(*x, "train.notify", "train.notify", kNotifyKeys);
      if (const Value* y = field(*x, "command")) {
        if (auto s = c_.scalar(*y, "train.notify.command", "a shell command")) {
          if (s->empty()) {
            c_.add(y->origin, "train.notify.command", "empty; a shell command, or leave it out");
          } else {
            t.notify_command = *s;
          }
        }
      }
      if (const Value* y = field(*x, "url")) {
        if (auto s = c_.scalar(*y, "train.notify.url", "an http(s) URL")) {
          if (s->rfind("https://", 0) != 0 && s->rfind("http://", 0) != 0) {
            c_.expected(*y, "train.notify.url", "an http:// or https:// URL");
          } else if (s->find_first_of(" \t\r\n") != std::string::npos) {
            c_.expected(*y, "train.notify.url", "a URL without spaces");
          } else {
            t.notify_url = *s;
          }
        }
      }
      if (!field(*x, "command") && !field(*x, "url")) {
        c_.add(x->origin, "train.notify", "empty; give a command, a url or both");
      }
    }
  }
  if (const Value* x = field(v, "watchdog")) {
    if (c_.map(*x, "train.watchdog", "{timeout: 15m}")) {
      c_.check_keys(*x, "train.watchdog", "train.watchdog", kWatchdogKeys);
      if (const Value* y = field(*x, "timeout")) {
        if (auto d = c_.duration(*y, "train.watchdog.timeout", false)) {
          if (*d < kMinWatchdogSeconds) {
            c_.add(y->origin, "train.watchdog.timeout",
                   "shorter than 1m: it would fire while the workers start (imports, loading "
                   "data, NCCL's set-up print little); a step that prints nothing for long can "
                   "touch KTRAIN_HEARTBEAT_FILE instead");
          } else {
            t.watchdog_s = *d;
          }
        }
      } else {
        c_.add(x->origin, "train.watchdog.timeout", "missing; like `timeout: 15m`");
      }
    }
  }
  if (const Value* x = field(v, "sync")) {
    if (auto b = c_.boolean(*x, "train.sync")) t.sync = *b;
  }
  if (const Value* x = field(v, "preflight"))
    if (auto s = c_.one_of(*x, "train.preflight", kPreflights)) t.preflight = *s;
  if (const Value* x = field(v, "sweep")) sweep(*x, t);
  if (const Value* x = field(v, "command")) placeholders(*x, t);
}

void ProjectParser::retry(const Value& v, Train& t) {
  const std::string path = "train.retry";
  if (!c_.list(v, path, "[{exitCodes: [137, 143], action: retry}]")) return;
  // Which rule takes each exit code (and the disruption, and "any other"): a later rule
  // on the same is never reached, and says so.
  std::map<int, std::string> taken;
  std::string disruption_at, others_at;
  for (std::size_t i = 0; i < v.items.size(); ++i) {
    const std::string p = path + "[" + std::to_string(i) + "]";
    const Value& item = v.items[i];
    if (!c_.map(item, p, "{exitCodes: [137, 143], action: retry}")) continue;
    c_.check_keys(item, p, path + "[]", kRetryKeys);
    RetryRule rule;
    int matches = 0;
    bool ok = true;
    if (const Value* x = field(item, "exitCodes")) {
      ++matches;
      rule.match = RetryRule::Match::kExitCodes;
      if (c_.list(*x, p + ".exitCodes", "[137, 143]")) {
        if (x->items.empty()) {
          c_.add(x->origin, p + ".exitCodes", "empty; list the exit codes, like [137, 143]");
          ok = false;
        }
        for (std::size_t j = 0; j < x->items.size(); ++j) {
          const Value& code = x->items[j];
          const std::string cp = p + ".exitCodes[" + std::to_string(j) + "]";
          auto n = c_.whole(code, cp, 1, 255);
          if (!n) {
            ok = false;
            continue;
          }
          if (auto it = taken.find(*n); it != taken.end()) {
            c_.add(code.origin, cp,
                   "exit code " + std::to_string(*n) + " can never match here: " + it->second +
                       " takes it first");
            ok = false;
            continue;
          }
          if (!others_at.empty()) {
            c_.add(code.origin, cp,
                   "exit code " + std::to_string(*n) + " can never match here: " + others_at +
                       " (otherExitCodes) takes every exit code that no rule before it names");
            ok = false;
            continue;
          }
          taken.emplace(*n, p);
          rule.exit_codes.push_back(*n);
        }
      } else {
        ok = false;
      }
    }
    for (const char* key : {"otherExitCodes", "disruption"}) {
      const Value* x = field(item, key);
      if (!x) continue;
      ++matches;
      const bool others = std::string(key) == "otherExitCodes";
      rule.match = others ? RetryRule::Match::kOtherExitCodes : RetryRule::Match::kDisruption;
      auto b = c_.boolean(*x, p + "." + key);
      if (!b) {
        ok = false;
      } else if (!*b) {
        c_.add(x->origin, p + "." + key, "only true means something here; leave the rule out");
        ok = false;
      } else {
        std::string& at = others ? others_at : disruption_at;
        if (!at.empty()) {
          c_.add(x->origin, p + "." + key,
                 std::string("can never match: ") + at + " takes " +
                     (others ? "the other exit codes" : "the disruptions") + " first");
          ok = false;
        } else {
          at = p;
        }
      }
    }
    if (matches != 1) {
      c_.add(item.origin, p,
             "expected exactly one of exitCodes, otherExitCodes or disruption, found " +
                 std::to_string(matches));
      ok = false;
    }
    if (const Value* x = field(item, "action")) {
      if (auto a = c_.one_of(*x, p + ".action", kRetryActions)) {
        rule.action = *a;
      } else {
        ok = false;
      }
    } else {
      c_.add(item.origin, p + ".action", "missing; fail, retry or retry-free");
      ok = false;
    }
    if (ok && rule.action == "retry" && t.restarts == 0) {
      c_.add(field(item, "action")->origin, p + ".action",
             "retry counts against train.restarts, which is 0: the first such failure would "
             "end the run; set train.restarts, or use retry-free (not counted)");
      ok = false;
    }
    if (ok) {
      std::sort(rule.exit_codes.begin(), rule.exit_codes.end());
      t.retry.push_back(std::move(rule));
    }
  }
  if (t.retry.size() > kMaxRetryRules) {
    c_.add(v.origin, path,
           std::to_string(t.retry.size()) + " rules; at most " + std::to_string(kMaxRetryRules) +
               " (a Job's podFailurePolicy holds 20, and ktrain's own take 3)");
  }
}

bool ProjectParser::is_mig_profile(const std::string& s) {
  // <n>g.<m>gb, optionally +me
  std::size_t i = 0;
  auto digits = [&] {
    std::size_t start = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    return i > start;
  };
  if (!digits() || s.compare(i, 2, "g.") != 0) return false;
  i += 2;
  if (!digits() || s.compare(i, 2, "gb") != 0) return false;
  i += 2;
  return i == s.size() || s.substr(i) == "+me";
}

std::vector<std::string> ProjectParser::command(const Value& v, const std::string& path) {
  std::vector<std::string> out;
  if (!c_.list(v, path, "[python, train.py]")) return out;
  if (v.items.empty()) {
    c_.expected(v, path, "a non-empty list like [python, train.py]");
    return out;
  }
  for (std::size_t i = 0; i < v.items.size(); ++i) {
    if (auto s = c_.scalar(v.items[i], path + "[" + std::to_string(i) + "]", "a string"))
      out.push_back(*s);
  }
  return out;
}

void ProjectParser::env_from(const Value& v, const std::string& path, std::vector<EnvFrom>& out) {
  if (!c_.list(v, path, "[secret/wandb, configMap/hparams]")) return;
  for (std::size_t i = 0; i < v.items.size(); ++i) {
    const std::string p = path + "[" + std::to_string(i) + "]";
    const Value& item = v.items[i];
    const std::string what = "secret/NAME or configMap/NAME, like secret/wandb";
    auto s = c_.scalar(item, p, what);
    if (!s) continue;
    auto slash = s->find('/');
    std::string kind = slash == std::string::npos ? "" : s->substr(0, slash);
    std::string name = slash == std::string::npos ? "" : s->substr(slash + 1);
    if (kind != "secret" && kind != "configMap") {
      c_.expected(item, p, what);
      continue;
    }
    if (!is_dns1123_subdomain(name)) {
      c_.expected(item, p, kind + "/NAME with NAME a DNS-1123 name (" + kNameRule + ", and '.')");
      continue;
    }
    out.push_back({kind == "secret" ? EnvFrom::Kind::kSecret : EnvFrom::Kind::kConfigMap, name});
  }
}

void ProjectParser::gpu_type(const Value& x, const std::string& path, std::string& out) {
  if (auto s = c_.scalar(x, path, "a GPU product like NVIDIA-H100-80GB-HBM3")) {
    if (!is_label_value(*s) || s->empty())
      c_.expected(x, path,
                  "a GPU product label value like NVIDIA-H100-80GB-HBM3 (letters, digits, "
                  "'-', '_', '.'; at most 63)");
    else
      out = *s;
  }
}

void ProjectParser::cuda(const Value& x, const std::string& path, std::string& out) {
  if (auto s = c_.scalar(x, path, "a CUDA version like 12.1")) {
    if (auto v = parse_cuda_version(*s))
      out = v->str();
    else
      c_.expected(x, path, "a CUDA version like 12.1 or 11.8 (MAJOR.MINOR)");
  }
}

void ProjectParser::volumes(const Value& v, const std::string& path, std::vector<Volume>& out,
                            std::map<std::string, std::string>& mounts) {
  if (!c_.list(v, path, "[{claim: imagenet, mount: /data}]")) return;
  std::string checkpoint_at;  // the volume marked `checkpoint: true`
  for (std::size_t i = 0; i < v.items.size(); ++i) {
    const std::string p = path + "[" + std::to_string(i) + "]";
    const Value& item = v.items[i];
    if (!c_.map(item, p, "{claim: imagenet, mount: /data, readOnly: true}")) continue;
    c_.check_keys(item, p, path + "[]", kVolumeKeys);
    Volume vol;
    int sources = 0;
    bool ok = true;
    struct Source {
      const char* key;
      Volume::Kind kind;
    };
    for (Source s :
         {Source{"claim", Volume::Kind::kClaim}, Source{"configMap", Volume::Kind::kConfigMap},
          Source{"secret", Volume::Kind::kSecret}}) {
      if (const Value* x = field(item, s.key)) {
        ++sources;
        vol.kind = s.kind;
        if (auto n = c_.dns_subdomain(*x, p + "." + s.key, 253, "imagenet"))
          vol.source = *n;
        else
          ok = false;
      }
    }
    if (const Value* x = field(item, "emptyDir")) {
      ++sources;
      vol.kind = Volume::Kind::kEmptyDir;
      bool empty_map = x->kind == Kind::kMap && x->entries.empty();
      bool yes = x->kind == Kind::kScalar && !x->quoted && x->text == "true";
      if (!empty_map && !yes) {
        c_.expected(*x, p + ".emptyDir", "{} or true");
        ok = false;
      }
    }
    if (sources != 1) {
      c_.add(item.origin, p,
             "expected exactly one of claim, configMap, secret or emptyDir, found " +
                 std::to_string(sources));
      ok = false;
    }
    if (const Value* x = field(item, "mount")) {
      if (auto m = c_.absolute_path(*x, p + ".mount", "/data")) {
        std::string norm = std::filesystem::path(*m).lexically_normal().string();
        while (norm.size() > 1 && norm.back() == '/') norm.pop_back();
        if (auto it = mounts.find(norm); it != mounts.end()) {
          c_.add(x->origin, p + ".mount",
                 "mount path " + norm + " is already used by " + it->second);
          ok = false;
        } else {
          mounts.emplace(norm, p);
          vol.mount = *m;
        }
      } else {
        ok = false;
      }
    } else {
      c_.add(item.origin, p + ".mount", "missing; where to mount it, like `mount: /data`");
      ok = false;
    }
    if (const Value* x = field(item, "readOnly")) {
      if (auto b = c_.boolean(*x, p + ".readOnly")) vol.read_only = *b;
    }
    if (const Value* x = field(item, "checkpoint")) {
      if (auto b = c_.boolean(*x, p + ".checkpoint")) vol.checkpoint = *b;
      if (vol.checkpoint && path == "train.volumes" &&
          (vol.read_only || vol.kind == Volume::Kind::kConfigMap ||
           vol.kind == Volume::Kind::kSecret)) {
        c_.add(x->origin, p + ".checkpoint",
               "the training job writes its checkpoints here: it cannot be " +
                   std::string(vol.read_only ? "readOnly"
                                             : "a configMap or secret (those are read-only)") +
                   "; use a claim (or emptyDir)");
        ok = false;
      } else if (vol.checkpoint && !checkpoint_at.empty()) {
        c_.add(x->origin, p + ".checkpoint",
               "only one volume can keep the checkpoints; " + checkpoint_at + " does already");
        ok = false;
      } else if (vol.checkpoint) {
        checkpoint_at = p;
      }
    }
    if (ok) out.push_back(vol);
  }
}

void ProjectParser::sweep(const Value& v, Train& t) {
  if (!c_.map(v, "train.sweep", "{lr: [\"0.1\", \"0.01\"]}")) return;
  std::map<std::string, std::string> env_names;
  std::size_t combinations = 1;
  for (std::size_t i = 0; i < v.entries.size(); ++i) {
    const auto& [name, values] = v.entries[i];
    const std::string p = join_path("train.sweep", name);
    // `parallel: N` (a number, not a list of values): at most N runs at once.
    if (name == "parallel" && values.kind != Kind::kList) {
      if (auto n = c_.whole(values, p, 1)) t.sweep_parallel = static_cast<int>(*n);
      continue;
    }
    bool ok = !name.empty() && std::isalpha(static_cast<unsigned char>(name[0])) &&
              std::all_of(name.begin(), name.end(), [](char c) {
                return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
              });
    if (!ok) {
      c_.add(v.key_origins[i], p,
             "expected a parameter name (a letter, then letters, digits or '_') like lr, "
             "found \"" +
                 name + "\"");
      continue;
    }
    std::string upper = name;
    for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    if (auto it = env_names.find(upper); it != env_names.end()) {
      c_.add(v.key_origins[i], p,
             "clashes with `" + it->second + "`: both become KTRAIN_PARAM_" + upper);
      continue;
    }
    env_names.emplace(upper, name);
    SweepParam param{name, {}};
    if (!c_.list(values, p, "[\"0.1\", \"0.01\"]")) continue;
    if (values.items.empty()) {
      c_.expected(values, p, "a non-empty list of values like [\"0.1\", \"0.01\"]");
      continue;
    }
    std::set<std::string> seen;
    for (std::size_t k = 0; k < values.items.size(); ++k) {
      const std::string vp = p + "[" + std::to_string(k) + "]";
      if (auto s = c_.scalar(values.items[k], vp, "a value like \"0.1\"")) {
        if (!seen.insert(*s).second) {
          c_.add(values.items[k].origin, vp, "duplicate value \"" + *s + "\"");
          continue;
        }
        param.values.push_back(*s);
      }
    }
    combinations *= std::max<std::size_t>(param.values.size(), 1);
    if (combinations > 100000) combinations = 100000;
    t.sweep.push_back(std::move(param));
  }
  if (t.sweep_parallel > 0 && t.sweep.empty()) {
    c_.add(v.origin, "train.sweep",
           "`parallel` limits how many runs of the sweep go at once, but there are no "
           "parameters; add some, like `lr: [\"0.1\", \"0.01\"]`");
  }
  if (combinations > 1000) {
    c_.add(v.origin, "train.sweep",

           "expected at most 1000 combinations, found " + (combinations >= 100000
                                                               ? std::string("more than 100000")
                                                               : std::to_string(combinations)));
  }
}

void ProjectParser::placeholders(const Value& v, const Train& t) {
  if (v.kind != Kind::kList) return;
  for (std::size_t i = 0; i < v.items.size(); ++i) {
    const Value& item = v.items[i];
    if (item.kind != Kind::kScalar) continue;
    const std::string& s = item.text;
    for (std::size_t pos = s.find('{'); pos != std::string::npos; pos = s.find('{', pos + 1)) {
      std::size_t end = pos + 1;
      while (end < s.size() && (std::isalnum(static_cast<unsigned char>(s[end])) || s[end] == '_'))
        ++end;
      if (end == pos + 1 || end >= s.size() || s[end] != '}' ||
          !std::isalpha(static_cast<unsigned char>(s[pos + 1])))
        continue;
      std::string name = s.substr(pos + 1, end - pos - 1);
      bool known = std::any_of(t.sweep.begin(), t.sweep.end(),
                               [&](const SweepParam& sp) { return sp.name == name; });
      if (known) continue;
      Keys params;
      for (const auto& sp : t.sweep) params.push_back(sp.name);
      std::string msg = "unknown placeholder {" + name + "}: ";
      if (params.empty()) {
        msg += "there is no train.sweep; add `sweep: {" + name + ": [...]}` to train";
      } else {
        std::string near = closest_match(name, params);
        msg +=
            near.empty() ? "sweep parameters are " + join(params) : "did you mean {" + near + "}?";
      }
      c_.add(item.origin, "train.command[" + std::to_string(i) + "]", msg);
    }
  }
}

}  // namespace ktrain::project::detail
