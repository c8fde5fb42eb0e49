# SPDX-License-Identifier: Apache-2.0
"""Runs a suite (the arguments: a Python script and its own arguments) in its own mount namespace
with empty private /var/lib/cni (private_var_lib_cni.sh), /run/cni and /run/netns, so root
suites run side by side with no state in common, and none touches the machine's. A plugin that
falls back to a default path (host-local's dataDir, the dhcp daemon's socket, tuning's saved
state, libcni's cache, the firewall's records) writes into this run's private tmpfs; a namespace
the suite holds lives only in this mount namespace, so a run killed before its cleanup leaves no
file under the machine's /run/netns. A mount point the run had to make is removed by the last
run that holds it (mount_points)."""
import contextlib
import fcntl
import os
import shlex
import subprocess
import sys
import tempfile

import cnitest  # noqa: F401 - this process's temporary files go to its scratch directory

RUN_DIRS = ("/run/cni", "/run/netns")


def _hold(d):
    """(fd, made): `d`, made when missing, open and share-locked, so a run that made it removes
    it only once no other run holds it. A directory removed between the check and the lock (the
    run that made it ended) is made again."""
    while True:
        made = not os.path.isdir(d)
        os.makedirs(d, exist_ok=True)
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
        fcntl.flock(fd, fcntl.LOCK_SH)
        with contextlib.suppress(FileNotFoundError):
            if os.stat(d).st_ino == os.fstat(fd).st_ino:
                return fd, made
        os.close(fd)


@contextlib.contextmanager
def mount_points(*dirs):
    """The mount points of `dirs`, for the child to mount a private tmpfs on: a node that had
    none before has none after the last run that uses them. A run that made one while others
    still hold it leaves it (scripts/test.sh makes them before suites start side by side)."""
    held = [_hold(d) for d in dirs]
    try:
        yield
    finally:
        for d, (fd, made) in reversed(list(zip(dirs, held))):
            try:
                if made:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    os.rmdir(d)
            except OSError:  # held by another run, or not empty: something outside the tmpfs wrote there
                pass
            finally:
                os.close(fd)


def main(argv):
    var_lib = os.path.join(os.path.dirname(os.path.abspath(__file__)), "private_var_lib_cni.sh")
    script = (f"{shlex.quote(var_lib)} {shlex.quote(tempfile.mkdtemp(prefix='var-lib.'))} || exit 1; "
              f"for d in {' '.join(RUN_DIRS)}; do mount -t tmpfs tmpfs $d || exit 1; done; exec \"$@\"")
    with mount_points(*RUN_DIRS):
        return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
                               sys.executable, *argv]).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
