#pragma once
// A TLS server context with a fresh self-signed certificate, made in memory for tests that need a
// real TLS peer (the isolation prober's kubelet, API server and Redfish probes). No files, no
// openssl command.

#include <openssl/ssl.h>

#include <string>

namespace cmax::test {

/// A server SSL_CTX holding a new P-256 key and a self-signed certificate for CN=`common_name`,
/// valid for a day. The caller owns it (SSL_CTX_free); nullptr when OpenSSL fails.
SSL_CTX* make_self_signed_server_ctx(const std::string& common_name);

}  // namespace cmax::test
