// SPDX-License-Identifier: Apache-2.0
// iptables through libiptc (legacy x_tables), for IPv4 and IPv6. An IptTable is one table of one
// family loaded into memory, changed, and committed in ONE transaction; callers hold the
// xtables lock (/run/xtables.lock, flock) around it exactly as the iptables binary does, so
// kube-proxy and iptables-restore never race with us. Rules are described by the few fields
// the reference's rules use (-s, [!] -d, -m comment, -j), and built so that a rule we write is
// byte-identical to the one `iptables` writes for the same command line: either side can
// check or delete the other's rules.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/cni/ip.hpp"
#include "core/result.hpp"

namespace cni::fw {

enum class Family { v4, v6 };

inline constexpr const char* kXtablesLock = "/run/xtables.lock";

struct IptRule {
    std::optional<IpNet> src;  // -s (host bits cleared)
    std::optional<IpNet> dst;  // -d
    bool dst_inverted = false; // ! -d
    std::string comment;       // -m comment --comment
    std::string target;        // -j: ACCEPT, DROP, RETURN, MASQUERADE or a chain
    bool operator==(const IptRule&) const = default;
};

class IptTable {
public:
    static Result<IptTable> open(Family family, const std::string& table);
    IptTable(IptTable&&) noexcept;
    IptTable& operator=(IptTable&&) = delete;
    ~IptTable();

    bool has_chain(const std::string& chain) const;
    std::vector<std::string> chains() const;  // user-defined chains
    Status create_chain(const std::string& chain);
    Status flush_chain(const std::string& chain);
    Status delete_chain(const std::string& chain);
    // The rules of a chain; a rule with fields beyond IptRule's shows up with `foreign` set.
    struct Listed {
        IptRule rule;
        bool foreign = false;
    };
    Result<std::vector<Listed>> rules(const std::string& chain) const;
    // Appends unless an identical rule is already in the chain (go-iptables AppendUnique).
    Status append_unique(const std::string& chain, const IptRule& rule);
    // Deletes the rules for which `pred` holds; how many.
    Result<int> delete_if(const std::string& chain, const std::function<bool(const IptRule&)>& pred);
    Status commit();

    struct Impl;

private:
    explicit IptTable(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace cni::fw
