#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The last test of a sanitizer build: every executable of that build writes each
AddressSanitizer, UndefinedBehaviorSanitizer or LeakSanitizer report to a file in the report
directory (src/sanitizer_options.cpp.in), so a plugin's report fails the run even where the
test that ran the plugin only looked at its stdout. One TAP line; a failure prints the reports."""
import os
import sys

report_dir = sys.argv[1]
reports = sorted(os.listdir(report_dir)) if os.path.isdir(report_dir) else []
if reports:
    print("not ok 1 - no sanitizer reports")
    for name in reports:
        with open(os.path.join(report_dir, name), errors="replace") as f:
            text = f.read()
        print(f"# {name}:")
        for line in text.splitlines()[:80]:
            print(f"#   {line}")
        print(f"{name}:\n{text}", file=sys.stderr)
else:
    print(f"ok 1 - no sanitizer reports ({report_dir} is empty)")
print("1..1")
sys.exit(1 if reports else 0)
