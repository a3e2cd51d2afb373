#pragma once
// A client of the OCI distribution API (registries: Docker Hub, Harbor, ECR, GHCR,
// distribution): manifests, blobs (HEAD, cross-repository mount, monolithic and
// chunked uploads), and auth (anonymous, Basic, Bearer tokens from WWW-Authenticate).

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/image_ref.h"
#include "net/http.h"
#include "oci/credentials.h"
#include "oci/tar.h"

namespace ktrain::oci {

/// Settings of a RegistryClient.
struct RegistryOptions {
  /// Hosts ("host" or "host:port") reached over plain HTTP; localhost, 127.0.0.1 and
  /// ::1 always are.
  std::vector<std::string> insecure_hosts;
  /// PATCH uploads in chunks of this many bytes; 0 = one monolithic PUT per blob.
  std::uint64_t chunk_size = 0;
};

/// A manifest as the registry returned it.
struct ManifestBytes {
  std::string media_type;
  std::string bytes;
  std::string digest;
};

/// A repository in a registry (the registry and repository parts of an ImageRef).
struct Repo {
  std::string registry;
  std::string repository;
  std::string str() const { return registry + "/" + repository; }
};

/// Talks to registries through an HttpTransport (wrap it with RetryingTransport for
/// retries). Thread-safe.
class RegistryClient {
 public:
  RegistryClient(net::HttpTransport& transport, CredentialStore& creds,
                 RegistryOptions options = {});

  /// The manifest of `ref` (tag or digest). An index or manifest list is resolved to
  /// `platform` ("os/arch" or "os/arch/variant"). Every manifest fetched by digest (the
  /// one `ref` pins, the one an index names) is verified: the sha256 of the bytes
  /// received must be that digest, and their length the index's size. Throws Error when
  /// the image does not exist, no manifest matches the platform, a digest is not a
  /// sha256 digest, or the bytes do not match.
  ManifestBytes get_manifest(const ImageRef& ref, const std::string& platform);
  /// The longest manifest or index read (as containerd's limit): 4 MiB.
  static constexpr std::size_t kMaxManifestBytes = std::size_t{4} << 20;
  /// The longest blob get_blob reads whole (an image config): 16 MiB.
  static constexpr std::size_t kMaxSmallBlobBytes = std::size_t{16} << 20;
  /// A whole (small) blob, verified against its digest and, when `size` >= 0, its size;
  /// at most kMaxSmallBlobBytes (else Error, before or while it is fetched).
  std::string get_blob(const Repo& repo, const std::string& digest, std::int64_t size = -1);
  /// Streams a blob into `sink`, then verifies its digest; with `size` >= 0 the
  /// download stops when more than `size` bytes come, and fewer are an error. Throws
  /// Error when `digest` is not a sha256 digest, or the bytes do not match; an Error
  /// thrown by `sink` stops the download and comes out with the blob named.
  void download_blob(const Repo& repo, const std::string& digest, const ByteSink& sink,
                     std::int64_t size = -1);
  /// Whether the registry has blob `digest` in `repo` (HEAD).
  bool blob_exists(const Repo& repo, const std::string& digest);
  /// Asks the registry to mount `digest` from repository `from` (same registry) into
  /// `repo`; returns whether it did (else the caller uploads).
  bool mount_blob(const Repo& repo, const std::string& digest, const std::string& from);
  /// Uploads `size` bytes read by `reader` (offset-based, like Request::body_reader) as
  /// blob `digest`. `progress` sees the bytes sent so far.
  void upload_blob(const Repo& repo, const std::string& digest, std::uint64_t size,
                   const std::function<std::size_t(std::uint64_t, char*, std::size_t)>& reader,
                   const std::function<void(std::uint64_t)>& progress = nullptr);
  /// Opens an upload session in `repo`; returns its location (for the calls below).
  std::string start_upload(const Repo& repo);
  /// Sends the whole blob through the session as one PATCH whose body streams from
  /// `reader` (offset-based, like Request::body_reader; 0 = the end) with no length
  /// given beforehand (chunked transfer encoding on HTTP/1.1), as docker push does;
  /// returns the session's next location. Throws Error when the registry refuses.
  std::string upload_stream(
      const Repo& repo, const std::string& location,
      const std::function<std::size_t(std::uint64_t, char*, std::size_t)>& reader);
  /// Closes the session as blob `digest` of `size` bytes (all sent with upload_stream).
  void finish_upload(const Repo& repo, const std::string& location, const std::string& digest,
                     std::uint64_t size);
  /// Abandons a session (DELETE; failures are ignored).
  void cancel_upload(const Repo& repo, const std::string& location);
  /// Whether a manifest with this digest exists (HEAD).
  bool manifest_exists(const Repo& repo, const std::string& digest);
  /// Puts a manifest under `reference` (a tag or its digest).
  void put_manifest(const Repo& repo, const std::string& reference, const std::string& media_type,
                    const std::string& bytes);

