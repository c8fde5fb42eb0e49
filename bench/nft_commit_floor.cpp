// SPDX-License-Identifier: Apache-2.0
// What the kernel charges any writer for one nf_tables commit into a table as the node has it:
// appends one ACCEPT rule to CHAIN of the ip table TABLE in the current namespace, in a
// transaction of its own, ITERATIONS times (deleting it again after each, untimed), and prints
// the median time of those commits in microseconds. An ACCEPT is a verdict, so like any rule
// with a verdict or a jump it makes the kernel validate the table at commit, and the chain's
// rules are copied into its new blob: the commit's cost follows what the table already holds
// whoever sends it. bench/run.py runs it in the node-scaling namespaces, next to the plugins.
#include "core/fw/nftables.hpp"

#include <linux/netfilter.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace nft = cni::fw::nft;

namespace {

// One timed commit of the rule and one untimed commit that deletes it; the time, or -1.
double commit_once(const std::string& table, const std::string& chain) {
    auto generation = nft::generation();
    if (!generation) return -1;
    nft::Batch add(*generation);
    add.echo_added_rules();
    add.add_rule(nft::Family::ip, table, chain, {nft::verdict(NF_ACCEPT)}, "");
    auto t0 = std::chrono::steady_clock::now();
    auto added = add.commit("nft-commit-floor: adding");
    auto t1 = std::chrono::steady_clock::now();
    if (!added || add.added().size() != 1) {
        if (!added) std::fprintf(stderr, "%s\n", added.error().msg.c_str());
        return -1;
    }
    generation = nft::generation();
    if (!generation) return -1;
    nft::Batch del(*generation);
    del.delete_rule(nft::Family::ip, table, chain, add.added()[0].handle);
    if (!del.commit("nft-commit-floor: deleting")) return -1;
    return std::chrono::duration<double, std::micro>(t1 - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fputs("usage: nft-commit-floor TABLE CHAIN ITERATIONS\n", stderr);
        return 2;
    }
    int iterations = std::atoi(argv[3]);
    if (iterations < 1) return 2;
    std::vector<double> times;
    for (int i = 0; i < iterations; ++i) {
        double t = commit_once(argv[1], argv[2]);
        if (t < 0) return 1;
        times.push_back(t);
    }
    std::ranges::sort(times);
    std::size_t n = times.size();
    std::printf("%.1f\n", n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2);
    return 0;
}
