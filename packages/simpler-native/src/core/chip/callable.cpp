#include "callable.hpp"

#include <stdexcept>

namespace simpler::chip {

void signature_counts(const std::vector<ArgDirection>& sig, const std::string& what, std::uint32_t* tensors,
                      std::uint32_t* scalars) {
    std::uint32_t t = 0, s = 0;
    for (std::size_t i = 0; i < sig.size(); ++i) {
        const auto code = static_cast<std::uint8_t>(sig[i]);
        if (code >= kArgDirectionCount)
            throw std::invalid_argument(what + ": signature[" + std::to_string(i) + "] has unknown direction code " +
                                        std::to_string(code));
        if (sig[i] == ArgDirection::Scalar) {
            ++s;
        } else {
            if (s != 0)
                throw std::invalid_argument(what + ": signature[" + std::to_string(i) +
                                            "] is a tensor after a scalar; all tensors must come before all scalars");
            ++t;
        }
    }
    if (t > static_cast<std::uint32_t>(kMaxTensors) || s > static_cast<std::uint32_t>(kMaxScalars) ||
        t + s > static_cast<std::uint32_t>(kMaxArguments))
        throw std::invalid_argument(what + ": signature has " + std::to_string(t) + " tensors and " + std::to_string(s) +
                                    " scalars; limits are 256 tensors, 128 scalars, 256 in all");
    *tensors = t;
    *scalars = s;
}

std::shared_ptr<const CoreKernel> load_core_kernel(const void* bytes, std::size_t size, const std::string& name,
                                                   const std::string& entry_symbol, CoreType core,
                                                   std::vector<ArgDirection> signature) {
    auto k = std::make_shared<CoreKernel>();
    k->name = name;
    k->core = core;
    signature_counts(signature, "kernel '" + name + "'", &k->tensor_count, &k->scalar_count);
    k->signature = std::move(signature);
    k->binary = LoadedBinary::load(bytes, size, "kernel '" + name + "'");
    auto version = reinterpret_cast<AbiVersionFn>(k->binary->symbol("simpler_kernel_abi_version"));
    const std::uint32_t v = version();
    if (v != kKernelAbiVersion)
        throw std::invalid_argument("kernel '" + name + "': built against kernel ABI version " + std::to_string(v) +
                                    ", this runtime speaks " + std::to_string(kKernelAbiVersion) + "; rebuild it");
    k->take_error = reinterpret_cast<TakeErrorFn>(k->binary->symbol("simpler_kernel_take_error"));
    k->set_context = reinterpret_cast<SetContextFn>(k->binary->find("simpler_kernel_set_context"));
    k->entry = reinterpret_cast<KernelEntryFn>(k->binary->symbol(entry_symbol.c_str()));
    return k;
}

std::shared_ptr<const ChipProgram> load_chip_program(
    const void* bytes, std::size_t size, const std::string& func_name, std::vector<ArgDirection> signature,
    const std::vector<std::pair<std::int32_t, std::shared_ptr<const CoreKernel>>>& children) {
    auto p = std::make_shared<ChipProgram>();
    p->name = func_name;
    const std::string what = "orchestration '" + func_name + "'";
    signature_counts(signature, what, &p->tensor_count, &p->scalar_count);
    p->signature = std::move(signature);
    for (const auto& [func_id, kernel] : children) {
        if (func_id < 0) throw std::invalid_argument(what + ": children func_id must be >= 0, got " + std::to_string(func_id));
        if (kernel == nullptr) throw std::invalid_argument(what + ": child func_id " + std::to_string(func_id) + " is null");
        auto copy = std::make_shared<CoreKernel>(*kernel);
        copy->func_id = func_id;
        if (!p->kernels.emplace(func_id, std::move(copy)).second)
            throw std::invalid_argument(what + ": children name func_id " + std::to_string(func_id) + " twice");
    }
    p->binary = LoadedBinary::load(bytes, size, what);
    p->entry = reinterpret_cast<OrchestrationEntryFn>(p->binary->symbol(func_name.c_str()));
    const std::string needs_name = func_name + "_needs";
    auto needs = reinterpret_cast<OrchestrationNeedsFn>(p->binary->symbol(needs_name.c_str()));
    OrchestrationNeeds n{};
    needs(&n);
    if (n.abi_version != kOrchestrationAbiVersion)
        throw std::invalid_argument(what + ": built against orchestration ABI version " + std::to_string(n.abi_version) +
                                    ", this runtime speaks " + std::to_string(kOrchestrationAbiVersion) + "; rebuild it");
    if (n.tensor_count != p->tensor_count || n.scalar_count != p->scalar_count)
        throw std::invalid_argument(what + ": " + needs_name + " expects " + std::to_string(n.tensor_count) + " tensors and " +
                                    std::to_string(n.scalar_count) + " scalars, the signature has " +
                                    std::to_string(p->tensor_count) + " and " + std::to_string(p->scalar_count));
    p->needs = n;
    return p;
}

}  // namespace simpler::chip
