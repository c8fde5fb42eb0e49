// SPDX-License-Identifier: Apache-2.0
// The per-applet launcher that `cni-all install` lays down under each applet's name (docs/install.md):
// a program of a few KiB without any C library that executes the `cni-all` in its own directory
// with the applet's name, written into its tag by the installer, as argv[0]. Other installers
// copy their plugins into the same folder (`cp -f /flannel /opt/cni/bin/flannel`): through a
// symlink that copy would overwrite cni-all itself and every applet would become the copied
// plugin; a launcher is a file of its own, so only that applet is replaced. It is written for
// x86-64 and arm64 (the only code that differs is the system-call instruction and the entry
// point); elsewhere `cni-all install` lays down symlinks. When cni-all cannot be executed the
// launcher answers as a plugin would: a CNI error on stdout, exit status 1.
#include "launcher/tag.hpp"

namespace {

constexpr unsigned long kPathMax = 4096;
constexpr long kAtCwd = -100;  // AT_FDCWD

#if defined(__x86_64__)
constexpr long kSysWrite = 1, kSysExecve = 59, kSysExitGroup = 231, kSysReadlinkat = 267;

long syscall4(long nr, long a, long b, long c, long d = 0) {
    long ret;
    register long r10 asm("r10") = d;
    asm volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
    return ret;
}
#elif defined(__aarch64__)
constexpr long kSysWrite = 64, kSysExecve = 221, kSysExitGroup = 94, kSysReadlinkat = 78;

long syscall4(long nr, long a, long b, long c, long d = 0) {
    register long x8 asm("x8") = nr;
    register long x0 asm("x0") = a;
    register long x1 asm("x1") = b;
    register long x2 asm("x2") = c;
    register long x3 asm("x3") = d;
    asm volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
    return x0;
}
#else
#error "the launcher is written for x86-64 and arm64 (meson.build builds it for those only)"
#endif

[[noreturn]] void exit_group(int code) {
    syscall4(kSysExitGroup, code, 0, 0);
    __builtin_unreachable();
}

void put(const char* s) {
    unsigned long n = 0;
    while (s[n]) ++n;
    syscall4(kSysWrite, 1, reinterpret_cast<long>(s), long(n));
}

}  // namespace

// In .data, so the installer finds it in the file and the compiler cannot fold it into code.
extern "C" {
__attribute__((used)) volatile char cni_all_launcher_tag[cni::launcher::kTagTextSize + cni::launcher::kNameSize] =
    "cni-all launcher v1 applet=";
}

extern "C" [[noreturn]] __attribute__((used)) void cni_all_launch(long* sp) {
    long argc = sp[0];
    char** argv = reinterpret_cast<char**>(sp + 1);
    char** envp = argv + argc + 1;
    static char name[cni::launcher::kNameSize + 1];
    for (unsigned long i = 0; i < cni::launcher::kNameSize; ++i) name[i] = cni_all_launcher_tag[cni::launcher::kTagTextSize + i];
    // cni-all beside this file (its real path: a symlink to a launcher still finds it).
    static char path[kPathMax + sizeof "cni-all"];
    long n = syscall4(kSysReadlinkat, kAtCwd, reinterpret_cast<long>("/proc/self/exe"), reinterpret_cast<long>(path),
                      long(kPathMax));
    while (n > 0 && path[n - 1] != '/') --n;
    const char target[] = "cni-all";
    for (unsigned long i = 0; i < sizeof target; ++i) path[n + long(i)] = target[i];
    static char* fallback[2];
    if (argc == 0) argv = fallback;  // no argv[0] to replace: one of our own
    argv[0] = name;
    long err = syscall4(kSysExecve, reinterpret_cast<long>(path), reinterpret_cast<long>(argv), reinterpret_cast<long>(envp));
    (void)err;
    put("{\n    \"code\": 999,\n    \"msg\": \"cni-all launcher for ");
    put(name);
    put(": cannot execute ");
    put(path);
    put("\"\n}\n");
    exit_group(1);
}

// The entry point: the stack pointer as the kernel left it (argc, argv..., 0, envp..., 0).
#if defined(__x86_64__)
asm(".globl _start\n"
    "_start:\n"
    "  mov %rsp, %rdi\n"
    "  and $-16, %rsp\n"
    "  call cni_all_launch\n");
#else
asm(".globl _start\n"
    "_start:\n"
    "  mov x0, sp\n"
    "  bl cni_all_launch\n");
#endif
