// SPDX-License-Identifier: Apache-2.0
// CNI spec version parsing and comparison (see version.hpp).
#include "core/cni/version.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <vector>

#include "core/cni/json.hpp"
#include "core/strings.hpp"

namespace cni {
namespace {

// Go strconv.Atoi: optional sign, decimal digits, int64 range; Go's error text.
Result<int> go_atoi(std::string_view s) {
    auto err = [&](std::string_view why) {
        return fail(code::decoding_failure, "strconv.Atoi: parsing \"" + std::string(s) + "\": " + std::string(why));
    };
    std::string_view digits = s;
    bool neg = false;
    if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
        neg = digits[0] == '-';
        digits.remove_prefix(1);
    }
    if (digits.empty()) return err("invalid syntax");
    long long v = 0;
    for (char c : digits) {
        if (c < '0' || c > '9') return err("invalid syntax");
        if (v > (std::numeric_limits<long long>::max() - (c - '0')) / 10) return err("value out of range");
        v = v * 10 + (c - '0');
    }
    if (v > std::numeric_limits<int>::max()) return err("value out of range");
    return static_cast<int>(neg ? -v : v);
}

}  // namespace

Result<SpecVersion> parse_version(std::string_view v) {
    if (v.empty()) return fail(code::decoding_failure, "invalid version \"\": the version is empty");
    auto parts = split(v, '.');
    if (parts.size() >= 4) return fail(code::decoding_failure, "invalid version \"" + std::string(v) + "\": too many parts");
    static constexpr const char* names[] = {"major", "minor", "micro"};
    int out[3] = {0, 0, 0};
    for (std::size_t i = 0; i < parts.size(); ++i) {
        auto n = go_atoi(parts[i]);
        if (!n)
            return fail(code::decoding_failure, std::string("failed to convert ") + names[i] + " version part \"" +
                                                    std::string(parts[i]) + "\": " + n.error().msg);
        out[i] = *n;
    }
    return SpecVersion{out[0], out[1], out[2]};
}

Result<bool> version_at_least(std::string_view a, std::string_view b) {
    CNI_TRY_ASSIGN(auto va, parse_version(a));
    CNI_TRY_ASSIGN(auto vb, parse_version(b));
    return va >= vb;
}

bool version_supported(VersionList list, std::string_view v) {
    return std::find(list.begin(), list.end(), v) != list.end();
}

std::string version_info_json(VersionList supported) {
    json::Document d(rapidjson::kObjectType);
    auto& a = d.GetAllocator();
    json::set(d, "cniVersion", json::str(kCurrentVersion, a), a);
    json::Value list(rapidjson::kArrayType);
    for (auto s : supported) list.PushBack(json::str(s, a), a);
    json::set(d, "supportedVersions", std::move(list), a);
    return json::write(d, json::Style::compact, false) + "\n";
}

}  // namespace cni
