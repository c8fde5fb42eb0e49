#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Builds the launcher (launcher.cpp) as a freestanding static program with the given compiler
command, which meson.build passes (the build's own C++ compiler) and the cli suite too (clang
for arm64, to test the arm64 launcher under qemu-user on an x86-64 machine). No build-wide
option (sanitizers, LTO, PIE) reaches it.
usage: build.py SOURCE OUTPUT COMPILER [COMPILER ARGS...]"""
import os
import subprocess
import sys

source, output, *compiler = sys.argv[1:]
flags = ["-std=c++20", "-Os", "-static", "-nostdlib", "-no-pie", "-fno-pie", "-ffreestanding", "-fno-builtin",
         "-fno-stack-protector", "-fno-exceptions", "-fno-rtti", "-fno-asynchronous-unwind-tables", "-Wall", "-Wextra",
         "-Werror", "-s", "-Wl,--build-id=none", "-Wl,-z,noseparate-code", "-Wl,-z,norelro", "-Wl,-z,noexecstack",
         "-I" + os.path.dirname(os.path.dirname(os.path.abspath(source)))]
sys.exit(subprocess.run([*compiler, *flags, source, "-o", output]).returncode)
