// SPDX-License-Identifier: Apache-2.0
// The firewall applet's record of its CNI-FORWARD rule handles (see handle_record.hpp).
#include "applets/firewall/handle_record.hpp"
#include "applets/firewall/forward.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>

#include "core/fw/names.hpp"
#include "core/fw/sha512.hpp"
#include "core/os/fs.hpp"
#include "core/strings.hpp"

namespace cni::firewall {

std::string encode_handles(const ForwardHandles& h) {
    std::string out;
    if (!h.network_tag.empty()) out += "net " + h.network_tag + "\n";
    if (!h.ips.empty()) {
        out += "ip";
        for (auto& ip : h.ips) out += " " + ip.str();
        out += "\n";
    }
    for (auto [tag, list] : {std::pair{"v4", &h.v4}, std::pair{"v6", &h.v6}}) {
        if (list->empty()) continue;
        out += tag;
        for (auto handle : *list) out += " " + std::to_string(handle);
        out += "\n";
    }
    return out;
}

namespace {

std::optional<std::uint64_t> handle_of(std::string_view w) {
    std::uint64_t n = 0;
    auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), n);
    if (ec != std::errc() || end != w.data() + w.size() || n == 0 || w[0] == '0') return std::nullopt;
    return n;
}

// One line's words after its tag into `h`; false when they are not what the tag takes.
bool decode_line(std::string_view tag, const std::vector<std::string_view>& words, ForwardHandles& h) {
    if (tag == "net") {
        if (words.size() != 1 || words[0].size() > 64) return false;
        h.network_tag = std::string(words[0]);
        return true;
    }
    for (auto w : words) {
        if (tag == "ip") {
            auto ip = net::IpAddr::parse(w);
            if (!ip) return false;
            h.ips.push_back(*ip);
        } else {
            auto n = handle_of(w);
            if (!n) return false;
            (tag == "v4" ? h.v4 : h.v6).push_back(*n);
        }
    }
    return true;
}

}  // namespace

std::optional<ForwardHandles> decode_handles(std::string_view text) {
    ForwardHandles h;
    std::vector<std::string_view> seen;
    for (auto line : split(text, '\n')) {
        if (line.empty()) continue;
        auto words = fields(line);
        if (words.size() < 2 || words.size() > kMaxHandles + 1) return std::nullopt;
        std::string_view tag = words[0];
        bool known = tag == "net" || tag == "ip" || tag == "v4" || tag == "v6";
        if (!known || std::ranges::find(seen, tag) != seen.end()) return std::nullopt;
        seen.push_back(tag);
        if (!decode_line(tag, {words.begin() + 1, words.end()}, h)) return std::nullopt;
    }
    if (h.empty() && h.ips.empty()) return std::nullopt;
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

ForwardHandles ForwardRecord::load_or_note(const std::string& network, const std::vector<net::IpAddr>& ips) const {
    if (auto known = load()) return *known;
    save(ForwardHandles{.network_tag = fw::nft_network_tag(network), .ips = ips});
    return {};
}

void ForwardRecord::save(const ForwardHandles& h) const {
    if (h.empty() && h.ips.empty()) return forget();
    if (auto dir = os::Dir::create(dir_, 0700)) (void)dir->write_atomic(name_, encode_handles(h), 0600);
}

// The folder goes with the last record (rmdir takes only an empty folder, never a link), so a
// node without firewall attachments keeps nothing of ours. An ADD that races with it loses its
// record, which costs its DEL a read of the chain.
void ForwardRecord::forget() const {
    if (auto dir = os::Dir::open(dir_)) (void)dir->remove(name_);
    (void)::rmdir(dir_.c_str());
}

ForwardRecord::Collectable ForwardRecord::collectable(const std::string& dir, std::string_view driver, const std::string& network,
                                                     const std::vector<net::Attachment>& keep) {
    Collectable out;
    auto opened = os::Dir::open(dir);
    if (!opened) return out;
    std::vector<std::string> kept;
    for (auto& a : keep) kept.push_back(ForwardRecord(network, a, dir, driver).name_);
    const std::string prefix = driver.empty() ? "" : std::string(driver) + "-";
    const std::string tag = fw::nft_network_tag(network);
    for (auto& name : opened->names()) {
        if (name.size() != prefix.size() + 40 || !name.starts_with(prefix)) continue;
        ForwardRecord record(dir, name);
        auto h = record.load();
        if (!h) continue;
        if (h->network_tag == tag && std::ranges::find(kept, name) == kept.end()) out.gone.emplace_back(std::move(record), std::move(*h));
        else out.live_ips.insert(out.live_ips.end(), h->ips.begin(), h->ips.end());
    }
    return out;
}

bool forward_recorded(fw::Driver d, const ForwardSpec& f) {
    if (d != fw::Driver::iptables && d != fw::Driver::nftables) return false;
    return ForwardRecord(f.network, f.attachment, f.record_dir, d == fw::Driver::nftables ? kNftRecord : "").load().has_value();
}

}  // namespace cni::firewall
