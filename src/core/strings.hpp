// SPDX-License-Identifier: Apache-2.0
// The two string operations the Go reference leans on everywhere, with Go's semantics:
// strings.Split (an empty input gives one empty field; separators at the ends give empty
// fields) and strings.TrimSpace (ASCII white space).
#pragma once

#include <string_view>
#include <vector>

namespace cni {

inline std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> out;
    std::size_t start = 0;
    while (true) {
        auto pos = s.find(sep, start);
        out.push_back(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
        if (pos == std::string_view::npos) return out;
        start = pos + 1;
    }
}

inline std::string_view trim_space(std::string_view s) {
    auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
    while (!s.empty() && space(s.front())) s.remove_prefix(1);
    while (!s.empty() && space(s.back())) s.remove_suffix(1);
    return s;
}

}  // namespace cni
