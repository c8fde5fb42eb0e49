// SPDX-License-Identifier: Apache-2.0
// Reading the node's ENIs from the instance metadata service (see imds.hpp): a session that
// takes its token once, retries what may pass, and renews the token once when a GET is refused
// with 401 (it may have expired); then each path's answer parsed strictly, so that a value
// the node would act on is never a guess.
#include "applets/vpc_eni/imds.hpp"

#include <algorithm>
#include <optional>
#include <thread>

#include "core/net/mac.hpp"
#include "core/strings.hpp"

namespace cni::vpc_eni {
namespace {

constexpr std::string_view kTokenPath = "/latest/api/token";
constexpr std::string_view kMetadata = "/latest/meta-data/";
constexpr const char* kTokenTtl = "21600";  // six hours, as the AWS agent asks

bool passing(int status) { return status >= 500 || status == 429; }

// An answer as it may be shown: printable ASCII, at most 40 characters.
std::string shown(std::string_view text) {
    std::string out;
    for (char c : text.substr(0, 40)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
    return "\"" + out + (text.size() > 40 ? "...\"" : "\"");
}

// The answer's lines, without a trailing empty one or carriage returns.
std::vector<std::string_view> lines_of(std::string_view body) {
    std::vector<std::string_view> out;
    while (!body.empty()) {
        const std::size_t eol = body.find('\n');
        std::string_view line = body.substr(0, eol);
        if (line.ends_with('\r')) line.remove_suffix(1);
        out.push_back(line);
        body = eol == std::string_view::npos ? std::string_view() : body.substr(eol + 1);
    }
    return out;
}

class Session {
public:
    explicit Session(const ImdsOptions& o) : o_(o) {}

    Status open() {
        CNI_TRY_ASSIGN(auto r, request("PUT", kTokenPath, {{"X-aws-ec2-metadata-token-ttl-seconds", kTokenTtl}}));
        const std::string where = "PUT " + o_.endpoint.url + std::string(kTokenPath);
        if (r.status == 200) {
            const bool usable = !r.body.empty() && r.body.size() <= 4096 &&
                                std::ranges::all_of(r.body, [](char c) { return c > 0x20 && c < 0x7f; });
            if (!usable) return fail(where + ": the session token is empty or not printable text");
            token_ = std::move(r.body);
            return {};
        }
        if (r.status >= 400 && r.status < 500 && o_.allow_v1) {
            token_.reset();
            return {};
        }
        return fail(where + ": HTTP " + std::to_string(r.status) + ": the metadata service gave no IMDSv2 session token" +
                    (r.status >= 400 && r.status < 500 ? " (node-setup falls back to IMDSv1 only with --imds-v1)" : ""));
    }

    // The answer at kMetadata + `path`; nothing when `optional` and the service has no such path.
    Result<std::optional<std::string>> get(std::string_view path, bool optional = false) {
        const std::string full = std::string(kMetadata) + std::string(path);
        CNI_TRY_ASSIGN(auto r, authorized_get(full));
        if (r.status == 401 && token_) {  // the token may have expired: one new session
            CNI_TRY(open());
            CNI_TRY_ASSIGN(r, authorized_get(full));
        }
        const std::string where = "GET " + o_.endpoint.url + full;
        if (r.status == 200) return std::optional<std::string>(std::move(r.body));
        if (r.status == 404 && optional) return std::optional<std::string>{};
        if (r.status == 401)
            return fail(where + ": HTTP 401 Unauthorized: the metadata service refused the request " +
                        (token_ ? "and its session token" : "without a session token (IMDSv1)"));
        if (r.status == 404) return fail(where + ": HTTP 404: the metadata service has no such path");
        return fail(where + ": HTTP " + std::to_string(r.status));
    }

private:
    Result<http::Response> authorized_get(const std::string& full) {
        http::Headers h;
        if (token_) h.emplace_back("X-aws-ec2-metadata-token", *token_);
        return request("GET", full, h);
    }

    // One request, retried while it fails in a way that may pass.
    Result<http::Response> request(std::string_view method, std::string_view path, const http::Headers& headers) {
        auto wait = o_.backoff;
        for (int attempt = 1;; ++attempt) {
            auto r = http::request(o_.endpoint, method, path, headers, o_.timeout);
            const bool again = r ? passing(r->status) : r.error().code == code::try_again_later;
            if (!again) return r;
            if (attempt >= o_.attempts) {
                const std::string tries = " (" + std::to_string(attempt) + " attempts)";
                if (!r) return fail(r.error().msg + tries);
                return fail(std::string(method) + " " + o_.endpoint.url + std::string(path) + ": HTTP " +
                            std::to_string(r->status) + tries);
            }
            std::this_thread::sleep_for(wait);
            wait *= 2;
        }
    }

    const ImdsOptions& o_;
    std::optional<std::string> token_;
};

// One path's answer through its parser, a failure naming the URL and what the answer should be.
struct Reader {
    Session& s;
    const std::string& url;

    // A missing `optional` path reads as an empty answer.
    template <typename Parse>
    auto read(std::string_view path, Parse parse, std::string_view what, bool optional = false)
        -> Result<typename decltype(parse(""))::value_type> {
        CNI_TRY_ASSIGN(auto answer, s.get(path, optional));
        const std::string body = answer.value_or("");
        auto value = parse(body);
        if (!value)
            return fail("GET " + url + std::string(kMetadata) + std::string(path) + ": " + shown(body) + " is not " + std::string(what));
        return std::move(*value);
    }
};

}  // namespace

std::optional<std::string> metadata_mac(std::string_view body) {
    const std::string_view t = trim_space(body);
    if (t.size() != 17) return std::nullopt;  // colons or dashes, never another form
    return net::parse_mac(t);
}

std::optional<std::vector<std::string>> metadata_macs(std::string_view body) {
    std::vector<std::string> out;
    for (auto line : lines_of(body)) {
        if (line.ends_with('/')) line.remove_suffix(1);
        auto m = metadata_mac(line);
        if (!m) return std::nullopt;
        out.push_back(*m);
    }
    if (out.empty() || out.size() > kMostEnis) return std::nullopt;
    return out;
}

std::optional<std::int64_t> metadata_device_number(std::string_view body) {
    const std::string_view t = trim_space(body);
    if (t.empty() || t.size() > 3 || t.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
    return std::stoll(std::string(t));
}

std::optional<std::string> metadata_eni_id(std::string_view body) {
    const std::string_view t = trim_space(body);
    if (!t.starts_with("eni-") || t.size() > 64 || t.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") != std::string_view::npos)
        return std::nullopt;
    return std::string(t);
}

std::optional<std::vector<net::IpAddr>> metadata_addresses(std::string_view body) {
    std::vector<net::IpAddr> out;
    for (auto line : lines_of(body)) {
        auto ip = net::IpAddr::parse(trim_space(line));
        if (!ip || !ip->is_v4()) return std::nullopt;
        out.push_back(*ip);
    }
    if (out.empty()) return std::nullopt;
    return out;
}

std::optional<std::vector<net::IpNet>> metadata_cidrs(std::string_view body) {
    std::vector<net::IpNet> out;
    for (auto line : lines_of(body)) {
        auto n = net::IpNet::parse(trim_space(line));
        if (!n || !n->ip.is_v4() || n->mask_bits != 32) return std::nullopt;
        out.push_back(n->masked());
    }
    if (out.empty()) return std::nullopt;
    return out;
}

std::optional<std::vector<net::IpNet>> metadata_prefixes(std::string_view body) {
    std::vector<net::IpNet> out;
    for (auto line : lines_of(body)) {
        auto n = net::IpNet::parse(trim_space(line));
        if (!n || !n->ip.is_v4() || n->mask_bits != 32 || *n != n->masked()) return std::nullopt;
        out.push_back(*n);
    }
    return out;
}

std::optional<net::IpNet> metadata_cidr(std::string_view body) {
    auto list = metadata_cidrs(body);
    if (!list || list->size() != 1) return std::nullopt;
    return list->front();
}

Result<InstanceMetadata> read_instance_metadata(const ImdsOptions& o) {
    Session s(o);
    CNI_TRY(s.open());
    Reader r{s, o.endpoint.url};
    InstanceMetadata m;
    CNI_TRY_ASSIGN(m.primary_mac, r.read("mac", metadata_mac, "a MAC address"));
    const std::string macs_path = "network/interfaces/macs/";
    CNI_TRY_ASSIGN(auto macs, r.read(macs_path, metadata_macs, "a list of 1 to 251 MAC addresses"));
    if (std::ranges::find(macs, m.primary_mac) == macs.end())
        return fail("GET " + o.endpoint.url + std::string(kMetadata) + macs_path + ": the primary ENI's MAC " + m.primary_mac +
                    " (from mac) is not listed");
    for (auto& mac : macs) {
        const std::string at = macs_path + mac + "/";
        MetadataEni e;
        e.mac = mac;
        CNI_TRY_ASSIGN(e.device_number, r.read(at + "device-number", metadata_device_number, "a device number"));
        CNI_TRY_ASSIGN(e.id, r.read(at + "interface-id", metadata_eni_id, "an ENI id (eni-...)"));
        CNI_TRY_ASSIGN(e.subnet, r.read(at + "subnet-ipv4-cidr-block", metadata_cidr, "an IPv4 CIDR"));
        CNI_TRY_ASSIGN(e.addresses, r.read(at + "local-ipv4s", metadata_addresses, "a list of IPv4 addresses"));
        CNI_TRY_ASSIGN(e.vpc_cidrs, r.read(at + "vpc-ipv4-cidr-blocks", metadata_cidrs, "a list of IPv4 CIDRs"));
        CNI_TRY_ASSIGN(e.prefixes, r.read(at + "ipv4-prefix", metadata_prefixes, "a list of IPv4 prefixes", true));
        m.enis.push_back(std::move(e));
    }
    std::ranges::sort(m.enis, {}, &MetadataEni::device_number);
    return m;
}

}  // namespace cni::vpc_eni
