// SPDX-License-Identifier: Apache-2.0
// Installing cni-all and a launcher per applet into a plugin directory (see install.hpp).
#include "install.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <vector>

#include "core/os/errno_error.hpp"
#include "core/os/fs.hpp"
#include "core/strings.hpp"
#include "in_process.hpp"
#include "launcher/image.hpp"
#include "launcher/tag.hpp"
#include "registry.hpp"

namespace cni {
namespace {

constexpr const char* kBinaryName = "cni-all";

// The launcher program with `name` in its tag; nothing where this build has no launcher.
std::optional<std::string> launcher_for(std::string_view name) {
    if (launcher::kImageSize == 0 || name.size() >= launcher::kNameSize) return std::nullopt;
    std::string image(reinterpret_cast<const char*>(launcher::kImage), launcher::kImageSize);
    auto at = image.find(launcher::kTagText);
    if (at == std::string::npos) return std::nullopt;
    std::copy(name.begin(), name.end(), image.begin() + std::ptrdiff_t(at + launcher::kTagTextSize));
    return image;
}

// What is at `name` in the folder now.
enum class Found { nothing, symlink, launcher, other };

Found look(const os::Dir& dir, const std::string& name, std::string* launcher_text) {
    struct stat st{};
    if (::fstatat(dir.fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return Found::nothing;
    if (S_ISLNK(st.st_mode)) return Found::symlink;
    if (!S_ISREG(st.st_mode) || std::size_t(st.st_size) > launcher::kMaxFileSize) return Found::other;
    auto text = dir.read_if_exists(name, launcher::kMaxFileSize);
    if (!text || !*text || (*text)->find(launcher::kTagText) == std::string::npos) return Found::other;
    *launcher_text = std::move(**text);
    return Found::launcher;
}

Status install_binary(const os::Dir& dir, std::FILE* out) {
    std::string path = dir.path_of(kBinaryName);
    if (is_self_exe(path)) {
        std::fprintf(out, "unchanged %s (this binary)\n", path.c_str());
        return {};
    }
    os::UniqueFd self(::open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
    if (!self) return os::sys_fail("open", "/proc/self/exe");
    CNI_TRY_ASSIGN(auto image, os::read_all(self.get(), std::size_t(1) << 30, "/proc/self/exe"));
    CNI_TRY(dir.write_atomic(kBinaryName, image, 0755));
    std::fprintf(out, "installed %s\n", path.c_str());
    return {};
}

// One applet: its launcher (or, without one, a symlink to cni-all) replaces a symlink or an
// older launcher of ours; anything else stays unless `force`.
Status install_applet(const os::Dir& dir, std::string_view applet, bool force, std::FILE* out) {
    const std::string name(applet), path = dir.path_of(name);
    std::string current;
    Found found = look(dir, name, &current);
    if (found == Found::other && !force)
        return fail("refusing to replace " + path + ": it is not ours (a symlink or a cni-all launcher); use --force");
    auto wanted = launcher_for(applet);
    if (!wanted) {  // no launcher on this architecture: a relative symlink, as before
        std::string tmp = "." + name + ".tmp-install";
        ::unlinkat(dir.fd(), tmp.c_str(), 0);
        if (::symlinkat(kBinaryName, dir.fd(), tmp.c_str()) != 0 || ::renameat(dir.fd(), tmp.c_str(), dir.fd(), name.c_str()) != 0) {
            int err = errno;
            ::unlinkat(dir.fd(), tmp.c_str(), 0);
            return os::sys_fail("linking", path, err);
        }
        std::fprintf(out, "%s %s -> %s\n", found == Found::nothing ? "created" : "replaced", path.c_str(), kBinaryName);
        return {};
    }
    if (found == Found::launcher && current == *wanted) {
        std::fprintf(out, "unchanged %s\n", path.c_str());
        return {};
    }
    CNI_TRY(dir.write_atomic(name, *wanted, 0755));
    static constexpr const char* kVerb[] = {"created", "replaced the symlink", "updated", "replaced"};
    std::fprintf(out, "%s %s (launcher of %s)\n", kVerb[int(found)], path.c_str(), kBinaryName);
    return {};
}

// The applets a comma-separated list names; an unknown name is an error naming it.
Result<std::vector<std::string_view>> applet_list(std::string_view list) {
    std::vector<std::string_view> out;
    for (auto n : split(list, ',')) {
        if (n.empty()) continue;
        if (!find_applet(n)) return fail("unknown applet '" + std::string(n) + "' (cni-all --list shows them)");
        out.push_back(n);
    }
    return out;
}

}  // namespace

Result<InstallOptions> parse_install_args(std::span<const std::string> args) {
    InstallOptions o;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&]() -> Result<std::string_view> {
            if (auto eq = a.find('='); eq != std::string::npos) return std::string_view(a).substr(eq + 1);
            if (i + 1 >= args.size()) return fail(a + " needs a comma-separated list of applets");
            return std::string_view(args[++i]);
        };
        if (a == "--help" || a == "-h") {
            o.help = true;
        } else if (a == "--force") {
            o.force = true;
        } else if (a.starts_with("--applets")) {
            CNI_TRY_ASSIGN(auto list, value());
            CNI_TRY_ASSIGN(o.only, applet_list(list));
        } else if (a.starts_with("--skip")) {
            CNI_TRY_ASSIGN(auto list, value());
            CNI_TRY_ASSIGN(o.skip, applet_list(list));
        } else if (a.starts_with("-")) {
            return fail("unknown option " + a);
        } else if (o.dir.empty()) {
            o.dir = a;
        } else {
            return fail("one folder only, got " + o.dir + " and " + a);
        }
    }
    if (!o.help && o.dir.empty()) return fail("the folder to install into is missing");
    return o;
}

int install_applets(const InstallOptions& o, std::FILE* out, std::FILE* err) {
    auto dir = os::Dir::create(o.dir, 0755);
    if (!dir) {
        std::fprintf(err, "cni-all install: %s\n", dir.error().msg.c_str());
        return 1;
    }
    if (auto st = install_binary(*dir, out); !st) {
        std::fprintf(err, "cni-all install: %s\n", st.error().msg.c_str());
        return 1;
    }
    int rc = 0;
    for (const Applet* a : all_applets()) {
        auto listed = [&](const std::vector<std::string_view>& l) { return std::ranges::find(l, a->name) != l.end(); };
        if ((!o.only.empty() && !listed(o.only)) || listed(o.skip)) {
            std::fprintf(out, "skipped %s\n", dir->path_of(a->name).c_str());
            continue;
        }
        if (auto st = install_applet(*dir, a->name, o.force, out); !st) {
            std::fprintf(err, "cni-all install: %s\n", st.error().msg.c_str());
            rc = 1;
        }
    }
    return rc;
}

}  // namespace cni
