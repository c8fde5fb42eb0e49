// SPDX-License-Identifier: Apache-2.0
// Undo steps for an ADD that fails midway (CNI spec: a failed ADD leaves nothing behind). Each
// step that changes the system pushes its undo; on success the caller dismisses them; otherwise
// the destructor runs them newest first, ignoring their errors (the ADD's own error is what the
// runtime must see).
#pragma once

#include <functional>
#include <vector>

namespace cni {

class Rollback {
public:
    Rollback() = default;
    Rollback(const Rollback&) = delete;
    Rollback& operator=(const Rollback&) = delete;
    ~Rollback() {
        for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) (*it)();
    }
    void push(std::function<void()> undo) { undo_.push_back(std::move(undo)); }
    void dismiss() { undo_.clear(); }

private:
    std::vector<std::function<void()>> undo_;
};

}  // namespace cni
