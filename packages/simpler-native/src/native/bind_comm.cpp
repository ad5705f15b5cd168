// simpler._native.comm: the comm context of a multi-chip program's rank process
// (core/chip/comm.hpp). The public names live in simpler/comm.py.
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdio>
#include <exception>
#include <tuple>
#include <vector>

#include "../core/chip/comm.hpp"
#include "bindings.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace simpler::bindings {
namespace {

// The Python callable serving CommPath::Host requests (a strong reference, replaced under the
// GIL, never released at interpreter exit: kernels may still hold the context).
PyObject* g_handler = nullptr;

// CommHostOps::call: runs the handler on the calling (chip) thread with the GIL held. The
// handler gets plain integers: (op, peer, window, dtype, runs_address, run_count, data_address,
// nbytes, value); runs are (offset, nbytes) uint64 pairs. An exception it raises becomes the
// request's error message.
int call_handler(void*, const CommHostRequest* r, char* error, std::uint64_t error_len) {
    nb::gil_scoped_acquire gil;
    try {
        if (g_handler == nullptr) {
            std::snprintf(error, error_len, "no host handler is registered (simpler.comm.set_context(host=...))");
            return 1;
        }
        const nb::handle handler(g_handler);
        handler(static_cast<std::uint32_t>(r->op), r->peer, r->window, r->dtype,
                reinterpret_cast<std::uintptr_t>(r->runs), r->run_count, reinterpret_cast<std::uintptr_t>(r->data),
                r->nbytes, r->value);
        return 0;
    } catch (nb::python_error& e) {
        try {
            std::snprintf(error, error_len, "%s: %s", nb::type_name(e.type()).c_str(), nb::str(e.value()).c_str());
        } catch (...) {
            std::snprintf(error, error_len, "%s", e.what());
        }
    } catch (const std::exception& e) {
        std::snprintf(error, error_len, "%s", e.what());
    } catch (...) {
        std::snprintf(error, error_len, "unknown C++ exception");
    }
    return 1;
}

const CommHostOps kHostOps{nullptr, &call_handler};

}  // namespace

void bind_comm(nb::module_& m) {
    m.attr("MAX_WINDOWS") = kMaxCommWindows;
    m.attr("MAX_RANKS") = kMaxCommRanks;
    m.attr("PATH_SHARED_MEMORY") = static_cast<std::uint32_t>(CommPath::SharedMemory);
    m.attr("PATH_HOST") = static_cast<std::uint32_t>(CommPath::Host);
    m.attr("HOST_READ") = static_cast<std::uint32_t>(CommHostOp::Read);
    m.attr("HOST_WRITE") = static_cast<std::uint32_t>(CommHostOp::Write);
    m.attr("HOST_ATOMIC_ADD") = static_cast<std::uint32_t>(CommHostOp::AtomicAdd);
    m.attr("HOST_NOTIFY_ADD") = static_cast<std::uint32_t>(CommHostOp::NotifyAdd);
    m.attr("HOST_NOTIFY_SET") = static_cast<std::uint32_t>(CommHostOp::NotifySet);
    m.def(
        "set_context",
        [](std::uint32_t rank, std::uint32_t nranks, std::uint32_t path,
           const std::vector<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>>& windows, double wait_timeout_s,
           nb::object host) {
            std::vector<CommWindow> ws;
            ws.reserve(windows.size());
            for (const auto& [base, stride, nbytes] : windows) ws.push_back(CommWindow{base, stride, nbytes});
            if (!host.is_none() && !PyCallable_Check(host.ptr()))
                throw nb::type_error("comm context: host must be a callable or None");
            chip::set_comm_context(rank, nranks, static_cast<CommPath>(path), ws, wait_timeout_s,
                                   host.is_none() ? nullptr : &kHostOps);
            if (!host.is_none()) {
                PyObject* old = g_handler;
                g_handler = host.release().ptr();
                Py_XDECREF(old);
            }
        },
        "rank"_a, "nranks"_a, "path"_a, "windows"_a, "wait_timeout_s"_a, "host"_a = nb::none());
    m.def("clear_context", &chip::clear_comm_context);
    m.def("context", []() -> nb::object {
        const CommContext* c = chip::comm_context();
        if (c == nullptr) return nb::none();
        std::vector<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>> ws;
        for (std::uint32_t i = 0; i < c->window_count; ++i)
            ws.emplace_back(c->windows[i].base, c->windows[i].stride, c->windows[i].nbytes);
        return nb::make_tuple(c->rank, c->nranks, static_cast<std::uint32_t>(c->path), ws,
                              static_cast<double>(c->wait_timeout_ns) / 1e9);
    });
}

}  // namespace simpler::bindings
