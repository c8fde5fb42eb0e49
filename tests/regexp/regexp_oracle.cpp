// SPDX-License-Identifier: Apache-2.0
// cni-all's side of the regexp differential test (tests/regexp/test_regexp_diff.py): the same
// line protocol as go_oracle.go, answered by cni::tuning::Regexp.
#include <iostream>
#include <sstream>
#include <string>

#include "applets/tuning/regexp.hpp"

namespace {

std::string unhex(const std::string& h) {
    std::string out;
    for (std::size_t i = 1; i + 1 < h.size(); i += 2)  // from 1: past the leading "x"
        out += char(std::stoi(h.substr(i, 2), nullptr, 16));
    return out;
}

std::string hex(const std::string& s) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (unsigned char c : s) out += digits[c >> 4], out += digits[c & 15];
    return out;
}

}  // namespace

int main() {
    std::ios::sync_with_stdio(false);
    std::string line;
    while (std::getline(std::cin, line)) {
        std::istringstream fields(line);
        std::string field;
        fields >> field;
        auto re = cni::tuning::Regexp::compile(unhex(field));
        if (!re) {
            std::cout << "E " << hex(re.error().msg) << '\n';
            continue;
        }
        std::cout << "M ";
        while (fields >> field) std::cout << (re->search(unhex(field)) ? '1' : '0');
        std::cout << '\n';
    }
}
