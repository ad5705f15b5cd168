// simpler._native.comm: the comm context of a multi-chip program's rank process
// (core/chip/comm.hpp). The public names live in simpler/comm.py.
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <tuple>
#include <vector>

#include "../core/chip/comm.hpp"
#include "bindings.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace simpler::bindings {

void bind_comm(nb::module_& m) {
    m.attr("MAX_WINDOWS") = kMaxCommWindows;
    m.attr("MAX_RANKS") = kMaxCommRanks;
    m.attr("PATH_SHARED_MEMORY") = static_cast<std::uint32_t>(CommPath::SharedMemory);
    m.attr("PATH_HOST") = static_cast<std::uint32_t>(CommPath::Host);
    m.def(
        "set_context",
        [](std::uint32_t rank, std::uint32_t nranks, std::uint32_t path,
           const std::vector<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>>& windows, double wait_timeout_s) {
            std::vector<CommWindow> ws;
            ws.reserve(windows.size());
            for (const auto& [base, stride, nbytes] : windows) ws.push_back(CommWindow{base, stride, nbytes});
            chip::set_comm_context(rank, nranks, static_cast<CommPath>(path), ws, wait_timeout_s);
        },
        "rank"_a, "nranks"_a, "path"_a, "windows"_a, "wait_timeout_s"_a);
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
