// SPDX-License-Identifier: Apache-2.0
// Errors are values. Every fallible function returns Result<T> (std::expected, through
// core/expected.hpp) whose error is a CNI error: a spec code (CNI spec "Error" section: 1-11,
// 50, 51; 999 is the Go plugins' catch-all for untyped errors), a message and optional details.
// context() prefixes the message as the error propagates ("bridge: setting up veth: ..."), the
// way Go wraps errors.
#pragma once

#include "core/expected.hpp"
#include <string>
#include <string_view>
#include <utility>

namespace cni {

namespace code {
inline constexpr int incompatible_version = 1;
inline constexpr int unsupported_field = 2;
inline constexpr int unknown_container = 3;
inline constexpr int invalid_env = 4;
inline constexpr int io_failure = 5;
inline constexpr int decoding_failure = 6;
inline constexpr int invalid_config = 7;
inline constexpr int invalid_netns = 8;
inline constexpr int try_again_later = 11;
inline constexpr int plugin_not_available = 50;
inline constexpr int limited_connectivity = 51;
inline constexpr int internal = 999;
}  // namespace code

struct Error {
    int code = code::internal;
    std::string msg;
    std::string details;

    // Prefix the message, keeping the code: "what: <msg>".
    [[nodiscard]] Error context(std::string_view what) const& {
        return Error{code, std::string(what) + ": " + msg, details};
    }
    [[nodiscard]] Error context(std::string_view what) && {
        msg = std::string(what) + ": " + msg;
        return std::move(*this);
    }
};

template <class T>
using Result = cni::Expected<T, Error>;
using Status = Result<void>;

// An error value ready to return from a function returning any Result<T>.
inline cni::Unexpected<Error> fail(int c, std::string msg, std::string details = {}) {
    return cni::Unexpected(Error{c, std::move(msg), std::move(details)});
}
// The common case: an untyped plugin error, code 999 like the Go plugins.
inline cni::Unexpected<Error> fail(std::string msg) {
    return fail(code::internal, std::move(msg));
}

// The failures of steps that must all be tried (GC and libcni's GC go on past errors): each
// failed Result's message, joined by "; ", becomes one untyped error.
class Failures {
public:
    template <class T>
    void add(const Result<T>& r) {
        if (!r) text_ += (text_.empty() ? "" : "; ") + r.error().msg;
    }
    // Success when nothing failed; else "<prefix><messages>".
    Status status(std::string_view prefix = {}) const {
        if (text_.empty()) return {};
        return fail(std::string(prefix) + text_);
    }

private:
    std::string text_;
};

}  // namespace cni

// Early return on error, like Rust's `?`. The expression must be a Result<T>; on success the
// macro yields nothing (use TRY_ASSIGN to keep the value).
#define CNI_TRY(expr)                                         \
    do {                                                      \
        if (auto cni_try_r_ = (expr); !cni_try_r_)            \
            return cni::Unexpected(std::move(cni_try_r_).error()); \
    } while (0)

// Assign or return the error: `CNI_TRY_ASSIGN(auto x, make());` or `CNI_TRY_ASSIGN(y, make());`.
// A GNU statement expression keeps it ONE expression, so it is safe as the body of an `if`.
#define CNI_TRY_ASSIGN(lhs, expr)                                      \
    lhs = __extension__({                                             \
        auto cni_try_v_ = (expr);                                     \
        if (!cni_try_v_) return cni::Unexpected(std::move(cni_try_v_).error()); \
        std::move(*cni_try_v_);                                       \
    })
