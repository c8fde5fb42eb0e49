#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Counts individual tests in meson's testlog.json files (every suite speaks TAP: one line per
test) and prints "N passed, N failed" for all of them together; a non-TAP test counts as one."""
import json
import re
import sys

passed = failed = 0
for path in sys.argv[1:]:
    with open(path) as log:
        for line in log:
            t = json.loads(line)
            if t.get("protocol") == "tap" or "1.." in (t.get("stdout") or ""):
                for out in (t.get("stdout") or "").splitlines():
                    if re.match(r"^ok \d+", out):
                        passed += 1
                    elif re.match(r"^not ok \d+", out):
                        failed += 1
            elif t.get("result") == "OK":
                passed += 1
            else:
                failed += 1
print(f"{passed} passed, {failed} failed")
