// SPDX-License-Identifier: Apache-2.0
// The per-applet launcher that `cni-all install` lays down under each applet's name (docs/install.md):
// a program of a few KiB without any C library that executes the `cni-all` in its own directory
// with the applet's name, written into its tag by the installer, as argv[0]. Other installers
// copy their plugins into the same folder (`cp -f /flannel /opt/cni/bin/flannel`): through a
// symlink that copy would overwrite cni-all itself and every applet would become the copied
// plugin; a launcher is a file of its own, so only that applet is replaced. It is written for
// x86-64 and arm64 (the only code that differs is the system-call instruction and the entry
// point); elsewhere `cni-all install` lays down symlinks. It finds its folder in
// /proc/self/exe, and takes only a whole absolute path from there, so it never executes a
// program relative to the working directory. When it cannot find its folder (no /proc) or
// cannot execute cni-all, it answers as a plugin would: a CNI error on stdout, exit status 1.
#include "launcher/tag.hpp"

namespace {

// readlinkat's buffer: a result that fills it may have been cut, and is refused. The kernel's
// answer is shorter on 4 KiB pages, not on arm64's 64 KiB ones; the cli suite builds a launcher
// with a short buffer to test the refusal.
#ifndef CNI_LAUNCHER_PATH_MAX
#define CNI_LAUNCHER_PATH_MAX 4096
#endif
#define TEXT_OF(x) #x
#define DIGITS_OF(x) TEXT_OF(x)
#define PATH_MAX_TEXT DIGITS_OF(CNI_LAUNCHER_PATH_MAX)
constexpr long kPathMax = CNI_LAUNCHER_PATH_MAX;
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

// `s` inside a JSON string: quotes, backslashes and control characters escaped (a folder's name
// may hold any of them).
void put_json(const char* s) {
    for (; *s; ++s) {
        const unsigned char b = static_cast<unsigned char>(*s);
        char out[7] = {*s, 0};
        if (b == '"' || b == '\\') {
            out[0] = '\\';
            out[1] = *s;
        } else if (b < 0x20) {
            const char escaped[] = {'\\', 'u', '0', '0', "0123456789abcdef"[b >> 4], "0123456789abcdef"[b & 15], 0};
            for (unsigned i = 0; i < sizeof escaped; ++i) out[i] = escaped[i];
        }
        put(out);
    }
}

// Linux's text for the errors readlinkat and execve give (the same numbers on x86-64 and
// arm64), lowercase as Go prints them; "errno N" for any other.
void put_errno(long err) {
    static const struct {
        long number;
        const char* text;
    } kTexts[] = {{1, "operation not permitted"}, {2, "no such file or directory"}, {5, "input/output error"},
                  {7, "argument list too long"}, {8, "exec format error"}, {12, "cannot allocate memory"},
                  {13, "permission denied"}, {20, "not a directory"}, {22, "invalid argument"}, {26, "text file busy"},
                  {36, "file name too long"}, {38, "function not implemented"}, {40, "too many levels of symbolic links"}};
    for (const auto& t : kTexts)
        if (t.number == err) return put(t.text);
    char digits[24];
    unsigned long at = sizeof digits - 1;
    digits[at] = 0;
    do digits[--at] = char('0' + err % 10);
    while ((err /= 10) > 0);
    put("errno ");
    put(digits + at);
}

// Answers as a plugin answers a failure: a CNI error on stdout, exit status 1. Code 999, the
// Go plugins' code for an error of no CNI kind (docs/install.md). The message is `what` and
// `subject`, then the system call's error if `err` is one.
[[noreturn]] void fail(const char* applet, const char* what, const char* subject, long err) {
    put("{\n    \"code\": 999,\n    \"msg\": \"cni-all launcher");
    if (applet[0]) put(" for "), put_json(applet);
    put(": ");
    put_json(what);
    put_json(subject);
    if (err) put(": "), put_errno(err);
    put("\"\n}\n");
    exit_group(1);
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
    if (!name[0]) fail(name, "no applet name in its tag (cni-all install writes it)", "", 0);
    // cni-all beside this file (its real path: a symlink to a launcher still finds it). Only a
    // whole absolute path will do: never one relative to the working directory.
    static char path[kPathMax + sizeof "cni-all"];
    long n = syscall4(kSysReadlinkat, kAtCwd, reinterpret_cast<long>("/proc/self/exe"), reinterpret_cast<long>(path),
                      kPathMax);
    if (n < 0) fail(name, "cannot find its own folder: readlink ", "/proc/self/exe", -n);
    if (n >= kPathMax) fail(name, "cannot find its own folder: its path is " PATH_MAX_TEXT " bytes or longer", "", 0);
    path[n] = 0;
    if (path[0] != '/') fail(name, "cannot find its own folder: /proc/self/exe is not an absolute path: ", path, 0);
    while (path[n - 1] != '/') --n;
    const char target[] = "cni-all";
    for (unsigned long i = 0; i < sizeof target; ++i) path[n + long(i)] = target[i];
    static char* fallback[2];
    if (argc == 0) argv = fallback;  // no argv[0] to replace: one of our own
    argv[0] = name;
    long err = syscall4(kSysExecve, reinterpret_cast<long>(path), reinterpret_cast<long>(argv), reinterpret_cast<long>(envp));
    fail(name, "cannot execute ", path, -err);
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
