// simpler._native.comm: the comm context of a multi-chip program's rank process
// (core/chip/comm.hpp). The public names live in simpler/comm.py.
#include <nanobind/ndarray.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdio>
#include <exception>
#include <string>
#include <tuple>
#include <vector>

#include "../core/chip/comm.hpp"
#include "../core/chip/comm_host.hpp"
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

using Bytes = nb::ndarray<std::uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using Runs = nb::ndarray<const std::int64_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

// simpler.comm.apply_request: chip::apply_host_request on arrays of the rank process.
void apply_request(std::uint32_t op, Bytes window, Runs runs, Bytes data, std::uint32_t dtype, std::int64_t value) {
    if (runs.shape(1) != 2)
        throw nb::value_error(
            ("apply_request(runs): expected an (n, 2) array of (offset, nbytes), got " + std::to_string(runs.shape(0)) +
             " x " + std::to_string(runs.shape(1)))
                .c_str());
    std::vector<CommHostRun> rs(runs.shape(0));
    for (std::size_t i = 0; i < rs.size(); ++i) {
        const std::int64_t offset = runs(i, 0), nbytes = runs(i, 1);
        if (offset < 0 || nbytes < 0)
            throw nb::value_error(("apply_request(runs): run " + std::to_string(i) + " is (" + std::to_string(offset) +
                                   ", " + std::to_string(nbytes) + "); offsets and lengths are >= 0")
                                      .c_str());
        rs[i] = CommHostRun{static_cast<std::uint64_t>(offset), static_cast<std::uint64_t>(nbytes)};
    }
    const CommHostRequest r{static_cast<CommHostOp>(op), 0, 0, dtype, rs.size(), rs.data(), data.data(), data.shape(0),
                            value};
    char error[512];
    error[0] = '\0';
    int failed = 0;
    {
        nb::gil_scoped_release unlocked;
        failed = chip::apply_host_request(r, window.data(), window.shape(0), error, sizeof error);
    }
    if (failed != 0) throw nb::value_error(error);
}

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
    m.def("apply_request", &apply_request, "op"_a, "window"_a, "runs"_a, "data"_a, "dtype"_a = 0, "value"_a = 0);
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
