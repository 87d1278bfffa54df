#include "cli/k8shazgpu_sim/sim_kubeconfig.h"

#include "absl/strings/escaping.h"
#include "core/strings.h"

namespace canhazgpu::sim {

std::string SimKubeconfig(const std::string& server, const std::string& token,
                          const kubesim::Certificates* certs) {
  std::string cluster = StrCat("    server: ", server, "\n");
  std::string user;
  if (certs != nullptr) {
    cluster += StrCat("    certificate-authority-data: ", absl::Base64Escape(certs->ca_pem), "\n");
    user += StrCat("    client-certificate-data: ", absl::Base64Escape(certs->client_cert_pem),
                   "\n    client-key-data: ", absl::Base64Escape(certs->client_key_pem), "\n");
  }
  if (!token.empty()) user += StrCat("    token: \"", token, "\"\n");
  return StrCat("apiVersion: v1\nkind: Config\ncurrent-context: sim\n",
                "clusters:\n- name: sim\n  cluster:\n", cluster,
                "users:\n- name: sim\n  user:", user.empty() ? " {}\n" : "\n" + user,
                "contexts:\n- name: sim\n  context:\n    cluster: sim\n    user: sim\n",
                "    namespace: default\n");
}

}  // namespace canhazgpu::sim
