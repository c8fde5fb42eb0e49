// SPDX-License-Identifier: Apache-2.0
// host-local's state directory as anything may have left it: the input is split at "\n@@ " lines
// into files ("@@ NAME" starts a file; names are kept to the store's own: addresses, the index
// header, index buckets under .cni-all-index.d/, last_reserved_ip.N). The store is opened over
// them, its reservations listed and searched, and container "c"/eth0's released: after that no
// reservation of the current format is its, and every listed address is taken.
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/ipam/store.hpp"
#include "fuzz_check.hpp"

using namespace cni;

namespace {

// The process's scratch folder in memory, removed when libFuzzer exits (its path in a plain array, which
// no destructor takes away before the exit handler runs).
char scratch_path[] = "/dev/shm/cni-fuzz-store.XXXXXX";  // tmpfs: the store's fsyncs cost nothing

std::string scratch() {
    static const bool made = [] {
        if (!::mkdtemp(scratch_path)) std::abort();
        std::atexit([] { std::filesystem::remove_all(scratch_path); });
        return true;
    }();
    (void)made;
    return scratch_path;
}

// Only names the store itself uses, so a file never lands outside the scratch folder.
bool allowed(const std::string& name) {
    if (name.empty() || name.size() > 64 || name.find("..") != std::string::npos) return false;
    for (char c : name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == ':' || c == '_' || c == '-' || c == '/')) return false;
    return name.find('/') == std::string::npos || name.starts_with(std::string(ipam::Store::kBucketDirName) + "/");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    namespace fs = std::filesystem;
    const std::string net = scratch() + "/net";
    fs::remove_all(net);
    fs::create_directories(net + "/" + ipam::Store::kBucketDirName);
    auto input = text_of(data, size);
    std::size_t at = input.starts_with("@@ ") ? 0 : input.find("\n@@ ");
    while (at != std::string_view::npos) {
        std::size_t name_at = at + (input.substr(at, 1) == "\n" ? 4 : 3);
        std::size_t eol = input.find('\n', name_at);
        std::string name(input.substr(name_at, eol == std::string_view::npos ? std::string_view::npos : eol - name_at));
        std::size_t next = eol == std::string_view::npos ? std::string_view::npos : input.find("\n@@ ", eol);
        std::string_view content = eol == std::string_view::npos ? std::string_view() : input.substr(eol + 1, next == std::string_view::npos ? next : next - eol - 1);
        if (allowed(name)) std::ofstream(net + "/" + name, std::ios::binary) << content;
        at = next;
    }
    auto store = ipam::Store::open(scratch(), "net", [](std::string_view) {});
    if (!store) return 0;
    auto listed = store->reservations();
    for (auto& [ip, owner] : listed) property(store->taken(ip), "a listed reservation's address is not taken");
    (void)store->find_by_id("c", "eth0");
    (void)store->has_id("c", "eth0");
    if (store->release_by_id("c", "eth0")) {
        // As the reference's: files of the old format (the id alone) are released only when no
        // file has the current one, and found by id either way; none of the current is left.
        for (auto& [ip, owner] : store->reservations())
            property(!owner.matches("c", "eth0"), "a released container still owns an address");
    }
    return 0;
}
