// SPDX-License-Identifier: Apache-2.0
// Network namespaces: Netns owns an fd verified to be a network namespace (nsfs magic and
// NS_GET_NSTYPE), and NetnsGuard is the ONE way to switch the calling thread into one: it saves
// the current namespace, setns()es, and restores in its destructor, aborting if it cannot
// restore (continuing in the wrong namespace would configure the wrong network).
#pragma once

#include <optional>
#include <string>

#include "core/os/unique_fd.hpp"
#include "core/result.hpp"

namespace cni::os {

class Netns {
public:
    // Opens `path`; code 8 (invalid netns) naming the path if it is missing or not a netns.
    static Result<Netns> open(const std::string& path);
    // Like open, but a path that does not exist yields nullopt (DEL must succeed then).
    static Result<std::optional<Netns>> open_if_exists(const std::string& path);
    static Result<Netns> current();
    // The namespace a socket was created in (SIOCGSKNS): where a netlink socket's requests go.
    static Result<Netns> of_socket(int sock_fd);
    // A new, unnamed network namespace that lives as long as this handle (host-device parks a
    // link there to rename it without clashing with names in either real namespace).
    static Result<Netns> create_anonymous();

    int fd() const { return fd_.get(); }
    Result<Netns> dup() const;  // another handle on the same namespace
    const std::string& path() const { return path_; }
    bool same_as(const Netns& other) const;

private:
    Netns(UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
    UniqueFd fd_;
    std::string path_;
};

class [[nodiscard]] NetnsGuard {
public:
    static Result<NetnsGuard> enter(const Netns& target);
    NetnsGuard(NetnsGuard&& o) noexcept : saved_(std::move(o.saved_)) {}
    NetnsGuard(const NetnsGuard&) = delete;
    NetnsGuard& operator=(const NetnsGuard&) = delete;
    NetnsGuard& operator=(NetnsGuard&&) = delete;
    ~NetnsGuard();

private:
    explicit NetnsGuard(UniqueFd saved) : saved_(std::move(saved)) {}
    UniqueFd saved_;
};

}  // namespace cni::os
