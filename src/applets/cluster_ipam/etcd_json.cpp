// SPDX-License-Identifier: Apache-2.0
// etcd's JSON gateway bodies (see etcd_json.hpp): requests built as JSON documents and written
// compactly; answers parsed whole and walked member by member, each key, value and integer
// checked for its type and form.
#include "applets/cluster_ipam/etcd_json.hpp"

#include "core/cni/json.hpp"

namespace cni::cluster_ipam {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int sextet(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

Error bad(std::string_view what) { return Error{code::decoding_failure, "etcd answered " + std::string(what), {}}; }

// A member of an object by its exact name (proto3's original name, or its lowerCamelCase form).
const json::Value* member(const json::Value& obj, std::string_view name, std::string_view camel = {}) {
    if (!obj.IsObject()) return nullptr;
    if (const json::Value* v = json::find_exact(obj, name)) return v;
    return camel.empty() ? nullptr : json::find_exact(obj, camel);
}

// An int64 written as a string of digits (or a JSON integer); absent is 0.
Result<std::int64_t> int64_of(const json::Value& obj, std::string_view name, std::string_view camel = {}) {
    const json::Value* v = member(obj, name, camel);
    if (!v || v->IsNull()) return 0;
    if (v->IsInt64()) return v->GetInt64();
    if (!v->IsString()) return cni::Unexpected(bad("a " + std::string(name) + " that is not an integer"));
    std::string_view s(v->GetString(), v->GetStringLength());
    const bool negative = s.starts_with('-');
    if (negative) s.remove_prefix(1);
    if (s.empty() || s.size() > 19) return cni::Unexpected(bad("a " + std::string(name) + " that is not an int64"));
    std::uint64_t n = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return cni::Unexpected(bad("a " + std::string(name) + " that is not an int64"));
        n = n * 10 + std::uint64_t(c - '0');
    }
    if (n > std::uint64_t(INT64_MAX) + (negative ? 1 : 0)) return cni::Unexpected(bad("a " + std::string(name) + " past int64"));
    return negative ? std::int64_t(0 - n) : std::int64_t(n);
}

Result<std::string> bytes_of(const json::Value& obj, std::string_view name) {
    const json::Value* v = member(obj, name);
    if (!v || v->IsNull()) return std::string();
    if (!v->IsString()) return cni::Unexpected(bad("a " + std::string(name) + " that is not a string"));
    auto b = base64_decode(std::string_view(v->GetString(), v->GetStringLength()));
    if (!b) return cni::Unexpected(bad("a " + std::string(name) + " that is not base64"));
    return std::move(*b);
}

Result<bool> bool_of(const json::Value& obj, std::string_view name) {
    const json::Value* v = member(obj, name);
    if (!v || v->IsNull()) return false;
    if (!v->IsBool()) return cni::Unexpected(bad("a " + std::string(name) + " that is not a boolean"));
    return v->GetBool();
}

Result<json::Document> object_answer(std::string_view body) {
    auto d = json::parse(body);
    if (!d) return cni::Unexpected(bad("no JSON: " + d.error().msg));
    if (!d->IsObject()) return cni::Unexpected(bad("JSON that is not an object"));
    return d;
}

Result<std::int64_t> revision_of(const json::Value& answer) {
    const json::Value* h = member(answer, "header");
    if (!h) return cni::Unexpected(bad("no header"));
    if (!h->IsObject()) return cni::Unexpected(bad("a header that is not an object"));
    return int64_of(*h, "revision");
}

Result<std::vector<KeyValue>> kvs_of(const json::Value& answer) {
    std::vector<KeyValue> out;
    const json::Value* kvs = member(answer, "kvs");
    if (!kvs || kvs->IsNull()) return out;
    if (!kvs->IsArray()) return cni::Unexpected(bad("kvs that are not an array"));
    for (const auto& e : kvs->GetArray()) {
        if (!e.IsObject()) return cni::Unexpected(bad("a kv that is not an object"));
        KeyValue kv;
        CNI_TRY_ASSIGN(kv.key, bytes_of(e, "key"));
        CNI_TRY_ASSIGN(kv.value, bytes_of(e, "value"));
        CNI_TRY_ASSIGN(kv.create_revision, int64_of(e, "create_revision", "createRevision"));
        CNI_TRY_ASSIGN(kv.mod_revision, int64_of(e, "mod_revision", "modRevision"));
        CNI_TRY_ASSIGN(kv.lease, int64_of(e, "lease"));
        if (kv.key.empty()) return cni::Unexpected(bad("a kv without a key"));
        out.push_back(std::move(kv));
    }
    return out;
}

json::Value op_json(const Op& op, json::Alloc& a) {
    json::Value inner(rapidjson::kObjectType);
    json::set(inner, "key", json::str(base64_encode(op.key), a), a);
    json::Value wrapped(rapidjson::kObjectType);
    switch (op.kind) {
    case Op::Kind::put:
        json::set(inner, "value", json::str(base64_encode(op.value), a), a);
        if (op.lease != 0) json::set(inner, "lease", json::str(std::to_string(op.lease), a), a);
        json::set(wrapped, "request_put", std::move(inner), a);
        break;
    case Op::Kind::del:
        json::set(wrapped, "request_delete_range", std::move(inner), a);
        break;
    case Op::Kind::range:
        if (!op.range_end.empty()) json::set(inner, "range_end", json::str(base64_encode(op.range_end), a), a);
        json::set(wrapped, "request_range", std::move(inner), a);
        break;
    }
    return wrapped;
}

json::Value ops_json(const std::vector<Op>& ops, json::Alloc& a) {
    json::Value arr(rapidjson::kArrayType);
    for (const Op& op : ops) arr.PushBack(op_json(op, a), a);
    return arr;
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        const unsigned v = unsigned(std::uint8_t(bytes[i])) << 16 | unsigned(std::uint8_t(bytes[i + 1])) << 8 | std::uint8_t(bytes[i + 2]);
        out += {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63], kAlphabet[v & 63]};
    }
    if (bytes.size() - i == 1) {
        const unsigned v = unsigned(std::uint8_t(bytes[i])) << 16;
        out += {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], '=', '='};
    } else if (bytes.size() - i == 2) {
        const unsigned v = unsigned(std::uint8_t(bytes[i])) << 16 | unsigned(std::uint8_t(bytes[i + 1])) << 8;
        out += {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63], '='};
    }
    return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
    if (text.size() % 4 != 0) return std::nullopt;
    std::string out;
    out.reserve(text.size() / 4 * 3);
    for (std::size_t i = 0; i < text.size(); i += 4) {
        const bool last = i + 4 == text.size();
        const int a = sextet(text[i]), b = sextet(text[i + 1]);
        const bool pad2 = last && text[i + 2] == '=' && text[i + 3] == '=';
        const bool pad1 = last && !pad2 && text[i + 3] == '=';
        const int c = pad2 ? 0 : sextet(text[i + 2]), d = pad1 || pad2 ? 0 : sextet(text[i + 3]);
        if (a < 0 || b < 0 || c < 0 || d < 0) return std::nullopt;
        const unsigned v = unsigned(a) << 18 | unsigned(b) << 12 | unsigned(c) << 6 | unsigned(d);
        out += char(v >> 16);
        if (!pad2) out += char((v >> 8) & 0xff);
        if (!pad1 && !pad2) out += char(v & 0xff);
        // The bits padding leaves out must be zero: one text per byte string.
        if ((pad2 && (v & 0xffff) != 0) || (pad1 && (v & 0xff) != 0)) return std::nullopt;
    }
    return out;
}

