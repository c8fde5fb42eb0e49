// SPDX-License-Identifier: Apache-2.0
// cluster-ipam's etcd client (src/applets/cluster_ipam/etcd_client.hpp) driven by a test
// (tests/netns/test_etcd_client.py): one EtcdClient for the whole run, made from the options,
// then one command per line of stdin and one JSON line per command on stdout, so a test can
// kill members between the calls of one client.
//   etcd-kv --endpoints URL[,URL...] [--ca FILE] [--cert FILE] [--key FILE] [--timeout-ms N]
//           [--tls-tickets DIR]
//   range KEY [END] | prefix KEY | create KEY VALUE | cas KEY MOD_REVISION VALUE | lease TTL
// Each answer: {"ok": true, ...what the call returned..., "roundTrips": N, "tlsFull": F,
// "tlsResumed": R} (the client's counts so far) or {"ok": false, "code": N, "msg": "..."}.
#include <iostream>
#include <fstream>
#include <sstream>
#include <string>

#include "applets/cluster_ipam/etcd_client.hpp"
#include "core/cni/json.hpp"

using namespace cni;
using namespace cni::cluster_ipam;

namespace {

std::string kvs_json(const std::vector<KeyValue>& kvs) {
    std::string out = "[";
    for (const auto& kv : kvs)
        out += std::string(out.size() > 1 ? "," : "") + "{\"key\":" + json::quote(kv.key) + ",\"value\":" + json::quote(kv.value) +
               ",\"modRevision\":" + std::to_string(kv.mod_revision) + ",\"createRevision\":" + std::to_string(kv.create_revision) + "}";
    return out + "]";
}

std::string failed(const Error& e) {
    return "{\"ok\":false,\"code\":" + std::to_string(e.code) + ",\"msg\":" + json::quote(e.msg) + "}";
}

// The client's counts so far, as the answer's last members.
std::string counts(const EtcdClient& c) {
    const auto h = c.handshakes();
    return ",\"roundTrips\":" + std::to_string(c.round_trips()) + ",\"tlsFull\":" + std::to_string(h.full) +
           ",\"tlsResumed\":" + std::to_string(h.resumed) + "}";
}

std::string txn_json(const Result<TxnResult>& t, const EtcdClient& c) {
    if (!t) return failed(t.error());
    return "{\"ok\":true,\"succeeded\":" + std::string(t->succeeded ? "true" : "false") + ",\"revision\":" +
           std::to_string(t->revision) + ",\"ranges\":" + std::to_string(t->ranges.size()) +
           (t->ranges.empty() ? "" : ",\"kvs\":" + kvs_json(t->ranges.front())) + counts(c);
}

std::string run(EtcdClient& c, const std::string& line) {
    std::istringstream in(line);
    std::string verb, key, a, b;
    in >> verb >> key >> a >> b;
    if (verb == "range" || verb == "prefix") {
        auto r = c.range(key, verb == "prefix" ? prefix_end(key) : a);
        if (!r) return failed(r.error());
        return "{\"ok\":true,\"kvs\":" + kvs_json(*r) + counts(c);
    }
    if (verb == "create")  // put if absent, and read it back in the same txn
        return txn_json(c.txn({Compare{key, Compare::Target::mod_revision, 0, {}}},
                              {Op{Op::Kind::put, key, a, {}, 0}, Op{Op::Kind::range, key, {}, {}, 0}},
                              {Op{Op::Kind::range, key, {}, {}, 0}}), c);
    if (verb == "cas")
        return txn_json(c.txn({Compare{key, Compare::Target::mod_revision, std::stoll(a), {}}},
                              {Op{Op::Kind::put, key, b, {}, 0}}, {}), c);
    if (verb == "lease") {
        auto id = c.lease_grant(std::stoll(key));
        if (!id) return failed(id.error());
        return "{\"ok\":true,\"lease\":" + std::to_string(*id) + counts(c);
    }
    return failed(Error{code::invalid_config, "unknown command \"" + verb + "\"", {}});
}

// A credential file's text (the applet reads its own through config.cpp's checks).
std::string read_all(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

int main(int argc, char** argv) {
    EtcdOptions o;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i], value = argv[i + 1];
        if (flag == "--endpoints") {
            std::istringstream in(value);
            for (std::string e; std::getline(in, e, ',');) o.endpoints.push_back(e);
        } else if (flag == "--ca") o.tls.ca_pem = read_all(o.tls.ca_name = value);
        else if (flag == "--cert") o.tls.cert_pem = read_all(o.tls.cert_name = value);
        else if (flag == "--key") o.tls.key_pem = read_all(o.tls.key_name = value);
        else if (flag == "--tls-tickets") o.tls_tickets = value;
        else if (flag == "--timeout-ms") o.dial_timeout = std::chrono::milliseconds(std::stoll(value));
        else {
            std::cerr << "etcd-kv: unknown option " << flag << "\n";
            return 2;
        }
    }
    auto c = EtcdClient::open(o);
    if (!c) {
        std::cout << failed(c.error()) << std::endl;
        return 1;
    }
    for (std::string line; std::getline(std::cin, line);) std::cout << run(**c, line) << std::endl;
    return 0;
}
