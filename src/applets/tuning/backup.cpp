// SPDX-License-Identifier: Apache-2.0
// tuning's backup file in the reference's layout (backup.hpp): written as Go's
// json.MarshalIndent(config, "", " ") writes it (strings as encoding/json quotes them), read
// with the same key table as a config.
#include "applets/tuning/backup.hpp"

#include <array>
#include <vector>

#include "core/cni/config_keys.hpp"

namespace cni::tuning {
namespace {

// The backup file's keys (Go's configToRestore; allmulti, txQLen, sysctl and network are ours).
constexpr std::array kBackupKeys{
    key<&Backup::mac>("mac", ""),           key<&Backup::promisc>("promisc", ""),
    key<&Backup::mtu>("mtu", ""),           key<&Backup::allmulti>("allmulti", ""),
    key<&Backup::txqlen>("txQLen", ""),     key<&Backup::sysctl>("sysctl", ""),
    key<&Backup::network>("network", ""),
};

}  // namespace

std::string encode_backup(const Backup& b) {
    std::vector<std::string> fields;
    if (!b.mac.empty()) fields.push_back("\"mac\": " + json::quote(b.mac));
    if (b.promisc) fields.push_back(std::string("\"promisc\": ") + (*b.promisc ? "true" : "false"));
    if (b.mtu) fields.push_back("\"mtu\": " + std::to_string(b.mtu));
    if (b.allmulti) fields.push_back(std::string("\"allmulti\": ") + (*b.allmulti ? "true" : "false"));
    if (b.txqlen) fields.push_back("\"txQLen\": " + std::to_string(*b.txqlen));
    if (!b.sysctl.empty()) {
        std::string m = "\"sysctl\": {";
        bool first = true;
        for (auto& [k, v] : b.sysctl) {
            m += (first ? "\n  " : ",\n  ") + json::quote(k) + ": " + json::quote(v);
            first = false;
        }
        fields.push_back(m + "\n }");
    }
    if (!b.network.empty()) fields.push_back("\"network\": " + json::quote(b.network));
    std::string out = "{";
    for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? ",\n " : "\n ") + fields[i];
    return out + (fields.empty() ? "}" : "\n}");
}

Result<Backup> decode_backup(const std::string& text) {
    CNI_TRY_ASSIGN(auto doc, json::parse(text));
    Backup b;
    json::Where w{"configToRestore", ""};
    CNI_TRY(json::expect_object(doc, w, "configToRestore"));
    CNI_TRY(read_keys(doc, kBackupKeys, b, w));
    return b;
}

}  // namespace cni::tuning
