#include "support/tls_server_ctx.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace cmax::test {

SelfSigned::SelfSigned(const std::string& common_name) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  bool ok = key && cert;
  if (ok) {
    X509_set_version(cert, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert), -60);
    X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
    X509_set_pubkey(cert, key);
    X509_NAME* name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1, 0);
    X509_set_issuer_name(cert, name);
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, cert, cert, nullptr, nullptr, 0);
    X509_EXTENSION* san =
        X509V3_EXT_conf_nid(nullptr, &v3, NID_subject_alt_name, const_cast<char*>("IP:127.0.0.1,DNS:localhost"));
    ok = san && X509_add_ext(cert, san, -1) == 1;
    X509_EXTENSION_free(san);
    ok = ok && X509_sign(cert, key, EVP_sha256()) > 0;
  }
  if (!ok) {
    X509_free(cert);
    EVP_PKEY_free(key);
    return;
  }
  cert_ = cert;
  key_ = key;
}

SelfSigned::~SelfSigned() {
  X509_free(cert_);
  EVP_PKEY_free(key_);
}

std::string SelfSigned::cert_pem() const {
  if (!cert_) return {};
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert_);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<std::size_t>(n));
  BIO_free(bio);
  return out;
}

SSL_CTX* make_self_signed_server_ctx(const std::string& common_name) {
  SelfSigned creds(common_name);
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (!creds.ok() || !ctx || SSL_CTX_use_certificate(ctx, creds.cert()) != 1 ||
      SSL_CTX_use_PrivateKey(ctx, creds.key()) != 1) {
    SSL_CTX_free(ctx);
    return nullptr;
  }
  return ctx;  // holds its own references to the certificate and key
}

}  // namespace cmax::test
