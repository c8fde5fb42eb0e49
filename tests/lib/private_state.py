# SPDX-License-Identifier: Apache-2.0
"""Runs a suite (the arguments: a Python script and its own arguments) in its own mount namespace
with empty private /var/lib/cni (private_var_lib_cni.sh), /run/cni and /run/netns, so root
suites run side by side with no state in common, and none touches the machine's. A plugin that
falls back to a default path (host-local's dataDir, the dhcp daemon's socket, tuning's saved
state, libcni's cache, the firewall's records) writes into this run's private tmpfs; a namespace
the suite holds lives only in this mount namespace, so a run killed before its cleanup leaves no
file under the machine's /run/netns. A mount point the run had to make is removed afterwards
(scripts/test.sh makes them once before suites start side by side)."""
import os
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cnitest import mount_points  # noqa: E402

RUN_DIRS = ("/run/cni", "/run/netns")


def main(argv):
    var_lib = os.path.join(os.path.dirname(os.path.abspath(__file__)), "private_var_lib_cni.sh")
    script = (f"{shlex.quote(var_lib)} {shlex.quote(tempfile.mkdtemp(prefix='var-lib.'))} || exit 1; "
              f"for d in {' '.join(RUN_DIRS)}; do mount -t tmpfs tmpfs $d || exit 1; done; exec \"$@\"")
    with mount_points(*RUN_DIRS):
        return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
                               sys.executable, *argv]).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