std::string range_request(const std::string& key, const std::string& range_end, std::int64_t limit) {
    json::Document d(rapidjson::kObjectType);
    auto& a = d.GetAllocator();
    json::set(d, "key", json::str(base64_encode(key), a), a);
    if (!range_end.empty()) json::set(d, "range_end", json::str(base64_encode(range_end), a), a);
    if (limit > 0) json::set(d, "limit", json::str(std::to_string(limit), a), a);
    return json::write(d, json::Style::compact, false);
}

std::string txn_request(const std::vector<Compare>& compares, const std::vector<Op>& success, const std::vector<Op>& failure) {
    json::Document d(rapidjson::kObjectType);
    auto& a = d.GetAllocator();
    json::Value cmps(rapidjson::kArrayType);
    for (const Compare& c : compares) {
        json::Value o(rapidjson::kObjectType);
        json::set(o, "key", json::str(base64_encode(c.key), a), a);
        json::set(o, "result", json::str("EQUAL", a), a);
        if (c.target == Compare::Target::mod_revision) {
            json::set(o, "target", json::str("MOD", a), a);
            json::set(o, "mod_revision", json::str(std::to_string(c.mod_revision), a), a);
        } else {
            json::set(o, "target", json::str("VALUE", a), a);
            json::set(o, "value", json::str(base64_encode(c.value), a), a);
        }
        cmps.PushBack(std::move(o), a);
    }
    json::set(d, "compare", std::move(cmps), a);
    json::set(d, "success", ops_json(success, a), a);
    json::set(d, "failure", ops_json(failure, a), a);
    return json::write(d, json::Style::compact, false);
}

