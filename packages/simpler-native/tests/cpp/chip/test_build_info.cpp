#include <doctest/doctest.h>

#include <cstring>

#include "simpler/build_info.hpp"

TEST_CASE("build info names the package version") {
    const simpler::BuildInfo info = simpler::build_info();
    CHECK(std::strlen(info.version) > 0);
    CHECK(std::strchr(info.version, '.') != nullptr);
}
