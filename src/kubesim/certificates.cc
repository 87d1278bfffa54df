#include "kubesim/certificates.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>

namespace canhazgpu::kubesim {
namespace {

struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
  void operator()(X509* c) const { X509_free(c); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, CertFree>;

Key NewKey() { return Key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256")); }

bool AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) return false;
  const bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

// A certificate for `key` named `cn` (and `org`), signed by `issuer_key`
// as `issuer` (itself when null).
Cert Issue(EVP_PKEY* key, const char* cn, const char* org, X509* issuer, EVP_PKEY* issuer_key,
           bool ca, const char* san, const char* usage) {
  Cert cert(X509_new());
  if (!cert) return nullptr;
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  RAND_bytes(serial, sizeof(serial));
  serial[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(serial, sizeof(serial), nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                             -1, -1, 0);
  if (org != nullptr) {
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(org),
                               -1, -1, 0);
  }
  X509* signer = issuer != nullptr ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  bool ok = AddExtension(cert.get(), signer, NID_basic_constraints,
                         ca ? "critical,CA:TRUE" : "critical,CA:FALSE") &&
            AddExtension(cert.get(), signer, NID_key_usage,
                         ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature") &&
            AddExtension(cert.get(), signer, NID_subject_key_identifier, "hash");
  if (ok && !ca) ok = AddExtension(cert.get(), signer, NID_ext_key_usage, usage);
  if (ok && san != nullptr) ok = AddExtension(cert.get(), signer, NID_subject_alt_name, san);
  if (!ok || X509_sign(cert.get(), issuer_key, EVP_sha256()) == 0) return nullptr;
  return cert;
}

std::string Pem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

std::string Pem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

}  // namespace

absl::StatusOr<Certificates> GenerateCertificates() {
  Key ca_key = NewKey(), server_key = NewKey(), client_key = NewKey();
  if (!ca_key || !server_key || !client_key) return absl::InternalError("cannot make a key");
  Cert ca = Issue(ca_key.get(), "k8shazgpu-sim CA", nullptr, nullptr, ca_key.get(), true, nullptr,
                  nullptr);
  if (!ca) return absl::InternalError("cannot make the CA certificate");
  Cert server = Issue(server_key.get(), "k8shazgpu-sim", nullptr, ca.get(), ca_key.get(), false,
                      "DNS:localhost,IP:127.0.0.1,IP:::1", "serverAuth");
  Cert client = Issue(client_key.get(), "sim-admin", "system:masters", ca.get(), ca_key.get(),
                      false, nullptr, "clientAuth");
  if (!server || !client) return absl::InternalError("cannot sign a certificate");
  return Certificates{.ca_pem = Pem(ca.get()),
                      .server_cert_pem = Pem(server.get()),
                      .server_key_pem = Pem(server_key.get()),
                      .client_cert_pem = Pem(client.get()),
                      .client_key_pem = Pem(client_key.get())};
}

}  // namespace canhazgpu::kubesim
