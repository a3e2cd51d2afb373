// Loading libcurl and reading its result codes (net/curl_lib.h).
#include "net/curl_lib.h"

#include <string_view>

#include "base/dynlib.h"

namespace ktrain::net::curl {

namespace {

/// Loads libcurl (once) and calls curl_global_init; throws Error when it cannot.
const CurlLib& load_curl() {
  return load_library_once<CurlLib>(
      "libcurl.so.4", "install libcurl4 (Debian/Ubuntu) or libcurl (Fedora), 7.77 or newer",
      [](DynamicLibrary& dl, CurlLib& l) {
        dl.bind(l.global_init, "curl_global_init");
        dl.bind(l.easy_init, "curl_easy_init");
        dl.bind(l.easy_cleanup, "curl_easy_cleanup");
        dl.bind(l.easy_reset, "curl_easy_reset");
        dl.bind(l.easy_setopt, "curl_easy_setopt");
        dl.bind(l.easy_getinfo, "curl_easy_getinfo");
        dl.bind(l.easy_strerror, "curl_easy_strerror");
        dl.bind(l.multi_init, "curl_multi_init");
        dl.bind(l.multi_cleanup, "curl_multi_cleanup");
        dl.bind(l.multi_setopt, "curl_multi_setopt");
        dl.bind(l.multi_add_handle, "curl_multi_add_handle");
        dl.bind(l.multi_remove_handle, "curl_multi_remove_handle");
        dl.bind(l.multi_perform, "curl_multi_perform");
        dl.bind(l.multi_poll, "curl_multi_poll");
        dl.bind(l.multi_info_read, "curl_multi_info_read");
        dl.bind(l.multi_wakeup, "curl_multi_wakeup");
        dl.bind(l.share_init, "curl_share_init");
        dl.bind(l.share_setopt, "curl_share_setopt");
        dl.bind(l.share_cleanup, "curl_share_cleanup");
        dl.bind(l.slist_append, "curl_slist_append");
        dl.bind(l.slist_free_all, "curl_slist_free_all");
        dl.bind(l.version_info, "curl_version_info");
        if (!dl.ok()) return;
        l.global_init(CURL_GLOBAL_DEFAULT);
        const curl_version_info_data* v = l.version_info(CURLVERSION_NOW);
        if (v && v->ssl_version && std::string_view(v->ssl_version).substr(0, 8) == "OpenSSL/") {
          dl.bind_optional(l.ssl_ctx_ctrl, "SSL_CTX_ctrl");
        }
      });
}

}  // namespace

const CurlLib& lib() {
  static const CurlLib& l = load_curl();
  return l;
}

TransportFailure classify(CURLcode code) {
  switch (code) {
    case CURLE_OK:
      return TransportFailure::kNone;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return TransportFailure::kResolve;
    case CURLE_COULDNT_CONNECT:
      return TransportFailure::kConnect;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_USE_SSL_FAILED:
      return TransportFailure::kTls;
    case CURLE_OPERATION_TIMEDOUT:
      return TransportFailure::kTimeout;
    case CURLE_GOT_NOTHING:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_HTTP3:
      return TransportFailure::kDropped;
    case CURLE_WRITE_ERROR:
    case CURLE_ABORTED_BY_CALLBACK:
      return TransportFailure::kAborted;
    default:
      return TransportFailure::kOther;
  }
}

void set_protocols(CURL* e, const char* allowed, const char* redirects) {
  if (lib().easy_setopt(e, CURLOPT_PROTOCOLS_STR, allowed) == CURLE_OK &&
      lib().easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, redirects) == CURLE_OK) {
    return;
  }
  auto mask = [](std::string_view list) {
    long m = 0;
    while (!list.empty()) {
      const std::string_view name = list.substr(0, list.find(','));
      if (name == "http") m |= CURLPROTO_HTTP;
      if (name == "https") m |= CURLPROTO_HTTPS;
      list.remove_prefix(std::min(list.size(), name.size() + 1));
    }
    return m;
  };
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  lib().easy_setopt(e, CURLOPT_PROTOCOLS, mask(allowed));
  lib().easy_setopt(e, CURLOPT_REDIR_PROTOCOLS, mask(redirects));
#pragma GCC diagnostic pop
}

}  // namespace ktrain::net::curl
