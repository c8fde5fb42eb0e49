# SPDX-License-Identifier: Apache-2.0
"""What the two seed capture scripts share: run shell commands in a throwaway network namespace,
then call `seeds()` inside it (a forked child joins it) and write each seed it yields into
corpus/<target>/ under the seed's SHA-1; the namespace is removed again."""
import ctypes
import hashlib
import os
import subprocess
import uuid

libc = ctypes.CDLL(None, use_errno=True)


def capture(commands, target, seeds):
    name = "cnit-seeds-" + uuid.uuid4().hex[:6]
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        for cmd in commands:
            subprocess.run(["ip", "netns", "exec", name, "sh", "-c", cmd], check=True)
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                fd = os.open(f"/run/netns/{name}", os.O_RDONLY)
                if libc.setns(fd, 0x40000000) != 0:  # CLONE_NEWNET
                    raise OSError(ctypes.get_errno(), "setns")
                folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", target)
                os.makedirs(folder, exist_ok=True)
                for seed in seeds():
                    with open(os.path.join(folder, hashlib.sha1(seed).hexdigest()), "wb") as f:
                        f.write(seed)
                status = 0
            finally:
                os._exit(status)
        _, status = os.waitpid(pid, 0)
        if status != 0:
            raise SystemExit("capturing the rules failed")
    finally:
        subprocess.run(["ip", "netns", "del", name])
