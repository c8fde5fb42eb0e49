// SPDX-License-Identifier: Apache-2.0
// The process floor of any statically linked glibc program: an empty main(). bench/run.py
// starts it the way it starts the plugins; what it costs over floor-nolibc is glibc's own
// start-up (its CPU feature and cache probing, many CPUID instructions, each a trap to the
// hypervisor in a VM), which every glibc program pays before main().
int main() { return 0; }
