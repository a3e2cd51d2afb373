// ktrain.yaml: scheduling (queue, priority, gang, node selection, tolerations, managedBy).

#include "project/parse_internal.h"

namespace ktrain::project::detail {

void ProjectParser::scheduling(const Value& v, Scheduling& s) {
  if (!c_.map(v, "scheduling", "{queue: team-a, gang: kueue}")) return;
  c_.check_keys(v, "scheduling", "scheduling", kSchedulingKeys);
  if (const Value* x = field(v, "queue"))
    if (auto n = c_.dns_subdomain(*x, "scheduling.queue", 63, "team-a")) s.queue = *n;
  if (const Value* x = field(v, "gang"))
    if (auto g = c_.one_of(*x, "scheduling.gang", kGangs)) s.gang = *g;
  if (const Value* x = field(v, "priority"))
    if (auto n = c_.dns_subdomain(*x, "scheduling.priority", 253, "high")) s.priority = *n;
  if (const Value* x = field(v, "nodeSelector"))
    s.node_selector = c_.labels(*x, "scheduling.nodeSelector", false);
  if (const Value* x = v.find("tolerations")) {
    s.tolerations_set = true;
    if (x->kind != Kind::kNull) tolerations(*x, s.tolerations);
  }
  if (const Value* x = field(v, "runtimeClass"))
    if (auto n = c_.dns_subdomain(*x, "scheduling.runtimeClass", 253, "nvidia"))
      s.runtime_class = *n;
  if (const Value* x = field(v, "managedBy"))
    if (auto n = c_.domain_path(*x, "scheduling.managedBy", 63, "kueue.x-k8s.io/multikueue"))
      s.managed_by = *n;
}

void ProjectParser::tolerations(const Value& v, std::vector<Toleration>& out) {
  const std::string example =
      "\"nvidia.com/gpu:NoSchedule\", \"dedicated=ml:NoSchedule\" or {key, operator, value, "
      "effect, tolerationSeconds}";
  if (!c_.list(v, "scheduling.tolerations", "[\"nvidia.com/gpu:NoSchedule\"]")) return;
  for (std::size_t i = 0; i < v.items.size(); ++i) {
    const std::string p = "scheduling.tolerations[" + std::to_string(i) + "]";
    const Value& item = v.items[i];
    if (item.kind == Kind::kScalar) {
      if (auto t = short_toleration(item.text)) {
        out.push_back(*t);
      } else {
        c_.expected(item, p, "a toleration like " + example);
      }
      continue;
    }
    if (item.kind != Kind::kMap) {
      c_.expected(item, p, "a toleration like " + example);
      continue;
    }
    c_.check_keys(item, p, "scheduling.tolerations[]", kTolerationKeys);
    Toleration t;
    t.op = "Equal";
    bool ok = true;
    if (const Value* x = field(item, "key")) {
      auto k = c_.scalar(*x, p + ".key", "a taint key like nvidia.com/gpu");
      if (k && !k->empty() && !is_label_key(*k)) {
        c_.expected(*x, p + ".key", "a taint key like nvidia.com/gpu");
        ok = false;
      } else if (k) {
        t.key = *k;
      }
    }
    if (const Value* x = field(item, "operator")) {
      if (auto o = c_.one_of(*x, p + ".operator", kOperators))
        t.op = *o;
      else
        ok = false;
    }
    if (const Value* x = field(item, "value")) {
      auto val = c_.scalar(*x, p + ".value", "a taint value like ml");
      if (val && !is_label_value(*val)) {
        c_.expected(*x, p + ".value", "a taint value like ml");
        ok = false;
      } else if (val) {
        t.value = *val;
      }
    }
    if (const Value* x = field(item, "effect")) {
      if (auto e = c_.one_of(*x, p + ".effect", kEffects))
        t.effect = *e;
      else
        ok = false;
    }
    if (const Value* x = field(item, "tolerationSeconds")) {
      t.toleration_seconds =
          c_.integer(*x, p + ".tolerationSeconds", 0, std::numeric_limits<std::int64_t>::max(),
                     "a whole number of seconds >= 0");
      if (t.effect != "NoExecute") {
        c_.add(x->origin, p + ".tolerationSeconds",
               "only applies with effect: NoExecute (effect is " +
                   (t.effect.empty() ? std::string("not set") : t.effect) + ")");
        ok = false;
      }
    }
    if (t.op == "Exists" && !t.value.empty()) {
      c_.add(item.origin, p + ".value", "must be empty with operator: Exists");
      ok = false;
    }
    if (t.op == "Equal" && t.key.empty()) {
      c_.add(item.origin, p + ".key", "missing; operator: Equal needs a key (or use Exists)");
      ok = false;
    }
    if (ok) out.push_back(t);
  }
}

std::optional<Toleration> ProjectParser::short_toleration(const std::string& s) {
  Toleration t;
  std::string rest = s;
  if (auto colon = rest.rfind(':'); colon != std::string::npos) {
    t.effect = rest.substr(colon + 1);
    if (std::find(kEffects.begin(), kEffects.end(), t.effect) == kEffects.end())
      return std::nullopt;
    rest = rest.substr(0, colon);
  }
  if (auto eq = rest.find('='); eq != std::string::npos) {
    t.key = rest.substr(0, eq);
    t.value = rest.substr(eq + 1);
    t.op = "Equal";
    if (!is_label_value(t.value)) return std::nullopt;
  } else {
    t.key = rest;
    t.op = "Exists";
  }
  if (!is_label_key(t.key)) return std::nullopt;
  return t;
}

}  // namespace ktrain::project::detail
