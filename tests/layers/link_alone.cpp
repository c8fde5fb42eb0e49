// SPDX-License-Identifier: Apache-2.0
// The program each layer's library is linked into alone, whole, with only the libraries of the
// layers docs/design.md's table lets it include (tests/meson.build): a call the table forbids is
// an undefined reference, and the build fails. It runs nothing.
int main() { return 0; }
