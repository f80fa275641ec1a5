#pragma once
// TLS server credentials made in memory for tests that need a real TLS peer (the isolation
// prober's kubelet, API server and Redfish probes; KubeClient's CA handling). No files, no openssl
// command.

#include <openssl/ssl.h>

#include <string>

namespace cmax::test {

/// A fresh P-256 key and a self-signed certificate for CN=`common_name` with subjectAltName
/// IP:127.0.0.1 and DNS:localhost, valid for a day. Owns both.
class SelfSigned {
 public:
  explicit SelfSigned(const std::string& common_name);
  ~SelfSigned();
  SelfSigned(const SelfSigned&) = delete;
  SelfSigned& operator=(const SelfSigned&) = delete;

  bool ok() const { return cert_ != nullptr && key_ != nullptr; }
  X509* cert() const { return cert_; }
  EVP_PKEY* key() const { return key_; }
  /// The certificate as PEM (what a kubeconfig's certificate-authority-data decodes to).
  std::string cert_pem() const;

 private:
  X509* cert_ = nullptr;
  EVP_PKEY* key_ = nullptr;
};

/// A server SSL_CTX holding a SelfSigned for `common_name`. The caller owns it (SSL_CTX_free);
/// nullptr when OpenSSL fails.
SSL_CTX* make_self_signed_server_ctx(const std::string& common_name);

}  // namespace cmax::test
