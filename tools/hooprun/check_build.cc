// hooprun --check-build (horovodrun's -cb): what this hoop was built with, in horovodrun's
// shape (frameworks, controllers, tensor operations), answered for hoop: the PyTorch package
// where one was built next to this hooprun (the build tree's, an install's, or the pip-installed
// package this hooprun lies in), hoop's own
// controller, CUDA, and the transport back ends built into libhoop. hoop-info says more.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "common/device.h"
#include "common/version.h"
#include "tools/hooprun/options.h"
#include "transport/transport.h"

namespace hoop::run {

namespace {

namespace fs = std::filesystem;

// A hoop package with the torch.distributed backend, next to this hooprun: "" if none.
std::string TorchPackage() {
  std::error_code ec;
  const fs::path bin = fs::read_symlink("/proc/self/exe", ec).parent_path();
  if (ec) return "";
  // A pip install's hoop/bin lies in the package itself; a build tree's bin next to python/hoop.
  std::vector<fs::path> places = {bin / "..", bin / ".." / "python" / "hoop"};
  for (const char* more : {"python-more", "lib"}) {
    fs::path root = bin / ".." / more;
    if (!fs::is_directory(root, ec)) continue;
    for (const auto& d : fs::directory_iterator(root, ec)) {
      places.push_back(d.path() / "python" / "hoop");         // build/python-more/N/python/hoop
      places.push_back(d.path() / "dist-packages" / "hoop");  // lib/python3.X/dist-packages/hoop
      places.push_back(d.path() / "site-packages" / "hoop");
    }
  }
  for (const fs::path& p : places) {
    if (!fs::is_directory(p, ec)) continue;
    for (const auto& f : fs::directory_iterator(p, ec))
      if (f.path().filename().string().rfind("_c10d", 0) == 0) return fs::weakly_canonical(p, ec).string();
  }
  return "";
}

void Row(bool on, const std::string& what) { std::printf("    [%c] %s\n", on ? 'X' : ' ', what.c_str()); }

}  // namespace

int PrintCheckBuild() {
  std::printf("%s:\n\nAvailable Frameworks:\n", VersionLine("hoop").c_str());
  const std::string torch = TorchPackage();
  Row(!torch.empty(),
      torch.empty() ? "PyTorch (no hoop package with the torch.distributed backend next to this hooprun)"
                    : "PyTorch (torch.distributed backend \"hoop\" and hoop.torch, Horovod's API: " + torch + ")");
  Row(false, "TensorFlow");
  Row(false, "MXNet");
  std::printf("\nAvailable Controllers:\n");
  Row(true, "hoop (hooprun's store and tensor fusion negotiation; mpirun, Slurm and torchrun jobs join it too)");
  Row(false, "MPI");
  Row(false, "Gloo");
  std::printf("\nAvailable Tensor Operations:\n");
  Row(BuiltWithCuda(), "CUDA (device buffers, staged or by CUDA IPC)");
  Row(false, "NCCL");
  for (const std::string& name : RegisteredTransports()) Row(true, name + " (transport)");
  return 0;
}

}  // namespace hoop::run
