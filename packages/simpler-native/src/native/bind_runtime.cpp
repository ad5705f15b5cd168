#include "bindings.hpp"

namespace simpler::bindings {

void bind_runtime(nanobind::module_& /*m*/) {}

}  // namespace simpler::bindings
