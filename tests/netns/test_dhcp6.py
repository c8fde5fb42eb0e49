#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Root tests of the dhcp IPAM's DHCPv6 (docs/dhcp.md: DHCPv6) against dnsmasq's DHCPv6 server
with router advertisements, in the lab of tests/lib/dhcplab.py: a lease (the address in the
container, dnsmasq's lease for our DUID-LL, DNS servers and search list in the result, the
default route from the RA via the router's link-local address, traffic to the server), RELEASE
on DEL, a daemon restart whose resumed lease is past T1 and so renewed at once (dnsmasq's
shortest lease is 2 minutes, T1 one minute: the record's time is moved back rather than waited
out) and one whose record is dated ahead of the clock, dual stack (one result with both
addresses; a re-ADD asking for another protocol refused), 8 concurrent ADDs, and a bad protocol.
Against tests/lib/fake_dhcp6.py instead of dnsmasq: a server that moves the lease at RENEW (CHECK
then fails, across a restart too), one that gives DNS only to an Information-request, one that
ADVERTISEs (the REQUEST's answer pinned to its server), one whose REPLY to RENEW lacks our IA_NA
(a process of the pod listening on ff02::1:2 hears none of it), a restart while a process of
the pod holds port 546, one that ends the lease at RENEW and is then full (CHECK fails), a full
server answering before the real one, and a re-ADD in another network namespace."""
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


def ipam(lb, command, protocol="ipv6", **kw):
    """The dhcp IPAM itself (the daemon's result, not macvlan's)."""
    return dhcp().run(command, dict(conf6(lb, protocol), **kw), host_ns=lb.host, netns=ns_path(lb.ctr))


def record6(lb):
    """The one DHCPv6 lease record: its path and its JSON."""
    found = []
    for name in lease_files(lb):
        with open(f"{lb.leasedir}/{name}") as f:
            rec = json.load(f)
        if rec.get("family") == "ipv6":
            found.append((f"{lb.leasedir}/{name}", rec))
    eq(len(found), 1, "one DHCPv6 record")
    return found[0]


def rewrite_record6(lb, change):
    path, rec = record6(lb)
    change(rec)
    with open(path, "w") as f:
        json.dump(rec, f)


@test
def dhcp6_lease_ra_route_and_release():
    """dhcp6: ADD gets a DHCPv6 lease (a /128 for our DUID-LL, DNS from options 23 and 24), the RA gives the default route, DEL releases it"""
    with lab(dnsmasq_args=V6) as lb, netns("dhc") as ctr:
        lb.ctr = ctr
        r = lb.add(ctr, conf=conf6(lb)).ok().json()
        eq(len(r["ips"]), 1, r)
        ip = r["ips"][0]["address"]
        check(ip.startswith("2001:db8:213::") and ip.endswith("/128"), ip)
        # macvlan's result has the network config's dns, as the reference's; the IPAM's has the lease's
        own = ipam(lb, "ADD").ok().json()
        eq((own["ips"][0]["address"], own.get("dns")), (ip, {"nameservers": ["2001:db8:213::53"], "search": ["pods.test"]}))
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


def restart_with(lb, change):
    """Stops the daemon, changes the DHCPv6 record, starts the daemon."""
    lb.stop_daemon()
    rewrite_record6(lb, change)
    lb.start_daemon()


@test
def dhcp6_restart_resumes_and_renews_at_t1():
    """dhcp6: a restarted daemon resumes the DHCPv6 lease from its record and, T1 being past, RENEWs it at once; dnsmasq moves the lease; a record dated two days ahead of the clock is renewed at once too"""
    with lab(dnsmasq_args=V6) as lb, netns("dhc") as ctr:
        lb.ctr = ctr
        bare = v6_of(lb.add(ctr, conf=conf6(lb)).ok().json())[0].split("/")[0]
        eq(record6(lb)[1]["family"], "ipv6")
        for shift, said in [(-70, f"resuming the lease of c1/dhnet/eth0 ({bare})"),  # dnsmasq's T1 is half its 2 minute lease
                            (2 * 86400, "the lease of c1/dhnet/eth0 is dated")]:
            expiry = lb.lease(bare)[0]
            time.sleep(1)  # dnsmasq's expiry times are in whole seconds
            restart_with(lb, lambda rec: rec.update(boundAt=rec["boundAt"] + shift))
            check(bare in lb.leases(), "shutdown does not release")
            wait_for(lambda: lb.leases()[bare][0] > expiry, 8, lambda: "the restarted daemon renews: " + lb.log())
            check(said in lb.log(), lb.log())
        check("DHCPRENEW" in dnsmasq_log(lb), "dnsmasq saw a RENEW")
        wait_for(lambda: record6(lb)[1]["boundAt"] <= time.time(), 3, "the renewal's time is recorded")
        ipam(lb, "CHECK", prevResult={"cniVersion": "1.1.0"}).ok()
        lb.delete(ctr, conf=conf6(lb)).ok()
        wait_for(lambda: bare not in lb.leases(), 3, "the resumed lease is released on DEL")


@test
def dhcp6_dual_stack():
    """dhcp6: protocol "dual" gets a DHCPv4 and a DHCPv6 lease in one result; a re-ADD or a CHECK with protocol "ipv4" is refused (code 7); DEL releases both"""
    with lab(dnsmasq_args=V6) as lb, netns("dhc") as ctr:
        r = lb.add(ctr, conf=conf6(lb, "dual")).ok().json()
        got = [ip["address"] for ip in r["ips"]]
        eq(len(got), 2, got)
        check(got[0].startswith("10.213.0.") and got[1].startswith("2001:db8:213::"), got)
        lb.ctr = ctr
        eq(ipam(lb, "ADD", "dual").ok().json()["dns"]["nameservers"], ["2001:db8:213::53"],
           "the IPAM's result has the DHCPv6 DNS servers")
        differs = (7, 'ipam.protocol "ipv4" differs from "dual" of the leases held for c1/dhnet/eth0; DEL the attachment first')
        other = ipam(lb, "ADD", "ipv4").error()
        eq((other["code"], other["msg"]), differs)
        other = ipam(lb, "CHECK", "ipv4", prevResult={"cniVersion": "1.1.0"}).error()
        eq((other["code"], other["msg"]), differs, "CHECK compares the protocol as ADD does")
        ipam(lb, "CHECK", "dual", prevResult={"cniVersion": "1.1.0"}).ok()
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
OLD, NEW = "2001:db8:213::a1", "2001:db8:213::a2"


@contextlib.contextmanager
def fake_server(ns, ifname, mode):
    """tests/lib/fake_dhcp6.py in namespace `ns`; yields the list of what it hears, [type, addresses...]."""
    proc = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, FAKE_DHCP6, ifname, OLD, NEW, mode],
                            stdout=subprocess.PIPE, text=True)
    heard = []
    try:
        eq(proc.stdout.readline().strip(), "ready")
        threading.Thread(target=lambda: heard.extend(line.split() for line in proc.stdout), daemon=True).start()
        yield heard
    finally:
        proc.kill()
        proc.wait()


def first_heard(heard, n):
    """The first n messages the fake server heard, waited for: its output is read by a thread, which
    may lag behind the call that caused them."""
    wait_for(lambda: len(heard) >= n, 5, lambda: f"{n} messages heard: {heard}")
    return heard[:n]


@contextlib.contextmanager
def fake_lab(mode):
    with lab(dnsmasq=False) as lb, netns("dhc") as ctr, fake_server(lb.server, "dhs0", mode) as heard:
        lb.ctr = ctr
        yield lb, ctr, heard


@test
def dhcp6_renew_reply_moving_the_address():
    """dhcp6: a REPLY to RENEW that ends the pod's address (lifetime 0) and offers another is a refusal, logged with both addresses; 2 s later the new SOLICIT asks for the old one, the move is logged, CHECK fails naming both (after a restart too), the new lease is renewed at its T1, DEL releases it; a REPLY to SOLICIT without Rapid Commit and one to RENEW from another server are discarded"""
    with fake_lab("move") as (lb, ctr, heard):
        eq(v6_of(lb.add(ctr, conf=conf6(lb)).ok().json()), [OLD + "/128"])
        wait_for(lambda: "re-created" in lb.log(), 10, lambda: f"the move is logged: {lb.log()} {heard}")
        log = lb.log()
        check(f"the DHCP server refused to renew the lease of c1/dhnet/eth0 ({OLD}): the REPLY lists {OLD} with "
              f"preferred lifetime 0 and valid lifetime 0 and offers {NEW}; acquiring a new one in 2 s" in log, log)
        check(f"the lease of c1/dhnet/eth0 moved from {OLD} to {NEW}; the container keeps the old address" in log, log)
        eq(first_heard(heard, 3), [["1"], ["5", OLD], ["1", OLD]], "SOLICIT, RENEW of the old address, SOLICIT asking for it")
        check(OLD + "/128" in addrs(ctr, "eth0"), "the container keeps its address")
        moved = f"the lease of c1/dhnet/eth0 moved from {OLD} to {NEW}: the container's address is no longer leased; " \
                "re-create the container"
        eq(ipam(lb, "CHECK", prevResult={"cniVersion": "1.1.0"}).error()["msg"], moved)
        bound = record6(lb)[1]["boundAt"]
        wait_for(lambda: ["5", NEW] in heard and record6(lb)[1]["boundAt"] > bound, 6,
                 lambda: f"the new lease is renewed at its T1: {heard}")
        eq(lb.log().count("refused to renew"), 1, "the renewal of the new lease is no refusal")
        lb.stop_daemon()
        lb.start_daemon()
        eq(ipam(lb, "CHECK", prevResult={"cniVersion": "1.1.0"}).error()["msg"], moved, "CHECK fails after a restart")
        lb.delete(ctr, conf=conf6(lb)).ok()
        wait_for(lambda: heard[-1:] == [["8", NEW]], 3, lambda: f"DEL releases the lease held: {heard}")


@test
def dhcp6_information_request_for_dns():
    """dhcp6: a lease whose REPLY has no DNS options is followed by one INFORMATION-REQUEST, whose REPLY from the lease's server (not another's, which came first) has the DNS servers and search list of the result; they stay there across renewals and a restart"""
    with fake_lab("info") as (lb, ctr, heard):
        eq(v6_of(lb.add(ctr, conf=conf6(lb)).ok().json()), [OLD + "/128"])
        dns = {"nameservers": ["2001:db8:213::53"], "search": ["pods.test"]}
        eq(ipam(lb, "ADD").ok().json().get("dns"), dns, "the lease's server's DNS options, not the other's")
        eq(first_heard(heard, 2), [["1"], ["11"]], "SOLICIT, then INFORMATION-REQUEST")
        check("information" in record6(lb)[1], "the Information-request's REPLY is on record")
        renewals = heard.count(["5", OLD])
        lb.stop_daemon()
        lb.start_daemon()
        wait_for(lambda: heard.count(["5", OLD]) > renewals, 5, lambda: f"the resumed lease is renewed: {heard}")
        eq(ipam(lb, "ADD").ok().json().get("dns"), dns, "after a restart and a renewal")
        eq(heard.count(["11"]), 1, "one INFORMATION-REQUEST")


@test
def dhcp6_advertise_then_request_pinned_to_its_server():
    """dhcp6: a server without Rapid Commit ADVERTISEs; the REQUEST for its address is answered by a decoy REPLY from another server, which is discarded, then by its own"""
    with fake_lab("advertise") as (lb, ctr, heard):
        eq(v6_of(lb.add(ctr, conf=conf6(lb)).ok().json()), [OLD + "/128"])
        eq(first_heard(heard, 2), [["1"], ["3", OLD]], "SOLICIT, REQUEST of the advertised address")


@test
def dhcp6_renew_reply_without_our_ia_keeps_the_lease():
    """dhcp6: a REPLY to RENEW without our IA_NA keeps the lease: the next RENEW asks for the same address, no SOLICIT; a process of the pod listening on ff02::1:2 hears none of the daemon's multicast"""
    with fake_lab("no-ia") as (lb, ctr, heard):
        eq(v6_of(lb.add(ctr, conf=conf6(lb)).ok().json()), [OLD + "/128"])
        with fake_server(ctr, "eth0", "listen") as pod_heard:
            seen = len(heard)
            wait_for(lambda: heard.count(["5", OLD]) >= 2 and len(heard) > seen, 8,
                     lambda: f"two RENEWs, one since the pod's listener started: {heard}")
            eq(pod_heard, [], "the pod's own listener hears nothing (IPV6_MULTICAST_LOOP off)")
        eq(first_heard(heard, 3), [["1"], ["5", OLD], ["5", OLD]], "SOLICIT, then RENEWs of the same address")
        check("the DHCPv6 server's REPLY holds no IA_NA for it; keeping it" in lb.log(), lb.log())


@contextlib.contextmanager
def port_546_held(ctr):
    """A process of the pod holding [::]:546 while the daemon is down, until the block ends."""
    holder = subprocess.Popen(["ip", "netns", "exec", ctr, sys.executable, "-c",
                               "import socket, sys; s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); "
                               "s.bind(('::', 546)); print('bound', flush=True); sys.stdin.read()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        eq(holder.stdout.readline().strip(), "bound")
        yield
    finally:
        holder.kill()
        holder.wait()


@test
def dhcp6_restart_with_port_546_taken_in_the_pod():
    """dhcp6: a restarted daemon whose bind to [link-local]:546 fails (a process of the pod holds [::]:546) keeps the lease record, logs it, and binds on its renewal schedule once the port is free"""
    with fake_lab("info") as (lb, ctr, heard):
        lb.add(ctr, conf=conf6(lb)).ok()
        lb.stop_daemon()
        with port_546_held(ctr):
            # Expiry in 6 s, past T2: the start is tried again in 3 s (half the time left).
            rewrite_record6(lb, lambda rec: rec.update(boundAt=int(time.time()) - 54))
            lb.start_daemon()
            wait_for(lambda: "still cannot start" in lb.log(), 5, lambda: "the bind is refused: " + lb.log())
            check("keeping the lease of c1/dhnet/eth0, whose client cannot start: bind [fe80::" in lb.log(), lb.log())
            record6(lb)
        wait_for(lambda: ["6", OLD] in heard, 8, lambda: f"the lease is rebound once the port is free: {heard} {lb.log()}")
        wait_for(lambda: record6(lb)[1]["boundAt"] > time.time() - 5, 3, "the rebound lease is recorded")
        lb.delete(ctr, conf=conf6(lb)).ok()


@test
def dhcp6_refused_renewal_fails_check():
    """dhcp6: a RENEW answered NoBinding fails CHECK naming the server's words, and still after the new SOLICITs met a full server (NoAddrsAvail, named in the log); a resumed lease past its expiry fails CHECK"""
    with fake_lab("refuse") as (lb, ctr, heard):
        eq(v6_of(lb.add(ctr, conf=conf6(lb)).ok().json()), [OLD + "/128"])
        wait_for(lambda: "refused to renew" in lb.log(), 6, lambda: f"the RENEW is refused: {lb.log()} {heard}")
        ended = f"the DHCP server ended the lease of c1/dhnet/eth0 ({OLD}): the REPLY's IA_NA has status 3 (\"gone\"); " \
                "acquiring a new one"
        eq(ipam(lb, "CHECK", prevResult={"cniVersion": "1.1.0"}).error()["msg"], ended)
        wait_for(lambda: "re-acquiring the lease of c1/dhnet/eth0: " in lb.log(), 12, lambda: "the acquisition fails: " + lb.log())
        check('the DHCPv6 server advertised no address: status 2 ("full")' in lb.log(), lb.log())
        eq(ipam(lb, "CHECK", prevResult={"cniVersion": "1.1.0"}).error()["msg"], ended, "still ended after the failed acquisition")
        lb.stop_daemon()
        rewrite_record6(lb, lambda rec: rec.update(boundAt=int(time.time()) - 100))  # 60 s lease: expired 40 s ago
        lb.start_daemon()
        expired = ipam(lb, "CHECK", prevResult={"cniVersion": "1.1.0"}).error()["msg"]
        check(expired.startswith(f"the lease of c1/dhnet/eth0 ({OLD}) expired 4") and expired.endswith(" s ago"), expired)
        lb.delete(ctr, conf=conf6(lb)).ok()


@test
def dhcp6_full_server_answering_first_is_passed_over():
    """dhcp6: an ADVERTISE granting nothing (NoAddrsAvail, from a full server answering first) does not end the attempt: the real server's REPLY, which follows, leases the address at the first SOLICIT"""
    with fake_lab("full") as (lb, ctr, heard):
        eq(v6_of(lb.add(ctr, conf=conf6(lb)).ok().json()), [OLD + "/128"])
        eq(first_heard(heard, 1), [["1"]])
        check("no lease yet" not in lb.log(), lb.log())


@test
def dhcp6_readd_in_another_netns_releases_the_old_lease():
    """dhcp6: an ADD of an attachment the daemon holds in another network namespace RELEASEs the old lease and removes its record before the new one SOLICITs"""
    with fake_lab("advertise") as (lb, ctr, heard), netns("dhc") as ctr2:
        lb.add(ctr, conf=conf6(lb)).ok()
        eq(v6_of(lb.add(ctr2, conf=conf6(lb)).ok().json()), [OLD + "/128"])
        wait_for(lambda: ["8", OLD] in heard and heard.count(["1"]) == 2, 5, lambda: f"a RELEASE and two SOLICITs: {heard}")
        solicits = [i for i, m in enumerate(heard) if m == ["1"]]
        check(solicits[0] < heard.index(["8", OLD]) < solicits[1], f"the RELEASE comes before the new SOLICIT: {heard}")
        check(record6(lb)[1]["netns"].endswith(ctr2), "the record is the new namespace's")
        lb.delete(ctr2, conf=conf6(lb)).ok()


@test
def dhcp6_expired_lease_whose_client_never_started():
    """dhcp6: a resumed lease past its expiry whose client cannot start (port 546 held) fails CHECK naming why; once the port is free, DEL starts the client to send the RELEASE"""
    with fake_lab("advertise") as (lb, ctr, heard):
        lb.add(ctr, conf=conf6(lb)).ok()
        lb.stop_daemon()
        with port_546_held(ctr):
            rewrite_record6(lb, lambda rec: rec.update(boundAt=int(time.time()) - 100))  # expired: the next try in 60 s
            lb.start_daemon()
            wait_for(lambda: "still cannot start" in lb.log(), 5, lambda: "the bind is refused: " + lb.log())
            err = ipam(lb, "CHECK", prevResult={"cniVersion": "1.1.0"}).error()["msg"]
            check(err.startswith(f"the lease of c1/dhnet/eth0 ({OLD}) expired 4") and
                  "s ago; not renewed: the client of c1/dhnet/eth0 still cannot start: bind [fe80::" in err, err)
        lb.delete(ctr, conf=conf6(lb)).ok()
        wait_for(lambda: ["8", OLD] in heard, 3, lambda: f"DEL releases the lease: {heard} {lb.log()}")
        check("released the lease of c1/dhnet/eth0" in lb.log(), lb.log())


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
