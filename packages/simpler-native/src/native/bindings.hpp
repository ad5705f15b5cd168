// Entry points of the per-domain binding files, called once from module.cpp.
#pragma once

#include <nanobind/nanobind.h>

namespace simpler::bindings {

// simpler.kernel: wire formats, admission checks, TMR codec (src/native/bind_kernel.cpp).
void bind_kernel(nanobind::module_& m);
// simpler._native top level: Worker, callables, TaskArgs, buffers (src/native/bind_runtime.cpp).
void bind_runtime(nanobind::module_& m);
// simpler._native.comm: the rank process's comm context (src/native/bind_comm.cpp).
void bind_comm(nanobind::module_& m);
// simpler._native.CallPlan: a program call's native fill-submit-wait path (src/native/bind_call_plan.cpp).
void bind_call_plan(nanobind::module_& m);

}  // namespace simpler::bindings
