// A request in flight on libcurl and its callbacks (net/curl_transfer.h).
#include "net/curl_transfer.h"

#include <algorithm>
#include <cctype>

#include "net/curl_lib.h"

namespace ktrain::net::curl {

namespace {

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

}  // namespace

UrlParts split_url(const std::string& url) {
  UrlParts p;
  auto s = url.find("://");
  if (s == std::string::npos) return p;
  p.scheme = url.substr(0, s);
  auto start = s + 3;
  auto end = url.find_first_of("/?#", start);
  std::string authority =
      url.substr(start, end == std::string::npos ? std::string::npos : end - start);
  p.rest = end == std::string::npos ? "" : url.substr(end);
  if (auto at = authority.rfind('@'); at != std::string::npos) authority = authority.substr(at + 1);
  auto colon = authority.rfind(':');
  if (colon != std::string::npos && authority.find(']', colon) == std::string::npos) {
    p.host = authority.substr(0, colon);
    p.port = authority.substr(colon + 1);
  } else {
    p.host = authority;
  }
  if (p.port.empty()) p.port = p.scheme == "https" ? "443" : "80";
  return p;
}

/// "scheme://host:port" of a URL.
std::string origin_of(const std::string& url) {
  UrlParts p = split_url(url);
  return p.scheme + "://" + p.host + ":" + p.port;
}

bool has_header(const Headers& h, std::string_view name) {
  return std::any_of(h.begin(), h.end(), [&](const auto& kv) { return iequals(kv.first, name); });
}

size_t on_header_line(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * n);
  if (line.substr(0, 5) == "HTTP/") {
    // A new response begins (after 1xx, a redirect, or a proxy's CONNECT answer).
    t->resp.headers.clear();
    auto sp = line.find(' ');
    if (sp != std::string_view::npos) {
      try {
        t->resp.status = std::stoi(std::string(line.substr(sp + 1, 3)));
      } catch (const std::exception&) {
        t->resp.status = 0;
      }
    }
    return size * n;
  }
  auto colon = line.find(':');
  if (colon != std::string_view::npos) {
    t->resp.headers.emplace_back(trim(line.substr(0, colon)), trim(line.substr(colon + 1)));
  }
  return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  long code = 0;
  lib().easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
  if (code > 0) t->resp.status = static_cast<int>(code);
  t->deliver_headers();
  std::string_view chunk(data, size * n);
  if (t->req->on_data) {
    if (!t->req->on_data(chunk)) {
      t->aborted = true;
      return 0;
    }
    return size * n;
  }
  const std::size_t max = t->req->max_body_bytes;
  curl_off_t announced = -1;
  if (t->resp.body.empty() &&
      lib().easy_getinfo(t->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &announced) == CURLE_OK &&
      announced > 0 && static_cast<std::uint64_t>(announced) > max) {
    t->too_large = true;  // by its Content-Length: not a byte of it is read
    return 0;
  }
  if (!append_capped(t->resp.body, chunk, max)) {
    t->too_large = true;
    return 0;
  }
  return size * n;
}

size_t on_read(char* buf, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t got = t->req->body_reader(t->read_offset, buf, size * n);
  t->read_offset += got;
  const std::int64_t length = t->req->body_length;
  if (got == 0 && length >= 0 && t->read_offset < static_cast<std::uint64_t>(length)) {
    // The body ended before the length announced (a file that shrank): stop, rather
    // than wait with the server for bytes that will not come.
    t->short_body = true;
    return CURL_READFUNC_ABORT;
  }
  return got;
}

int on_seek(void* user, curl_off_t offset, int origin) {
  auto* t = static_cast<Transfer*>(user);
  if (origin != SEEK_SET || offset < 0) return CURL_SEEKFUNC_CANTSEEK;
  t->read_offset = static_cast<std::uint64_t>(offset);
  return CURL_SEEKFUNC_OK;
}
CURLcode release_tls_buffers(CURL*, void* ssl_ctx, void*) {
  constexpr int kSslCtrlMode = 33;             // SSL_CTRL_MODE
  constexpr long kSslModeReleaseBuffers = 16;  // SSL_MODE_RELEASE_BUFFERS
  lib().ssl_ctx_ctrl(ssl_ctx, kSslCtrlMode, kSslModeReleaseBuffers, nullptr);
  return CURLE_OK;
}

}  // namespace ktrain::net::curl
