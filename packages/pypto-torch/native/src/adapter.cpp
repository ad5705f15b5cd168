// pypto._torch_npu._native: the optional native adapter between pypto.torch and torch_npu.
//
// It answers only what torch_npu's Python API cannot: the physical storage of an NPU tensor (its
// format code and storage dimensions, for NZ inputs), the framework's current device and
// binding the framework's device context on the calling thread; and it keeps Python objects
// alive until process exit (the lifetime anchor of a shutdown that could not run safely). It
// links no Simpler C++ and defines no kernel ABI: launches go through simpler's public Worker.
//
// Written against torch_npu's public C++ headers (torch_npu/csrc/core/npu/NPUFormat.h,
// NPUFunctions.h) and CANN's ACL runtime API (acl/acl_rt.h). UNVERIFIED on hardware: CI compiles
// and links it against the torch-npu 2.13.0 wheel (`nox -s npu-compile`); it was never run on
// an NPU.
#include <torch/extension.h>

#include <acl/acl_rt.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "torch_npu/csrc/core/npu/NPUFormat.h"
#include "torch_npu/csrc/core/npu/NPUFunctions.h"

namespace py = pybind11;

namespace {

void require_npu(const at::Tensor& t, const char* arg) {
    if (t.device().type() != c10::DeviceType::PrivateUse1)
        throw py::value_error(std::string(arg) + ": expected a tensor on an NPU device, got one on " +
                              t.device().str());
}

// (format, storage_shape, storage_offset, storage_nbytes): what the device storage behind
// `tensor` holds. storage_shape is in elements of the tensor's dtype; storage_offset in elements.
py::tuple storage_descriptor(const at::Tensor& tensor) {
    require_npu(tensor, "storage_descriptor(tensor)");
    const std::int64_t format = at_npu::native::get_npu_format(tensor);
    const std::vector<std::int64_t> shape = at_npu::native::get_npu_storage_sizes(tensor);
    const std::int64_t nbytes = static_cast<std::int64_t>(tensor.storage().nbytes());
    return py::make_tuple(format, py::tuple(py::cast(shape)), tensor.storage_offset(), nbytes);
}

int current_device() { return static_cast<int>(c10_npu::current_device()); }

// Binds the calling thread to `device`'s context the way the framework does (torch_npu's
// SetDevice), and returns that context's address so a caller can check that two threads share it.
std::uintptr_t bind_context(int device) {
    if (device < 0 || device > INT8_MAX)
        throw py::value_error("bind_context(device): expected a device index in [0, 127], got " +
                              std::to_string(device));
    const aclError set = c10_npu::SetDevice(static_cast<c10::DeviceIndex>(device));
    if (set != ACL_SUCCESS)
        throw std::runtime_error("bind_context(" + std::to_string(device) + "): torch_npu SetDevice failed with aclError " +
                                 std::to_string(set));
    aclrtContext context = nullptr;
    const aclError got = aclrtGetCurrentContext(&context);
    if (got != ACL_SUCCESS || context == nullptr)
        throw std::runtime_error("bind_context(" + std::to_string(device) +
                                 "): aclrtGetCurrentContext failed with aclError " + std::to_string(got));
    return reinterpret_cast<std::uintptr_t>(context);
}

// Objects kept alive until the process ends: never released, so no destructor runs after the
// framework tore its device context down. The list itself is deliberately leaked.
std::vector<py::object>& anchored() {
    static auto* objects = new std::vector<py::object>();
    return *objects;
}

std::size_t anchor(py::object obj) {
    anchored().push_back(std::move(obj));
    return anchored().size();
}

}  // namespace

PYBIND11_MODULE(_native, m) {
    m.doc() = "pypto._torch_npu native adapter: NPU storage and context queries (optional build)";
    m.def("storage_descriptor", &storage_descriptor, py::arg("tensor"));
    m.def("current_device", &current_device);
    m.def("bind_context", &bind_context, py::arg("device"));
    m.def("anchor", &anchor, py::arg("obj"));
    m.def("anchored_count", [] { return anchored().size(); });
}
