// SPDX-License-Identifier: Apache-2.0
// resolv.conf parsing (see resolv_conf.hpp).
#include "core/ipam/resolv_conf.hpp"

#include <fstream>
#include <sstream>

#include "core/os/errno_error.hpp"

namespace cni::ipam {

Dns parse_resolv_conf_text(std::string_view text) {
    Dns dns;
    std::istringstream in{std::string(text)};
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream words(line);
        std::vector<std::string> f;
        for (std::string w; words >> w;) f.push_back(w);
        if (f.empty() || f[0][0] == '#' || f[0][0] == ';' || f.size() < 2) continue;
        if (f[0] == "nameserver") dns.nameservers.push_back(f[1]);
        else if (f[0] == "domain") dns.domain = f[1];
        else if (f[0] == "search") dns.search.insert(dns.search.end(), f.begin() + 1, f.end());
        else if (f[0] == "options") dns.options.insert(dns.options.end(), f.begin() + 1, f.end());
    }
    return dns;
}

Result<Dns> parse_resolv_conf(const std::string& path) {
    std::ifstream f(path);
    if (!f) return os::sys_fail("open", path);
    std::stringstream ss;
    ss << f.rdbuf();
    return parse_resolv_conf_text(ss.str());
}

}  // namespace cni::ipam
