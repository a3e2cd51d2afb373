#pragma once
// libcurl, loaded when the first transport is made (not when ktrain starts), and what
// its result codes mean as transport failures.

#include <curl/curl.h>

#include "net/http.h"

namespace ktrain::net::curl {

/// libcurl, loaded when the first transport is made rather than when ktrain starts:
/// libcurl brings some thirty shared libraries, and the verbs that never touch the
/// network (render, validate, init, completion, version) would pay for loading and
/// relocating all of them on every run.
struct CurlLib {
  CURLcode (*global_init)(long) = nullptr;
  CURL* (*easy_init)() = nullptr;
  void (*easy_cleanup)(CURL*) = nullptr;
  void (*easy_reset)(CURL*) = nullptr;
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...) = nullptr;
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...) = nullptr;
  const char* (*easy_strerror)(CURLcode) = nullptr;
  CURLM* (*multi_init)() = nullptr;
  CURLMcode (*multi_cleanup)(CURLM*) = nullptr;
  CURLMcode (*multi_setopt)(CURLM*, CURLMoption, ...) = nullptr;
  CURLMcode (*multi_add_handle)(CURLM*, CURL*) = nullptr;
  CURLMcode (*multi_remove_handle)(CURLM*, CURL*) = nullptr;
  CURLMcode (*multi_perform)(CURLM*, int*) = nullptr;
  CURLMcode (*multi_poll)(CURLM*, struct curl_waitfd[], unsigned int, int, int*) = nullptr;
  CURLMsg* (*multi_info_read)(CURLM*, int*) = nullptr;
  CURLMcode (*multi_wakeup)(CURLM*) = nullptr;
  CURLSH* (*share_init)() = nullptr;
  CURLSHcode (*share_setopt)(CURLSH*, CURLSHoption, ...) = nullptr;
  CURLSHcode (*share_cleanup)(CURLSH*) = nullptr;
  curl_slist* (*slist_append)(curl_slist*, const char*) = nullptr;
  void (*slist_free_all)(curl_slist*) = nullptr;
  curl_version_info_data* (*version_info)(CURLversion) = nullptr;
  /// OpenSSL's SSL_CTX_ctrl, reached through libcurl's own dependencies when libcurl
  /// runs on OpenSSL (else nullptr): sets SSL_MODE_RELEASE_BUFFERS on lean streams.
  long (*ssl_ctx_ctrl)(void*, int, long, void*) = nullptr;
};

/// The loaded libcurl (loading it, and calling curl_global_init, the first time);
/// throws Error when it cannot be loaded.
const CurlLib& lib();

/// What a libcurl result code means as a transport failure.
TransportFailure classify(CURLcode code);

/// The schemes a transfer may use, and those a redirect may go to ("http,https").
/// CURLOPT_PROTOCOLS_STR came with libcurl 7.85; older ones take the bit masks.
void set_protocols(CURL* e, const char* allowed, const char* redirects);

}  // namespace ktrain::net::curl
