#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Debian package (CNI_ALL_DEB, built by packaging/build-deb.sh): lintian reports no errors,
it installs the binary and one launcher per applet into /usr/lib/cni-all, cni-all on PATH, a
README.Debian, and the dhcp daemon's units (not enabled, declaring their clash with the
reference's socket unit), a plugin answers VERSION through its launcher, and a purge removes it
all."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import artifact, check, eq, is_launcher_of, run_all, sh, test  # noqa: E402

DEB = artifact("CNI_ALL_DEB")
DIR = "/usr/lib/cni-all"


@test
def deb_is_lintian_clean_of_errors():
    """deb: lintian finds no errors (warnings are listed in the log)"""
    check(DEB and os.path.exists(DEB), f"CNI_ALL_DEB must name the package, got {DEB!r}")
    # lintian leaves a temporary file behind (mldbm-elf-*): keep it in this test's scratch dir.
    r = sh("lintian", "--no-tag-display-limit", DEB, check_rc=False, env=dict(os.environ, TMPDIR=tempfile.gettempdir()))
    for line in r.stdout.splitlines():
        print(f"# {line}")
    errors = [line for line in r.stdout.splitlines() if line.startswith("E:")]
    eq(errors, [], "lintian errors")


@test
def deb_installs_runs_and_purges():
    """deb: dpkg -i lays down cni-all, the applet launchers and the units; VERSION through a launcher; purge removes everything"""
    check(DEB and os.path.exists(DEB), "CNI_ALL_DEB must name the package")
    status = sh("dpkg-query", "-W", "-f=${Status}", "cni-all", check_rc=False).stdout
    check("installed" not in status.replace("not-installed", ""), f"cni-all is not installed before the test: {status}")
    sh("dpkg", "-i", DEB)
    try:
        applets = [line.split()[0] for line in sh(f"{DIR}/cni-all", "--list").stdout.splitlines()]
        check("bridge" in applets and "dhcp" in applets, applets)
        eq(sorted(os.listdir(DIR)), sorted(applets + ["cni-all"]))
        for a in applets:
            check(is_launcher_of(f"{DIR}/{a}", a), f"{a} is a launcher")
        r = subprocess.run([f"{DIR}/loopback"], input='{"cniVersion":"1.0.0"}', capture_output=True, text=True,
                           env={"CNI_COMMAND": "VERSION"})
        eq(r.returncode, 0, r.stderr)
        check("1.1.0" in json.loads(r.stdout)["supportedVersions"], r.stdout)
        for unit in ("cni-all-dhcp.socket", "cni-all-dhcp.service"):
            check(os.path.exists(f"/lib/systemd/system/{unit}"), unit)
        check(f"ExecStart={DIR}/dhcp daemon" in open("/lib/systemd/system/cni-all-dhcp.service").read())
        # the reference's socket unit listens on the same path: ours declares the clash
        check("Conflicts=cni-dhcp.socket cni-dhcp.service" in open("/lib/systemd/system/cni-all-dhcp.socket").read())
        check("Conflicts=cni-dhcp.service" in open("/lib/systemd/system/cni-all-dhcp.service").read())
        files = sh("dpkg", "-L", "cni-all").stdout
        check("/usr/share/doc/cni-all/copyright" in files, files)
        check("/usr/share/doc/cni-all/README.Debian" in files, files)
        # cni-all on PATH, the multi-call binary
        eq(os.path.realpath("/usr/bin/cni-all"), os.path.realpath(f"{DIR}/cni-all"))
        check("bridge" in sh("/usr/bin/cni-all", "--list").stdout)
    finally:
        sh("dpkg", "--purge", "cni-all")
    check(not os.path.exists(DIR), "the plugin directory is gone")
    check(not os.path.exists("/lib/systemd/system/cni-all-dhcp.service"), "the units are gone")
    check(not os.path.lexists("/usr/bin/cni-all"), "the PATH link is gone")


if __name__ == "__main__":
    run_all()
