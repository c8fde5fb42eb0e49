#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""static: addresses from the config and CNI_ARGS, unknown CNI_ARGS keys refused. Each test builds its own
"host" and "container" network namespaces, runs the applet through its installed launcher inside
the host one, and asserts on kernel and disk state."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import BIN, Plugin, eq, netns, ns_path, run_all, test  # noqa: E402


def ours(applet):
    return Plugin(os.path.join(BIN, applet))


@test
def static_through_the_dispatcher():
    """static: ADD with CNI_ARGS through the dispatcher; unknown CNI_ARGS keys refused"""
    with netns("host") as host, netns("ctr") as ctr:
        conf = {"cniVersion": "0.4.0", "name": "st", "type": "bridge",
                "ipam": {"type": "static", "addresses": [{"address": "10.66.0.2/24", "gateway": "10.66.0.1"}]}}
        res = ours("static").run("ADD", conf, host_ns=host, netns=ns_path(ctr),
                                 args="IgnoreUnknown=1;K8S_POD_NAME=p;IP=fd66::2/64").ok().json()
        eq([ip["address"] for ip in res["ips"]], ["10.66.0.2/24", "fd66::2/64"])
        eq(res["ips"][1]["version"], "6")
        err = ours("static").run("ADD", conf, host_ns=host, netns=ns_path(ctr), args="K8S_POD_NAME=p").error()
        eq(err, {"code": 999, "msg": "ARGS: unknown args [\"K8S_POD_NAME=p\"]"})


if __name__ == "__main__":
    run_all(cleanup=[BIN])
