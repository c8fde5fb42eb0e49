// SPDX-License-Identifier: Apache-2.0
// Reading and validating a CNI invocation (see request.hpp).
#include "core/cni/request.hpp"

#include <algorithm>

#include "core/cni/json.hpp"
#include "core/strings.hpp"

namespace cni {
namespace {

bool id_char(char c, bool first) {
    bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    return first ? alnum : alnum || c == '_' || c == '.' || c == '-';
}

// '/', ':' or a rune Go's unicode.IsSpace accepts (ASCII space/\t-\r, U+0085, U+00A0, U+1680,
// U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000), found in the UTF-8 text.
bool has_slash_colon_or_space(std::string_view s) {
    auto at = [&](std::size_t i) { return i < s.size() ? static_cast<unsigned char>(s[i]) : 0u; };
    for (std::size_t i = 0; i < s.size(); ++i) {
        unsigned c = at(i);
        if (c == '/' || c == ':' || c == ' ' || (c >= '\t' && c <= '\r')) return true;
        if (c == 0xc2 && (at(i + 1) == 0x85 || at(i + 1) == 0xa0)) return true;
        if (c == 0xe1 && at(i + 1) == 0x9a && at(i + 2) == 0x80) return true;
        if (c == 0xe2 && at(i + 1) == 0x80 && (at(i + 2) <= 0x8a || at(i + 2) == 0xa8 || at(i + 2) == 0xa9 || at(i + 2) == 0xaf))
            return true;
        if (c == 0xe2 && at(i + 1) == 0x81 && at(i + 2) == 0x9f) return true;
        if (c == 0xe3 && at(i + 1) == 0x80 && at(i + 2) == 0x80) return true;
    }
    return false;
}

struct VarRule {
    std::string_view name;
    std::initializer_list<Command> required_for;
};

}  // namespace

bool valid_id(std::string_view s) {
    if (s.empty()) return false;
    for (std::size_t i = 0; i < s.size(); ++i)
        if (!id_char(s[i], i == 0)) return false;
    return true;
}

std::optional<Command> command_from_name(std::string_view s) {
    if (s == "ADD") return Command::add;
    if (s == "DEL") return Command::del;
    if (s == "CHECK") return Command::check;
    if (s == "STATUS") return Command::status;
    if (s == "GC") return Command::gc;
    if (s == "VERSION") return Command::version;
    return std::nullopt;
}

std::string_view command_name(Command c) {
    switch (c) {
    case Command::add: return "ADD";
    case Command::del: return "DEL";
    case Command::check: return "CHECK";
    case Command::status: return "STATUS";
    case Command::gc: return "GC";
    case Command::version: return "VERSION";
    case Command::unknown: break;
    }
    return "";
}

std::string Request::getenv(std::string_view key) const { return env_value(environ, key); }

Request Request::with_command(Command c) const {
    Request r = *this;
    r.command = c;
    r.command_text = std::string(command_name(c));
    std::erase_if(r.environ, [](const std::string& kv) { return kv.starts_with("CNI_COMMAND="); });
    r.environ.push_back("CNI_COMMAND=" + r.command_text);
    return r;
}

Status validate_container_id(std::string_view id) {
    if (id.empty()) return fail(code::unknown_container, "missing containerID");
    if (!valid_id(id)) return fail(code::invalid_env, "invalid characters in containerID", std::string(id));
    return {};
}

Status validate_ifname(std::string_view name) {
    if (name.empty()) return fail(code::invalid_env, "interface name is empty");
    if (name.size() > 15)
        return fail(code::invalid_env, "interface name is too long", "interface name should be less than 16 characters");
    if (name == "." || name == "..") return fail(code::invalid_env, "interface name is . or ..");
    if (has_slash_colon_or_space(name))
        return fail(code::invalid_env, "interface name contains / or : or whitespace characters");
    return {};
}

Status validate_network_name(std::string_view config) {
    auto doc = json::parse(config);
    if (!doc) return fail(code::decoding_failure, "error unmarshall network config: " + doc.error().msg);
    if (!doc->IsObject() && !doc->IsNull())
        return fail(code::decoding_failure, "error unmarshall network config: json: cannot unmarshal " +
                                                std::string(json::kind(*doc)) +
                                                " into Go value of type struct { Name string \"json:\\\"name\\\"\" }");
    std::string name;
    if (doc->IsObject()) {
        if (auto st = json::field(*doc, "name", name, json::Where{"", ""}); !st)
            return fail(code::decoding_failure, "error unmarshall network config: " + st.error().msg);
    }
    if (name.empty()) return fail(code::invalid_config, "missing network name");
    if (!valid_id(name)) return fail(code::invalid_config, "invalid characters found in network name", name);
    return {};
}

cni::Expected<Request, RequestError> read_request(std::span<const std::string> environ, const StdinReader& stdin_reader) {
    Request r;
    r.environ.assign(environ.begin(), environ.end());
    r.command_text = r.getenv("CNI_COMMAND");
    r.command = command_from_name(r.command_text).value_or(Command::unknown);

    using C = Command;
    const VarRule rules[] = {
        {"CNI_COMMAND", {}},
        {"CNI_CONTAINERID", {C::add, C::check, C::del}},
        {"CNI_NETNS", {C::add, C::check}},
        {"CNI_IFNAME", {C::add, C::check, C::del}},
        {"CNI_ARGS", {}},
        {"CNI_PATH", {C::add, C::check, C::del, C::gc, C::status}},
        {"CNI_NETNS_OVERRIDE", {}},
    };
    std::string* slots[] = {&r.command_text, &r.container_id, &r.netns, &r.ifname, &r.args, &r.path, &r.netns_override};
    auto required = [&](const VarRule& rule) {
        return rule.name == "CNI_COMMAND" ||
               std::find(rule.required_for.begin(), rule.required_for.end(), r.command) != rule.required_for.end();
    };
    std::string missing;
    for (std::size_t i = 0; i < std::size(rules); ++i) {
        *slots[i] = r.getenv(rules[i].name);
        if (slots[i]->empty() && required(rules[i])) missing += (missing.empty() ? "" : ",") + std::string(rules[i].name);
    }
    if (!missing.empty())
        return cni::Unexpected(RequestError{
            Error{code::invalid_env, "required env variables [" + missing + "] missing", {}}, r.command_text.empty()});

    if (r.command != C::version) {
        auto data = stdin_reader(kMaxConfigBytes);
        if (!data) return cni::Unexpected(RequestError{data.error()});
        r.config = std::move(*data);
        if (auto st = validate_network_name(r.config); !st) return cni::Unexpected(RequestError{st.error()});
        if (required(rules[1]))
            if (auto st = validate_container_id(r.container_id); !st) return cni::Unexpected(RequestError{st.error()});
        if (required(rules[3]))
            if (auto st = validate_ifname(r.ifname); !st) return cni::Unexpected(RequestError{st.error()});
    }
    return r;
}

}  // namespace cni
