#include "bindings.hpp"
#include "simpler/build_info.hpp"

namespace nb = nanobind;

NB_MODULE(_native, m) {
    m.doc() = "Native core of simpler (private; use the simpler package).";
    const simpler::BuildInfo info = simpler::build_info();
    m.attr("__version__") = info.version;
    m.attr("SANITIZED") = info.sanitized;
    nb::module_ kernel = m.def_submodule("kernel", "Kernel-invocation wire formats and the TMR codec.");
    simpler::bindings::bind_kernel(kernel);
    simpler::bindings::bind_runtime(m);
    simpler::bindings::bind_call_plan(m);
    nb::module_ comm = m.def_submodule("comm", "The comm context of a multi-chip program's rank process.");
    simpler::bindings::bind_comm(comm);
}
