// SPDX-License-Identifier: Apache-2.0
// cni::Expected and cni::Unexpected: std::expected and std::unexpected wherever the standard
// library has them (g++ 12 with C++23: every build that ships or runs the test suites), and a
// small equivalent where it does not. clang 14 lacks the conditionally trivial special members
// that libstdc++'s <expected> requires, and clang 14 is what the libFuzzer targets are built
// with (docs/fuzzing.md). The equivalent holds a std::variant and offers what this code base
// uses: construction from a value or an Unexpected, has_value() and bool, *, ->, value(),
// error() and value_or(), and Expected<void, E>.
#pragma once

#include <version>

#if defined(__cpp_lib_expected)

#include <expected>

namespace cni {
template <class T, class E>
using Expected = std::expected<T, E>;
template <class E>
using Unexpected = std::unexpected<E>;
}  // namespace cni

#else

#include <type_traits>
#include <utility>
#include <variant>

namespace cni {

template <class E>
class Unexpected {
public:
    constexpr explicit Unexpected(E e) : e_(std::move(e)) {}
    constexpr const E& error() const& { return e_; }
    constexpr E& error() & { return e_; }
    constexpr E&& error() && { return std::move(e_); }

private:
    E e_;
};
template <class E>
Unexpected(E) -> Unexpected<E>;

namespace detail {

// What both forms hold and answer: the value (or std::monostate) or the error.
template <class V, class E>
class ExpectedBase {
public:
    template <class G>
    constexpr ExpectedBase(const Unexpected<G>& u) : v_(std::in_place_index<1>, u.error()) {}
    template <class G>
    constexpr ExpectedBase(Unexpected<G>&& u) : v_(std::in_place_index<1>, std::move(u).error()) {}

    constexpr bool has_value() const { return v_.index() == 0; }
    constexpr explicit operator bool() const { return has_value(); }
    constexpr E& error() & { return std::get<1>(v_); }
    constexpr const E& error() const& { return std::get<1>(v_); }
    constexpr E&& error() && { return std::get<1>(std::move(v_)); }

protected:
    template <class... A>
    constexpr explicit ExpectedBase(std::in_place_index_t<0> at, A&&... a) : v_(at, std::forward<A>(a)...) {}
    std::variant<V, E> v_;
};

}  // namespace detail

template <class T, class E>
class Expected : public detail::ExpectedBase<T, E> {
    using Base = detail::ExpectedBase<T, E>;
    using Base::v_;

public:
    using value_type = T;
    using error_type = E;
    using Base::Base;

    constexpr Expected()
        requires std::is_default_constructible_v<T>
        : Base(std::in_place_index<0>) {}
    template <class U = T>
        requires(!std::is_same_v<std::remove_cvref_t<U>, Expected> && !std::is_same_v<std::remove_cvref_t<U>, Unexpected<E>> &&
                 std::is_constructible_v<T, U>)
    constexpr Expected(U&& u) : Base(std::in_place_index<0>, std::forward<U>(u)) {}

    constexpr T& operator*() & { return std::get<0>(v_); }
    constexpr const T& operator*() const& { return std::get<0>(v_); }
    constexpr T&& operator*() && { return std::get<0>(std::move(v_)); }
    constexpr T* operator->() { return &std::get<0>(v_); }
    constexpr const T* operator->() const { return &std::get<0>(v_); }
    constexpr T& value() & { return std::get<0>(v_); }
    constexpr const T& value() const& { return std::get<0>(v_); }
    constexpr T&& value() && { return std::get<0>(std::move(v_)); }
    template <class U>
    constexpr T value_or(U&& u) const& {
        return this->has_value() ? **this : static_cast<T>(std::forward<U>(u));
    }
    template <class U>
    constexpr T value_or(U&& u) && {
        return this->has_value() ? std::move(**this) : static_cast<T>(std::forward<U>(u));
    }
};

template <class E>
class Expected<void, E> : public detail::ExpectedBase<std::monostate, E> {
    using Base = detail::ExpectedBase<std::monostate, E>;

public:
    using value_type = void;
    using error_type = E;
    using Base::Base;

    constexpr Expected() : Base(std::in_place_index<0>) {}
    constexpr void operator*() const {}
    constexpr void value() const {}
};

}  // namespace cni

#endif