std::string lease_grant_request(std::int64_t ttl_seconds) {
    return "{\"TTL\":\"" + std::to_string(ttl_seconds) + "\"}";
}

std::optional<EtcdError> parse_etcd_error(std::string_view body) {
    auto d = json::parse(body);
    if (!d || !d->IsObject()) return std::nullopt;
    const json::Value* error = member(*d, "error");
    const json::Value* message = member(*d, "message");
    const json::Value* code = member(*d, "code");
    if (!code || !code->IsInt() || (!error && !message)) return std::nullopt;
    EtcdError e;
    e.grpc_code = code->GetInt();
    for (const json::Value* t : {message, error})
        if (t && t->IsString() && t->GetStringLength() > 0) {
            e.message.assign(t->GetString(), t->GetStringLength());
            break;
        }
    return e;
}

bool etcd_error_may_pass(const EtcdError& e) {
    // gRPC's DeadlineExceeded (4), Aborted (10) and Unavailable (14): etcd's "no leader",
    // "leader changed", "not leader", "request timed out", a member stopping.
    return e.grpc_code == 4 || e.grpc_code == 10 || e.grpc_code == 14;
}

Result<std::vector<KeyValue>> parse_range_answer(std::string_view body) {
    CNI_TRY_ASSIGN(auto d, object_answer(body));
    CNI_TRY(revision_of(d));
    return kvs_of(d);
}

Result<TxnResult> parse_txn_answer(std::string_view body, std::size_t success_ranges, std::size_t failure_ranges) {
    CNI_TRY_ASSIGN(auto d, object_answer(body));
    TxnResult t;
    CNI_TRY_ASSIGN(t.revision, revision_of(d));
    CNI_TRY_ASSIGN(t.succeeded, bool_of(d, "succeeded"));
    const json::Value* responses = member(d, "responses");
    if (responses && !responses->IsNull()) {
        if (!responses->IsArray()) return cni::Unexpected(bad("responses that are not an array"));
        for (const auto& r : responses->GetArray()) {
            if (!r.IsObject()) return cni::Unexpected(bad("a response that is not an object"));
            const json::Value* range = member(r, "response_range", "responseRange");
            if (!range) continue;
            if (!range->IsObject()) return cni::Unexpected(bad("a response_range that is not an object"));
            CNI_TRY_ASSIGN(auto kvs, kvs_of(*range));
            t.ranges.push_back(std::move(kvs));
        }
    }
    const std::size_t ranges = t.succeeded ? success_ranges : failure_ranges;
    if (t.ranges.size() != ranges)
        return cni::Unexpected(bad(std::to_string(t.ranges.size()) + " range responses to a txn of " + std::to_string(ranges)));
    return t;
}

Result<std::int64_t> parse_lease_grant_answer(std::string_view body) {
    CNI_TRY_ASSIGN(auto d, object_answer(body));
    CNI_TRY(revision_of(d));
    CNI_TRY_ASSIGN(auto id, int64_of(d, "ID"));
    if (id <= 0) return cni::Unexpected(bad("a lease without an ID"));
    return id;
}

}  // namespace cni::cluster_ipam
