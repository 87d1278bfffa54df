// A throwaway PKI for `k8shazgpu-sim apiserver --tls`: a CA, a server
// certificate for localhost and 127.0.0.1 (and ::1), and a client
// certificate for the kubeconfig, all signed by the CA, P-256 keys, valid
// for a day. Nothing is written to disk here. Thread-safe.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace canhazgpu::kubesim {

struct Certificates {
  std::string ca_pem;
  std::string server_cert_pem;
  std::string server_key_pem;
  std::string client_cert_pem;  // CN "sim-admin", O "system:masters"
  std::string client_key_pem;
};

absl::StatusOr<Certificates> GenerateCertificates();

}  // namespace canhazgpu::kubesim
