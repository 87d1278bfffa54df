// k8shazgpu: GPUs in a Kubernetes cluster with the canhazgpu habit.
#include "cli/k8shazgpu/entry.h"

int main(int argc, char** argv) { return canhazgpu::cli::k8s::Main(argc, argv); }
