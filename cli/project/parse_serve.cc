// ktrain.yaml: the serve section (model, autoscale, probes, rollout).

#include "project/parse_internal.h"

namespace ktrain::project::detail {

void ProjectParser::serve(const Value& v, Serve& s) {
  if (!c_.map(v, "serve", "{command: [python, serve.py], port: 8080}")) {
    serve_ok_ = false;
    return;
  }
  c_.check_keys(v, "serve", "serve", kServeKeys);
  if (const Value* x = field(v, "command")) s.command = command(*x, "serve.command");
  if (const Value* x = field(v, "target"))
    if (auto t = c_.one_of(*x, "serve.target", kServeTargets)) s.target = *t;
  if (const Value* x = field(v, "runtime"))
    if (auto r = c_.one_of(*x, "serve.runtime", kServeRuntimes)) s.runtime = *r;
  if (const Value* x = field(v, "model")) model(*x, s);
  if (const Value* x = field(v, "nodes"))
    if (auto n = c_.whole(*x, "serve.nodes", 1)) s.nodes = *n;
  if (const Value* x = field(v, "port")) {
    if (auto n = c_.port(*x, "serve.port")) s.port = *n;
  } else if (!field(v, "runtime")) {
    c_.add(v.origin, "serve.port", "missing; the port the server listens on, like `port: 8080`");
  }
  if (const Value* x = field(v, "gpus"))
    if (auto n = c_.whole(*x, "serve.gpus", 0)) s.gpus = *n;
  if (const Value* x = field(v, "cpu"))
    if (auto q = c_.quantity(*x, "serve.cpu", false)) s.cpu = *q;
  if (const Value* x = field(v, "memory"))
    if (auto q = c_.quantity(*x, "serve.memory", false)) s.memory = *q;
  if (const Value* x = field(v, "gpuType")) gpu_type(*x, "serve.gpuType", s.gpu_type);
  if (const Value* x = field(v, "cuda")) cuda(*x, "serve.cuda", s.cuda);
  if (const Value* x = field(v, "shm"))
    if (auto q = c_.quantity(*x, "serve.shm", false)) s.shm = *q;
  if (const Value* x = field(v, "env")) s.env = c_.env(*x, "serve.env");
  if (const Value* x = field(v, "envFrom")) env_from(*x, "serve.envFrom", s.env_from);
  if (const Value* x = field(v, "volumes")) volumes(*x, "serve.volumes", s.volumes, serve_mounts_);
  if (!s.shm.empty()) {
    if (auto it = serve_mounts_.find("/dev/shm"); it != serve_mounts_.end()) {
      c_.add(field(v, "shm")->origin, "serve.shm",
             "mounts /dev/shm, which " + it->second + " also mounts");
    }
  }
  if (const Value* x = field(v, "startup")) s.startup = probe(*x, "serve.startup");
  if (const Value* x = field(v, "spread")) {
    if (auto b = c_.boolean(*x, "serve.spread")) s.spread = *b;
  }
  if (const Value* x = field(v, "disruption")) {
    if (auto b = c_.boolean(*x, "serve.disruption")) s.disruption = *b;
  }
  if (const Value* x = field(v, "replicas")) s.replicas = c_.whole(*x, "serve.replicas", 0);
  if (const Value* x = field(v, "autoscale")) {
    s.autoscale.emplace();
    autoscale(*x, *s.autoscale);
    if (field(v, "replicas")) {
      c_.add(key_origin(v, "replicas"), "serve.replicas",
             "cannot be combined with serve.autoscale (the autoscaler owns the replica count); "
             "remove one of them");
    }
  }
  if (const Value* x = field(v, "readiness")) s.readiness = probe(*x, "serve.readiness");
  if (const Value* x = field(v, "liveness")) s.liveness = probe(*x, "serve.liveness");
  if (const Value* x = field(v, "rollout")) rollout(*x, s.rollout);
}

void ProjectParser::model(const Value& v, Serve& s) {
  const std::string p = "serve.model";
  if (!c_.map(v, p, "{uri: s3://models/resnet50}")) return;
  c_.check_keys(v, p, p, kModelKeys);
  if (const Value* x = field(v, "uri")) {
    if (auto u = c_.scalar(*x, p + ".uri", "a model URI like s3://models/resnet50")) {
      static const char* const kSchemes[] = {"s3://",    "gs://",   "pvc://", "hf://",
                                             "https://", "http://", "oci://"};
      bool known = false;
      for (const char* scheme : kSchemes) known = known || u->rfind(scheme, 0) == 0;
      if (!known || u->find_first_of(" \t\r\n") != std::string::npos) {
        c_.expected(*x, p + ".uri",
                    "a model URI: s3://, gs://, pvc://, hf://, oci:// or https://, like "
                    "s3://models/resnet50");
      }
      s.model_uri = *u;  // (when bad, kept so that it is not also reported missing)
    }
  } else {
    c_.add(v.origin, p + ".uri", "missing; where the model is, like `uri: s3://models/resnet50`");
  }
  if (const Value* x = field(v, "format")) {
    if (auto f = c_.dns_label(*x, p + ".format", 63, "onnx")) s.model_format = *f;
  }
}

void ProjectParser::autoscale(const Value& v, Autoscale& a) {
  const std::string p = "serve.autoscale";
  if (!c_.map(v, p, "{min: 2, max: 20, cpu: 70}")) return;
  c_.check_keys(v, p, p, kAutoscaleKeys);
  std::optional<int> min, max;
  if (const Value* x = field(v, "min")) min = c_.whole(*x, p + ".min", 1);
  if (const Value* x = field(v, "max")) {
    max = c_.whole(*x, p + ".max", 1);
  } else {
    c_.add(v.origin, p + ".max", "missing; the most replicas, like `max: 20`");
  }
  if (min) a.min = *min;
  if (max) a.max = *max;
  if (min && max && *min > *max) {
    c_.add(field(v, "min")->origin, p + ".min",
           "expected min <= max, found min " + std::to_string(*min) + " > max " +
               std::to_string(*max));
  }
  if (!field(v, "min") && max && *max < 1) a.min = 1;
  if (const Value* x = field(v, "cpu")) a.cpu = c_.whole(*x, p + ".cpu", 1, 100);
  if (const Value* x = field(v, "metric")) {
    const std::string mp = p + ".metric";
    if (c_.map(*x, mp, "{name: DCGM_FI_DEV_GPU_UTIL, target: \"70\"}")) {
      c_.check_keys(*x, mp, mp, kMetricKeys);
      PodsMetric m;
      bool ok = true;
      if (const Value* n = field(*x, "name")) {
        auto s = c_.scalar(*n, mp + ".name", "a metric name like DCGM_FI_DEV_GPU_UTIL");
        if (s && (s->empty() || s->find_first_of(" \t/") != std::string::npos)) {
          c_.expected(*n, mp + ".name", "a metric name like DCGM_FI_DEV_GPU_UTIL");
          ok = false;
        } else if (s) {
          m.name = *s;
        } else {
          ok = false;
        }
      } else {
        c_.add(x->origin, mp + ".name", "missing; the metric, like DCGM_FI_DEV_GPU_UTIL");
        ok = false;
      }
      if (const Value* tv = field(*x, "target")) {
        if (auto q = c_.quantity(*tv, mp + ".target", false))
          m.target = *q;
        else
          ok = false;
      } else {
        c_.add(x->origin, mp + ".target", "missing; the average value per pod, like \"70\"");
        ok = false;
      }
      if (ok) a.metric = m;
    }
  }
}

std::optional<Probe> ProjectParser::probe(const Value& v, const std::string& p) {
  Probe pr;
  if (v.kind == Kind::kScalar) {
    if (v.text.empty() || v.text[0] != '/') {
      c_.expected(v, p, "an HTTP path like /healthz or {path: /healthz}");
      return std::nullopt;
    }
    pr.path = v.text;
    return pr;
  }
  if (!c_.map(v, p, "{path: /healthz}")) return std::nullopt;
  c_.check_keys(v, p, "serve.readiness", kProbeKeys);
  bool ok = true;
  if (const Value* x = field(v, "path")) {
    auto s = c_.scalar(*x, p + ".path", "an HTTP path like /healthz");
    if (s && (s->empty() || (*s)[0] != '/')) {
      c_.expected(*x, p + ".path", "an HTTP path like /healthz");
      ok = false;
    } else if (s) {
      pr.path = *s;
    } else {
      ok = false;
    }
  } else {
    c_.add(v.origin, p + ".path", "missing; the HTTP path to probe, like /healthz");
    ok = false;
  }
  auto num = [&](const char* key, int min, int& out) {
    if (const Value* x = field(v, key)) {
      if (auto n = c_.whole(*x, p + "." + key, min))
        out = *n;
      else
        ok = false;
    }
  };
  if (const Value* x = field(v, "port")) {
    if (auto n = c_.port(*x, p + ".port"))
      pr.port = *n;
    else
      ok = false;
  }
  num("initialDelaySeconds", 0, pr.initial_delay_s);
  num("periodSeconds", 1, pr.period_s);
  num("failureThreshold", 1, pr.failure_threshold);
  if (!ok) return std::nullopt;
  return pr;
}

std::optional<nlohmann::json> ProjectParser::surge(const Value& v, const std::string& p) {
  const std::string what = "a whole number >= 0 or a percentage like 25%";
  if (v.kind == Kind::kScalar && !v.text.empty() && v.text.back() == '%') {
    std::string digits = v.text.substr(0, v.text.size() - 1);
    int n = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (!digits.empty() && ec == std::errc() && end == digits.data() + digits.size() && n >= 0 &&
        n <= 100)
      return nlohmann::json(v.text);
    c_.expected(v, p, what);
    return std::nullopt;
  }
  if (auto n = c_.integer(v, p, 0, std::numeric_limits<int>::max(), what))
    return nlohmann::json(*n);
  return std::nullopt;
}

void ProjectParser::rollout(const Value& v, Rollout& r) {
  if (!c_.map(v, "serve.rollout", "{maxSurge: 1, maxUnavailable: 0}")) return;
  c_.check_keys(v, "serve.rollout", "serve.rollout", kRolloutKeys);
  bool ok = true;
  if (const Value* x = field(v, "maxSurge")) {
    if (auto j = surge(*x, "serve.rollout.maxSurge"))
      r.max_surge = *j;
    else
      ok = false;
  }
  if (const Value* x = field(v, "maxUnavailable")) {
    if (auto j = surge(*x, "serve.rollout.maxUnavailable"))
      r.max_unavailable = *j;
    else
      ok = false;
  }
  auto zero = [](const nlohmann::json& j) {
    return (j.is_number() && j.get<std::int64_t>() == 0) || (j.is_string() && j == "0%");
  };
  if (ok && zero(r.max_surge) && zero(r.max_unavailable)) {
    c_.add(v.origin, "serve.rollout",
           "maxSurge and maxUnavailable cannot both be 0 (the rollout could never progress)");
  }
}

}  // namespace ktrain::project::detail
