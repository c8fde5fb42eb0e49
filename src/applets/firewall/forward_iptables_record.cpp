// SPDX-License-Identifier: Apache-2.0
// The firewall applet's record of its CNI-FORWARD rule handles (see forward_iptables_record.hpp).
#include "applets/firewall/forward_iptables_record.hpp"

#include <unistd.h>

#include <charconv>

#include "core/fw/sha512.hpp"
#include "core/os/fs.hpp"
#include "core/strings.hpp"

namespace cni::firewall {

std::string encode_handles(const ForwardHandles& h) {
    std::string out;
    for (auto [tag, list] : {std::pair{"v4", &h.v4}, std::pair{"v6", &h.v6}}) {
        if (list->empty()) continue;
        out += tag;
        for (auto handle : *list) out += " " + std::to_string(handle);
        out += "\n";
    }
    return out;
}

std::optional<ForwardHandles> decode_handles(std::string_view text) {
    ForwardHandles h;
    bool seen_v4 = false, seen_v6 = false;
    for (auto line : split(text, '\n')) {
        if (line.empty()) continue;
        auto words = fields(line);
        if (words.size() < 2 || words.size() > kMaxHandles + 1) return std::nullopt;
        bool v4 = words[0] == "v4";
        if ((!v4 && words[0] != "v6") || (v4 ? seen_v4 : seen_v6)) return std::nullopt;
        (v4 ? seen_v4 : seen_v6) = true;
        auto& list = v4 ? h.v4 : h.v6;
        for (std::size_t i = 1; i < words.size(); ++i) {
            std::uint64_t n = 0;
            auto w = words[i];
            auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), n);
            if (ec != std::errc() || end != w.data() + w.size() || n == 0 || w[0] == '0') return std::nullopt;
            list.push_back(n);
        }
    }
    if (h.empty()) return std::nullopt;
    return h;
}

ForwardRecord::ForwardRecord(const std::string& network, const net::Attachment& a, std::string dir, std::string_view driver)
    : dir_(std::move(dir)), name_(fw::sha512_hex(network + "\n" + a.container_id + "\n" + a.ifname).substr(0, 40)) {
    if (!driver.empty()) name_ = std::string(driver) + "-" + name_;
}

std::optional<ForwardHandles> ForwardRecord::load() const {
    auto dir = os::Dir::open(dir_);
    if (!dir) return std::nullopt;
    auto text = dir->read_if_exists(name_, 4096);
    if (!text || !*text) return std::nullopt;
    return decode_handles(**text);
}

void ForwardRecord::save(const ForwardHandles& h) const {
    if (h.empty()) return forget();
    if (auto dir = os::Dir::create(dir_, 0700)) (void)dir->write_atomic(name_, encode_handles(h), 0600);
}

// The folder goes with the last record (rmdir takes only an empty folder, never a link), so a
// node without firewall attachments keeps nothing of ours. An ADD that races with it loses its
// record, which costs its DEL a read of the chain.
void ForwardRecord::forget() const {
    if (auto dir = os::Dir::open(dir_)) (void)dir->remove(name_);
    (void)::rmdir(dir_.c_str());
}

}  // namespace cni::firewall
