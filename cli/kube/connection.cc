#include "kube/connection.h"

namespace ktrain::kube {

Connection::Connection(Env& env) {
  LoadOptions opts;
  if (auto dir = env.var(kServiceAccountDirVar); dir && !dir->empty()) {
    opts.service_account_dir = *dir;
  }
  ClientConfig config = load_client_config(env, opts);
  curl_ = std::make_unique<net::CurlTransport>();
  net::HttpTransport* inner = curl_.get();
  if (env.global.verbose > 0 && env.err) {
    log_ =
        std::make_unique<net::LoggingTransport>(*inner, *env.err, *env.clock, env.global.verbose);
    inner = log_.get();
  }
  retry_ = std::make_unique<net::RetryingTransport>(*inner, *env.clock);
  client_ = std::make_unique<Client>(std::move(config), *retry_, env, runner_);
}

}  // namespace ktrain::kube
