// SPDX-License-Identifier: Apache-2.0
// VERSION before the C library starts. The executable's entry point is cni_entry (below): it
// looks at argv and the environment as the kernel laid them on the stack and, when the call is
// `CNI_COMMAND=VERSION <applet>` (or `cni-all <applet>`) with no other arguments, writes the
// applet's version document with one write(2) and exits; anything else, and any doubt, jumps on
// to the C library's _start as if nothing happened. A runtime asks every plugin VERSION when it
// validates a network, and glibc's own start-up (its CPU feature and cache probing, one CPUID
// after another, each a VM exit) costs more than the answer itself (bench/RESULTS.md). The code
// here runs before TLS, IRELATIVE relocations and the stack guard exist, so this file is built
// without builtins or the stack protector, for x86-64 only (meson.build): no library calls,
// raw syscalls. The answer is the one dispatch.cpp gives (version_info_json); tests/cli holds
// them equal for every applet.
#include <cstddef>

#include "registry.hpp"

namespace {

using cni::Applet;

long raw_syscall3(long nr, long a, long b, long c) {
    long ret;
    asm volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}

constexpr long kSysWrite = 1, kSysExitGroup = 231;

std::size_t length(const char* s) {
    std::size_t n = 0;
    while (s[n]) ++n;
    return n;
}

bool equal(const char* s, std::size_t n, const char* t, std::size_t m) {
    if (n != m) return false;
    for (std::size_t i = 0; i < n; ++i)
        if (s[i] != t[i]) return false;
    return true;
}

bool starts_with(const char* s, const char* prefix) {
    for (; *prefix; ++s, ++prefix)
        if (*s != *prefix) return false;
    return true;
}

const char* basename_of(const char* path) {
    const char* base = path;
    for (const char* p = path; *p; ++p)
        if (*p == '/') base = p + 1;
    return base;
}

const Applet* applet_named(const char* name) {
    std::size_t n = length(name);
    for (std::size_t i = 0; i < cni::kAppletCount; ++i) {
        const Applet* a = cni::kAppletTable[i];
        if (equal(name, n, a->name.data(), a->name.size())) return a;
    }
    return nullptr;
}

// The applet a bare `<applet>` or `cni-all <applet>` call names, as main() resolves it.
const Applet* called_applet(int argc, char** argv) {
    if (argc < 1 || !argv[0]) return nullptr;
    const char* self = basename_of(argv[0]);
    if (const Applet* a = applet_named(self)) return argc == 1 ? a : nullptr;
    if (starts_with(self, "cni-all") && argc == 2) return applet_named(argv[1]);
    return nullptr;
}

// The environment's CNI_COMMAND is exactly VERSION; the last one counts, as for the dispatcher
// (cni::env_value).
bool asks_version(char** envp) {
    const char* command = nullptr;
    for (char** e = envp; *e; ++e)
        if (starts_with(*e, "CNI_COMMAND=")) command = *e + 12;
    return command && equal(command, length(command), "VERSION", 7);
}

struct Buffer {
    char bytes[512];
    std::size_t used = 0;
    bool overflow = false;
    void add(const char* s, std::size_t n) {
        if (used + n > sizeof bytes) {
            overflow = true;
            return;
        }
        for (std::size_t i = 0; i < n; ++i) bytes[used + i] = s[i];
        used += n;
    }
    void add(const char* s) { add(s, length(s)); }
};

}  // namespace

// Called by cni_entry with the initial stack pointer; returns only to let the C library start.
extern "C" [[gnu::used]] void cni_early_version(long* initial_sp) {
    int argc = int(initial_sp[0]);
    char** argv = reinterpret_cast<char**>(initial_sp + 1);
    char** envp = argv + argc + 1;
    const Applet* a = called_applet(argc, argv);
    if (!a || !asks_version(envp)) return;

    Buffer out;
    out.add("{\"cniVersion\":\"");
    out.add(cni::kCurrentVersion.data(), cni::kCurrentVersion.size());
    out.add("\",\"supportedVersions\":[");
    bool first = true;
    for (std::string_view v : a->versions) {
        out.add(first ? "\"" : ",\"");
        out.add(v.data(), v.size());
        out.add("\"");
        first = false;
    }
    out.add("]}\n");
    if (out.overflow) return;

    for (std::size_t done = 0; done < out.used;) {
        long n = raw_syscall3(kSysWrite, 1, long(out.bytes + done), long(out.used - done));
        if (n == -4) continue;  // EINTR
        if (n <= 0) {
            // Nothing written: let the normal path report it. Part written: fail as it would.
            if (done == 0) return;
            raw_syscall3(kSysExitGroup, 1, 0, 0);
        }
        done += std::size_t(n);
    }
    raw_syscall3(kSysExitGroup, 0, 0, 0);
}

// The ELF entry point (-Wl,-e,cni_entry): the stack pointer still points at argc, and %rdx,
// which the ABI uses for the dynamic linker's finaliser, is kept across the call.
asm(".text\n.globl cni_entry\n.type cni_entry,@function\ncni_entry:\n"
    "  mov %rsp, %rdi\n  mov %rdx, %r12\n  call cni_early_version\n  mov %r12, %rdx\n  jmp _start\n"
    ".size cni_entry, .-cni_entry\n");
