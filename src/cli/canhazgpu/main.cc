// canhazgpu: GPU reservations on a shared host.
#include "cli/canhazgpu/entry.h"

int main(int argc, char** argv) { return canhazgpu::cli::Main(argc, argv); }
