// ktrain.yaml: launcher and security.

#include "project/parse_internal.h"

namespace ktrain::project::detail {

void ProjectParser::launcher(const Value& v, Launcher& l) {
  if (!c_.map(v, "launcher", "{inject: auto, image: registry.example.com/ktrain/launch:0.1.0}"))
    return;
  c_.check_keys(v, "launcher", "launcher", kLauncherKeys);
  if (const Value* x = field(v, "image")) {
    if (auto s = c_.image(*x, "launcher.image")) {
      l.image = *s;
      l.image_from = "launcher.image";
    }
  }
  if (const Value* x = field(v, "inject")) {
    if (auto s = c_.one_of(*x, "launcher.inject", kInjects)) {
      l.inject = *s == "always"  ? Launcher::Inject::kAlways
                 : *s == "never" ? Launcher::Inject::kNever
                                 : Launcher::Inject::kAuto;
    }
  }
}

void ProjectParser::security(const Value& v, Security& s) {
  if (!c_.map(v, "security", "{runAsUser: 1000}")) return;
  c_.check_keys(v, "security", "security", kSecurityKeys);
  auto id = [&](const char* key, std::optional<std::int64_t>& out) {
    if (const Value* x = field(v, key))
      out = c_.integer(*x, std::string("security.") + key, 0, 2147483647,
                       "a user or group id from 0 to 2147483647");
  };
  id("runAsUser", s.run_as_user);
  id("runAsGroup", s.run_as_group);
  id("fsGroup", s.fs_group);
  if (const Value* x = field(v, "runAsNonRoot"))
    if (auto b = c_.boolean(*x, "security.runAsNonRoot")) s.run_as_non_root = *b;
  if (const Value* x = field(v, "addCapabilities")) {
    if (c_.list(*x, "security.addCapabilities", "[IPC_LOCK]")) {
      for (std::size_t i = 0; i < x->items.size(); ++i) {
        const std::string p = "security.addCapabilities[" + std::to_string(i) + "]";
        auto cap = c_.scalar(x->items[i], p, "a capability like IPC_LOCK");
        if (!cap) continue;
        bool ok = !cap->empty() && std::isupper(static_cast<unsigned char>((*cap)[0])) &&
                  std::all_of(cap->begin(), cap->end(), [](char ch) {
                    return std::isupper(static_cast<unsigned char>(ch)) ||
                           std::isdigit(static_cast<unsigned char>(ch)) || ch == '_';
                  });
        if (!ok) {
          c_.expected(x->items[i], p, "a capability like IPC_LOCK or SYS_PTRACE (uppercase)");
          continue;
        }
        s.add_capabilities.push_back(*cap);
      }
    }
  }
  if (s.run_as_non_root && s.run_as_user && *s.run_as_user == 0) {
    c_.add(field(v, "runAsUser")->origin, "security.runAsUser",
           "0 is root, but runAsNonRoot is true; use a non-zero id or set runAsNonRoot: false");
  }
}

}  // namespace ktrain::project::detail
