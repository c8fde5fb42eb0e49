// SPDX-License-Identifier: Apache-2.0
// Runs a piece of a test on a thread with a 64 KiB stack (or the smallest the C library allows,
// 128 KiB on arm64), as a plugin started under a small `ulimit -s` would have: code that recursed
// once per nesting level would overflow it, so a test passing here shows the code under test
// keeps its own stack on the heap.
#pragma once

#include <catch2/catch.hpp>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>

template <class Body>
void on_small_stack(Body&& body) {
    pthread_attr_t attr;
    REQUIRE(pthread_attr_init(&attr) == 0);
    const long smallest = ::sysconf(_SC_THREAD_STACK_MIN);
    REQUIRE(pthread_attr_setstacksize(&attr, std::size_t(std::max(64L * 1024, smallest))) == 0);
    auto start = [](void* p) -> void* {
        (*static_cast<Body*>(p))();
        return nullptr;
    };
    pthread_t thread;
    REQUIRE(pthread_create(&thread, &attr, start, &body) == 0);
    pthread_join(thread, nullptr);
    pthread_attr_destroy(&attr);
}
