#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Root tests of the dhcp IPAM's DHCPv6 (docs/dhcp.md: DHCPv6) against dnsmasq's DHCPv6 server
with router advertisements, in the lab of tests/lib/dhcplab.py: a lease (the address in the
container, dnsmasq's lease for our DUID-LL, DNS servers and search list in the result, the
default route from the RA via the router's link-local address, traffic to the server), RELEASE
on DEL, a daemon restart whose resumed lease is past T1 and so renewed at once (dnsmasq's
shortest lease is 2 minutes, T1 one minute: the record's time is moved back rather than waited
out), dual stack (one result with both addresses), 8 concurrent ADDs, a server that moves the
lease at RENEW (tests/lib/fake_dhcp6.py instead of dnsmasq), and a bad protocol."""
import concurrent.futures
import contextlib
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import BIN, addrs, check, eq, ip_json, link, netns, ns_path, run_all, sh, test  # noqa: E402
from dhcplab import SERVER_IP6, dhcp, lab, lease_files, wait_for  # noqa: E402

V6 = ["--dhcp-range=2001:db8:213::50,2001:db8:213::99,64,2m", "--enable-ra",
      "--dhcp-option=option6:dns-server,[2001:db8:213::53]", "--dhcp-option=option6:domain-search,pods.test"]


def conf6(lb, protocol="ipv6"):
    c = lb.conf(protocol=protocol)
    c["cniVersion"] = "1.1.0"
    return c


def duid_ll(mac):
    return "00:03:00:01:" + mac


def v6_of(result):
    return [ip["address"] for ip in result["ips"] if ":" in ip["address"]]


def default_route6(ctr):
    return [(r.get("gateway"), r.get("protocol")) for r in ip_json(ctr, "-6", "route") if r["dst"] == "default"]


def dnsmasq_log(lb):
    with open(f"{lb.work}/dnsmasq.log") as f:
        return f.read()


@test
def dhcp6_lease_ra_route_and_release():
    """dhcp6: ADD gets a DHCPv6 lease (a /128 for our DUID-LL, DNS from options 23 and 24), the RA gives the default route, DEL releases it"""
    with lab(dnsmasq_args=V6) as lb, netns("dhc") as ctr:
        r = lb.add(ctr, conf=conf6(lb)).ok().json()
        eq(len(r["ips"]), 1, r)
        ip = r["ips"][0]["address"]
        check(ip.startswith("2001:db8:213::") and ip.endswith("/128"), ip)
        # macvlan's result has the network config's dns, as the reference's; the IPAM's has the lease's
        ipam = dhcp().run("ADD", conf6(lb), host_ns=lb.host, netns=ns_path(ctr)).ok().json()
        eq((ipam["ips"][0]["address"], ipam.get("dns")), (ip, {"nameservers": ["2001:db8:213::53"], "search": ["pods.test"]}))
        check(ip in addrs(ctr, "eth0"), f"{ip} in {addrs(ctr, 'eth0')}")
        bare = ip.split("/")[0]
        mac = link(ctr, "eth0")["address"]
        eq(lb.lease(bare)[3], duid_ll(mac), "dnsmasq holds the lease for our DUID-LL")
        server_ll = [a["local"] for a in ip_json(lb.server, "-6", "addr", "show", "dev", "dhs0")[0]["addr_info"]
                     if a["scope"] == "link"][0]
        wait_for(lambda: default_route6(ctr) == [(server_ll, "ra")], 10,
                 lambda: f"a default route via the router's link-local address from its RA: {default_route6(ctr)}")
        sh("ip", "netns", "exec", ctr, "ping", "-6", "-c1", "-W2", SERVER_IP6)
        eq(len(lease_files(lb)), 1, "the lease is on record")
        lb.delete(ctr, conf=conf6(lb)).ok()
        wait_for(lambda: bare not in lb.leases(), 3, "DEL releases the lease at the server")
        check("DHCPRELEASE" in dnsmasq_log(lb), "dnsmasq saw the RELEASE")
        eq(lease_files(lb), [], "the record is removed")


@test
def dhcp6_restart_resumes_and_renews_at_t1():
    """dhcp6: a restarted daemon resumes the DHCPv6 lease from its record and, T1 being past, RENEWs it at once; dnsmasq moves the lease"""
    with lab(dnsmasq_args=V6) as lb, netns("dhc") as ctr:
        bare = v6_of(lb.add(ctr, conf=conf6(lb)).ok().json())[0].split("/")[0]
        lb.stop_daemon()
        check(bare in lb.leases(), "shutdown does not release")
        [name] = lease_files(lb)
        path = f"{lb.leasedir}/{name}"
        with open(path) as f:
            rec = json.load(f)
        eq(rec["family"], "ipv6")
        rec["boundAt"] -= 70  # dnsmasq's T1 is half its 2 minute lease
        with open(path, "w") as f:
            json.dump(rec, f)
        expiry = lb.lease(bare)[0]
        time.sleep(1)  # dnsmasq's expiry times are in whole seconds
        lb.start_daemon()
        wait_for(lambda: lb.leases()[bare][0] > expiry, 8, lambda: "the restarted daemon renews: " + lb.log())
        check("DHCPRENEW" in dnsmasq_log(lb), "dnsmasq saw a RENEW")
        check(f"resuming the lease of c1/dhnet/eth0 ({bare})" in lb.log(), lb.log())
        dhcp().run("CHECK", dict(conf6(lb), prevResult={"cniVersion": "1.1.0"}), host_ns=lb.host, netns=ns_path(ctr)).ok()
        lb.delete(ctr, conf=conf6(lb)).ok()
        wait_for(lambda: bare not in lb.leases(), 3, "the resumed lease is released on DEL")


@test
def dhcp6_dual_stack():
    """dhcp6: protocol "dual" gets a DHCPv4 and a DHCPv6 lease in one result; DEL releases both"""
    with lab(dnsmasq_args=V6) as lb, netns("dhc") as ctr:
        r = lb.add(ctr, conf=conf6(lb, "dual")).ok().json()
        got = [ip["address"] for ip in r["ips"]]
        eq(len(got), 2, got)
        check(got[0].startswith("10.213.0.") and got[1].startswith("2001:db8:213::"), got)
        eq(dhcp().run("ADD", conf6(lb, "dual"), host_ns=lb.host, netns=ns_path(ctr)).ok().json()["dns"]["nameservers"],
           ["2001:db8:213::53"], "the IPAM's result has the DHCPv6 DNS servers")
        for ip in got:
            check(ip in addrs(ctr, "eth0"), f"{ip} in {addrs(ctr, 'eth0')}")
            lb.lease(ip.split("/")[0])
        eq(len(lease_files(lb)), 2, "one record per lease")
        lb.delete(ctr, conf=conf6(lb, "dual")).ok()
        wait_for(lambda: not any(ip.split("/")[0] in lb.leases() for ip in got), 3, "DEL releases both leases")
        eq(lease_files(lb), [])


@test
def dhcp6_concurrent_adds():
    """dhcp6: 8 ADDs at once get 8 distinct DHCPv6 leases, each for its container's DUID; 8 DELs release them"""
    with lab(dnsmasq_args=V6) as lb, contextlib.ExitStack() as stack:
        ctrs = [stack.enter_context(netns("dhc")) for _ in range(8)]
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            results = list(pool.map(lambda i: lb.add(ctrs[i], cid=f"c{i}", conf=conf6(lb)), range(8)))
        ips = [v6_of(r.ok().json())[0] for r in results]
        eq(len(set(ips)), 8, f"distinct leases: {ips}")
        for i, ip in enumerate(ips):
            eq(lb.lease(ip.split("/")[0])[3], duid_ll(link(ctrs[i], "eth0")["address"]))
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            for r in pool.map(lambda i: lb.delete(ctrs[i], cid=f"c{i}", conf=conf6(lb)), range(8)):
                r.ok()
        wait_for(lambda: not any(ip.split("/")[0] in lb.leases() for ip in ips), 5, "every lease released: " + lb.log())
        eq(lease_files(lb), [])


FAKE_DHCP6 = os.path.join(os.path.dirname(__file__), "..", "lib", "fake_dhcp6.py")


@test
def dhcp6_renew_reply_moving_the_address():
    """dhcp6: a REPLY to RENEW that ends the pod's address (lifetime 0) and offers another is a refusal, logged with both addresses; the new SOLICIT asks for the old one, the move is logged, DEL releases the lease the daemon holds; a REPLY to SOLICIT without Rapid Commit and one to RENEW from another server are discarded"""
    old, new = "2001:db8:213::a1", "2001:db8:213::a2"
    with lab(dnsmasq=False) as lb, netns("dhc") as ctr:
        server = subprocess.Popen(["ip", "netns", "exec", lb.server, sys.executable, FAKE_DHCP6, "dhs0", old, new],
                                  stdout=subprocess.PIPE, text=True)
        heard = []
        try:
            eq(server.stdout.readline().strip(), "ready")
            threading.Thread(target=lambda: heard.extend(line.split() for line in server.stdout), daemon=True).start()
            eq(v6_of(lb.add(ctr, conf=conf6(lb)).ok().json()), [old + "/128"])
            wait_for(lambda: "re-created" in lb.log(), 10, lambda: f"the move is logged: {lb.log()} {heard}")
            log = lb.log()
            check(f"the DHCP server refused to renew the lease of c1/dhnet/eth0 ({old}): the REPLY lists {old} with "
                  f"preferred lifetime 0 and valid lifetime 0 and offers {new}; acquiring a new one" in log, log)
            check(f"the lease of c1/dhnet/eth0 moved from {old} to {new}; the container keeps the old address" in log, log)
            eq(heard[:3], [["1"], ["5", old], ["1", old]], "SOLICIT, RENEW of the old address, SOLICIT asking for it")
            check(old + "/128" in addrs(ctr, "eth0"), "the container keeps its address")
            lb.delete(ctr, conf=conf6(lb)).ok()
            wait_for(lambda: heard[-1:] == [["8", new]], 3, lambda: f"DEL releases the lease held: {heard}")
        finally:
            server.kill()
            server.wait()


@test
def dhcp6_bad_protocol():
    """dhcp6: a protocol other than ipv4, ipv6 or dual is a CNI error naming the key and the value"""
    with lab(start=False, dnsmasq=False) as lb, netns("dhc") as ctr:
        r = dhcp().run("ADD", conf6(lb, "ipv5"), host_ns=lb.host, netns=ns_path(ctr))
        eq(r.error()["code"], 7)
        check("ipam.protocol" in r.error()["msg"] and "ipv5" in r.error()["msg"], r.error())


if __name__ == "__main__":
    started = time.time()
    try:
        run_all(cleanup=[BIN])
    finally:
        print(f"# dhcp6 suite: {time.time() - started:.1f} s")
