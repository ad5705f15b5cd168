#include "bindings.hpp"

namespace simpler::bindings {

void bind_kernel(nanobind::module_& /*m*/) {}

}  // namespace simpler::bindings