  /// Blob bytes this client has sent (uploads), for reports.
  std::uint64_t bytes_uploaded() const { return uploaded_; }
  /// The base URL of `registry`: https://host, or http://host for insecure hosts.
  std::string base_url(const std::string& registry) const;

 private:
  net::Response send(net::Request req, const Repo& repo, bool push,
                     const std::vector<std::string>& extra_scopes = {});
  std::string authorize(const std::string& challenge, const Repo& repo, bool push,
                        const std::vector<std::string>& extra_scopes, const Credentials& creds);
  Credentials credentials_for(const std::string& registry);
  [[noreturn]] void fail(const std::string& doing, const net::Request& req,
                         const net::Response& resp, const Repo& repo);

  net::HttpTransport& transport_;
  CredentialStore& creds_;
  RegistryOptions options_;
  std::mutex mutex_;
  std::map<std::string, std::string> auth_header_;  // registry -> Authorization value
  std::map<std::string, Credentials> creds_cache_;
  std::atomic<std::uint64_t> uploaded_{0};
};

/// A blob uploaded while it is being made, before its digest is known: bytes come in
/// through write(), in order, and go to the registry as the body of one PATCH of an
/// upload session, sent from a thread of its own as they come. At most `buffer` bytes
/// wait between the maker and the connection: memory stays bounded, and a registry
/// slower than the maker slows it down rather than piling bytes up. finish() ends the
/// body and closes the session with the digest. A failure is kept, not thrown: what
/// comes after is dropped, finish() returns false, and the caller uploads the blob
/// from its file as usual (error() says why, for -v).
class BlobUploadStream {
 public:
  BlobUploadStream(RegistryClient& client, Repo repo, std::size_t buffer = 8u << 20);
  /// Ends the body and waits for the PATCH; abandons a session that finish() did not
  /// close.
  ~BlobUploadStream();
  BlobUploadStream(const BlobUploadStream&) = delete;
  BlobUploadStream& operator=(const BlobUploadStream&) = delete;

  /// Appends bytes (the session opens with the first of them); waits while `buffer`
  /// bytes are already waiting to be sent.
  void write(std::string_view data);
  /// Sends what is left and closes the session as blob `digest`; true when the registry
  /// has the blob.
  bool finish(const std::string& digest);
  /// Bytes handed to write() so far.
  std::uint64_t size() const { return size_; }
  /// Why the stream failed ("" when it has not).
  const std::string& error() const { return error_; }

 private:
  void send();  // the sender thread
  std::size_t read(std::uint64_t offset, char* buf, std::size_t len);
  void end_body();
  void fail(const std::string& why);

  RegistryClient& client_;
  Repo repo_;
  std::size_t buffer_;
  std::uint64_t size_ = 0;  ///< bytes written
  std::thread sender_;
  std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_:
  std::deque<std::string> queue_;  ///< bytes written, not yet read into the body
  std::size_t queued_ = 0;
  std::size_t front_read_ = 0;  ///< of queue_.front(), already read
  std::uint64_t read_ = 0;      ///< body bytes read so far
  bool ended_ = false;          ///< no more bytes will come
  bool failed_ = false;
  std::string error_;
  std::string location_;  ///< the session's (next) location once open
  bool closed_ = false;
};

/// The host to send API requests to: docker.io is served by registry-1.docker.io.
std::string api_host(const std::string& registry);

/// Parses a WWW-Authenticate challenge: the scheme ("bearer", "basic", lower case) and
/// its parameters (realm, service, scope).
std::pair<std::string, std::map<std::string, std::string>> parse_challenge(
    const std::string& header);

}  // namespace ktrain::oci
