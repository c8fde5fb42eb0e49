// SPDX-License-Identifier: Apache-2.0
// resolv.conf parsing (see resolv_conf.hpp).
#include "applets/host_local/resolv_conf.hpp"

#include "core/os/fs.hpp"
#include "core/strings.hpp"

namespace cni::host_local {

Dns parse_resolv_conf_text(std::string_view text) {
    Dns dns;
    for (auto line : split(text, '\n')) {
        auto words = fields(line);
        std::vector<std::string> f(words.begin(), words.end());
        if (f.empty() || f[0][0] == '#' || f[0][0] == ';' || f.size() < 2) continue;
        if (f[0] == "nameserver") dns.nameservers.push_back(f[1]);
        else if (f[0] == "domain") dns.domain = f[1];
        else if (f[0] == "search") dns.search.insert(dns.search.end(), f.begin() + 1, f.end());
        else if (f[0] == "options") dns.options.insert(dns.options.end(), f.begin() + 1, f.end());
    }
    return dns;
}

Result<Dns> parse_resolv_conf(const std::string& path) {
    CNI_TRY_ASSIGN(std::string text, os::read_file(path));
    return parse_resolv_conf_text(text);
}

}  // namespace cni::host_local
