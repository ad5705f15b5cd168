// Kernel-entry admission: names, signatures, child counts, and every blob region's bounds.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "simpler/wire/kernel_entry_admission.hpp"

using namespace simpler;

namespace {

const std::uint8_t kSig[] = {1, 2, 0};  // In, Out, Scalar
const std::uint8_t kChildSig[] = {1, 3};

struct Fixture {
    std::vector<KernelChildEntry> children = {
        {0, "add_kernel", 10, kChildSig, 2, {4096, 1024, 64}},
        {7, "mul_kernel", 10, kChildSig, 2, {5120, 512, 64}},
    };
    KernelEntryDescription d{"orch_main", 9, kSig, 3, 0, 8192, {256, 2048, 64}, nullptr, 0};
    Fixture() {
        d.children = children.data();
        d.child_count = children.size();
    }
    InvocationStatus admit() {
        counts = InvocationCounts{-5, -5};
        return admit_kernel_entry(d, &counts);
    }
    InvocationCounts counts{-5, -5};
};

}  // namespace

TEST_CASE("a well-formed callable is admitted with its effective counts") {
    Fixture f;
    REQUIRE(f.admit() == InvocationStatus::Ok);
    CHECK(f.counts.tensor_count == 2);
    CHECK(f.counts.scalar_count == 1);
    f.d.cached_scalar_count = 1;
    CHECK(f.admit() == InvocationStatus::Ok);
    f.d.child_count = 0;  // a single kernel without children
    CHECK(f.admit() == InvocationStatus::Ok);
}

TEST_CASE("callable names must be canonical") {
    for (const char* bad : {"", "1abc", "a-b", "a b", "ns::f", "f.so", "../x"}) {
        Fixture f;
        f.d.name = bad;
        f.d.name_bytes = std::strlen(bad);
        CAPTURE(bad);
        CHECK(f.admit() == InvocationStatus::InvalidSignature);
        CHECK(f.counts.tensor_count == -5);  // untouched on rejection
    }
    Fixture f;
    const char with_nul[] = "ab\0c";
    f.d.name = with_nul;
    f.d.name_bytes = 4;
    CHECK(f.admit() == InvocationStatus::InvalidSignature);
    std::string longest(kMaxCallableNameBytes, 'x');
    f.d.name = longest.c_str();
    f.d.name_bytes = longest.size();
    CHECK(f.admit() == InvocationStatus::Ok);
    std::string too_long(kMaxCallableNameBytes + 1, 'x');
    f.d.name = too_long.c_str();
    f.d.name_bytes = too_long.size();
    CHECK(f.admit() == InvocationStatus::InvalidSignature);
    Fixture g;
    g.children[1].name = "9lives";
    g.children[1].name_bytes = 6;
    CHECK(g.admit() == InvocationStatus::InvalidSignature);
}

TEST_CASE("signatures follow the shared count rules, for the callable and each child") {
    Fixture f;
    const std::uint8_t scalar_first[] = {0, 1};
    f.d.signature = scalar_first;
    f.d.signature_length = 2;
    CHECK(f.admit() == InvocationStatus::InvalidSignature);
    Fixture g;
    g.d.cached_scalar_count = 2;  // disagrees with the signature
    CHECK(g.admit() == InvocationStatus::InvalidSignature);
    Fixture h;
    const std::uint8_t unknown[] = {1, 9};
    h.children[0].signature = unknown;
    CHECK(h.admit() == InvocationStatus::InvalidSignature);
    Fixture i;
    std::vector<std::uint8_t> many(257, 1);
    i.d.signature = many.data();
    i.d.signature_length = many.size();
    CHECK(i.admit() == InvocationStatus::InvalidCounts);
}

TEST_CASE("child counts and func_ids") {
    Fixture f;
    f.children[1].func_id = 0;  // duplicate
    CHECK(f.admit() == InvocationStatus::InvalidCounts);
    f.children[1].func_id = 64;
    CHECK(f.admit() == InvocationStatus::InvalidCounts);
    f.children[1].func_id = -1;
    CHECK(f.admit() == InvocationStatus::InvalidCounts);
    Fixture g;
    g.d.child_count = 65;
    std::vector<KernelChildEntry> lots(65, g.children[0]);
    g.d.children = lots.data();
    CHECK(g.admit() == InvocationStatus::InvalidCounts);
    // The child count is refused before any child is looked at: 65 children whose first has a
    // bad name are InvalidCounts, not InvalidSignature.
    Fixture k;
    std::vector<KernelChildEntry> bad_names(65, k.children[0]);
    for (std::size_t i = 0; i < bad_names.size(); ++i) {
        bad_names[i].func_id = static_cast<std::int32_t>(i % 64);
        bad_names[i].name = "1bad";
        bad_names[i].name_bytes = 4;
    }
    k.d.children = bad_names.data();
    k.d.child_count = bad_names.size();
    CHECK(k.admit() == InvocationStatus::InvalidCounts);
    // func_id 64 is out of range on its own (no other child with func_id 0 to collide with).
    Fixture solo;
    solo.d.child_count = 1;
    solo.children[0].func_id = 64;
    CHECK(solo.admit() == InvocationStatus::InvalidCounts);
    solo.children[0].func_id = 63;
    CHECK(solo.admit() == InvocationStatus::Ok);
    Fixture h;
    h.d.children = nullptr;
    CHECK(h.admit() == InvocationStatus::InvalidArgument);
    CHECK(admit_kernel_entry(h.d, nullptr) == InvocationStatus::InvalidArgument);
}

TEST_CASE("every variable-length part must be an aligned region inside the blob") {
    auto with_region = [](BlobRegion r, bool child) {
        Fixture f;
        (child ? f.children[1].binary : f.d.binary) = r;
        return f.admit();
    };
    for (bool child : {false, true}) {
        CAPTURE(child);
        CHECK(with_region({0, 8192, 64}, child) == InvocationStatus::Ok);             // exactly the blob
        CHECK(with_region({64, 8129, 64}, child) == InvocationStatus::InvalidSize);   // one byte past the end
        CHECK(with_region({8192, 1, 1}, child) == InvocationStatus::InvalidSize);     // starts at the end
        CHECK(with_region({32, 64, 64}, child) == InvocationStatus::InvalidSize);     // misaligned offset
        CHECK(with_region({64, 64, 48}, child) == InvocationStatus::InvalidSize);     // alignment not a power of two
        CHECK(with_region({96, 64, 48}, child) == InvocationStatus::InvalidSize);     // ... even where the offset is a multiple
        CHECK(with_region({0, 64, 3}, child) == InvocationStatus::InvalidSize);
        CHECK(with_region({64, 64, 0}, child) == InvocationStatus::InvalidSize);
        CHECK(with_region({64, 0, 64}, child) == InvocationStatus::InvalidSize);      // empty binary
        CHECK(with_region({~0ull - 63, 128, 64}, child) == InvocationStatus::InvalidSize);  // offset + size wraps
    }
}
