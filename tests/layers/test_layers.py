#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""scripts/layers.py against small trees of its own: a tree that keeps a table of layers passes,
and each way of breaking the table's rules, or of hiding a break from the check, fails naming
the file and line (docs/design.md, Layers). No build and no root needed."""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import check, eq, run_all, test  # noqa: E402

LAYERS_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "layers.py")

DESIGN = """# design

## Layers

| layer | files | namespace | may include | system headers | global code |
|---|---|---|---|---|---|
| base | `core/base.hpp` | `cni` | | | |
| nl | `core/nl/` | `cni::nl` | base | `<netlink/…>` | |
| applets | `applets/<applet>/` `applets/<applet>.cpp` | `cni::<applet>` | base nl | | |
| top | `*` | `cni` | base nl applets | | `main.cpp` |
"""

# A tree that keeps every rule: each file as the table wants it.
CLEAN = {
    "core/base.hpp": "#pragma once\n#include <string>\nnamespace cni {\nusing Text = std::string;\n}\n",
    "core/nl/link.hpp": ('#pragma once\n#include <netlink/netlink.h>\n#include "core/base.hpp"\n'
                         "namespace cni::nl {\nint index();\nnamespace {\nint x;\n}\n}  // namespace cni::nl\n"),
    "applets/static.cpp": ('#include "core/nl/link.hpp"\n// #include "main.hpp" in a comment is no include\n'
                           'namespace cni::static_ {\nconst char* t = R"(\n#include "main.hpp"\n)";\n'
                           "namespace nl = cni::nl;\n}\n"
                           "template <>\nstruct cni::Traits<int> {\n};\n"),
    "applets/bridge/bridge.cpp": ('#include "applets/bridge/vlan.hpp"\nextern "C" {\n#include <linux/if.h>\n}\n'
                                  "namespace cni::bridge {\n}\n"),
    "applets/bridge/vlan.hpp": "#pragma once\nnamespace cni::bridge {\nstruct Vlan {};\n}\n",
    "applets/bridge/meson.build": "applet_sources += files('bridge.cpp')\n",
    "main.hpp": "#pragma once\n#define CNI_REF(ns, id) &ns::id##_applet,\nnamespace cni {\n}\n",
    "main.cpp": '#include "main.hpp"\n#include "applets/bridge/vlan.hpp"\nint main() { return 0; }\n',
    "launcher/build.py": "print()\n",
}


class Link(str):
    """A symbolic link to this target, laid in a tree instead of a file."""


def run(files, cmd="check"):
    """layers.py `cmd` over a tree of CLEAN with `files` laid over it (None removes a file)."""
    with tempfile.TemporaryDirectory() as d:
        tree = dict(CLEAN, **files)
        for path, text in tree.items():
            if text is None:
                continue
            at = os.path.normpath(os.path.join(d, "src", path))  # "../x" is the tree's root's
            os.makedirs(os.path.dirname(at), exist_ok=True)
            if isinstance(text, Link):
                os.symlink(text, at)
                continue
            with open(at, "w") as f:
                f.write(text)
        with open(os.path.join(d, "design.md"), "w") as f:
            f.write(DESIGN)
        p = subprocess.run([sys.executable, LAYERS_PY, cmd, os.path.join(d, "src"), os.path.join(d, "design.md")],
                           capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr


def refused(files, where, what):
    """layers.py fails on CLEAN with `files`, and says `what` at `where` (src/FILE:LINE)."""
    rc, out = run(files)
    eq(rc, 1, out)
    lines = [line for line in out.splitlines() if line.startswith(f"src/{where}: ")]
    check(any(what in line for line in lines), f"no line at src/{where} saying {what!r} in:\n{out}")


@test
def a_tree_that_keeps_the_table_passes():
    rc, out = run({})
    eq(rc, 0, out)
    check("hold" in out, out)


@test
def deps_lists_each_layers_system_headers_with_those_below_it():
    rc, out = run({}, "deps")
    eq(rc, 0, out)
    eq(out.split(), ["base::", "nl:base:netlink/", "applets:base,nl:netlink/", "top:base,nl,applets:netlink/"])


NS = "namespace cni {\n}\n"
MACRO = "a macro that opens or closes braces or a namespace"
NL_LINK = "core/nl/link.hpp"
# Each way of breaking a rule, or of hiding a break: (what it is, files laid over CLEAN, where
# the check must fail, what it must say there).
PLANTED = [
    ("a forbidden include", {NL_LINK: '#include "applets/bridge/vlan.hpp"\nnamespace cni::nl {\n}\n'},
     NL_LINK + ":1", "layer nl may not include applets/bridge"),
    ("one applet including another", {"applets/static.cpp": '\n#include "applets/bridge/vlan.hpp"\n' + NS},
     "applets/static.cpp:2", "applets/static may not include applets/bridge"),
    ("an include with a comment between # and include", {"core/base.hpp": '#/* x */include "core/nl/link.hpp"\n' + NS},
     "core/base.hpp:1", "layer base may not include layer nl"),
    ("a system header outside its rows", {"core/base.hpp": "#include <netlink/route/link.h>\n" + NS},
     "core/base.hpp:1", "may not include <netlink/...>"),
    ("an include continued over lines", {"core/base.hpp": '#include \\\n"core/nl/link.hpp"\n' + NS},
     "core/base.hpp:1", "continued over 2 lines"),
    ("an include written with the digraph", {"core/base.hpp": '%:include "core/nl/link.hpp"\n' + NS},
     "core/base.hpp:1", "the digraph %:"),
    ("an include of a macro", {"core/base.hpp": '#define HEADER "core/nl/link.hpp"\n#include HEADER\n' + NS},
     "core/base.hpp:2", "names no header literally"),
    ("a namespace of another folder", {"applets/bridge/vlan.hpp": "namespace cni::nl {\n}\n"},
     "applets/bridge/vlan.hpp:1", "applets/bridge is in cni::bridge"),
    ("a namespace with a standard attribute", {NL_LINK: "namespace [[deprecated]] cni::nl {\n}\n"},
     NL_LINK + ":1", "a form the check does not read"),
    ("a namespace with a GNU attribute", {NL_LINK: 'namespace cni::nl __attribute__((visibility("hidden"))) {\n}\n'},
     NL_LINK + ":1", "a form the check does not read"),
    ("an inline namespace", {NL_LINK: "namespace cni::nl {\ninline namespace v1 {\n}\n}\n"},
     NL_LINK + ":2", "an inline namespace"),
    ("a nested inline namespace", {NL_LINK: "namespace cni::nl::inline v1 {\n}\n"},
     NL_LINK + ":1", "an inline namespace"),
    ("a global variable", {NL_LINK: "namespace cni::nl {\n}\nint stray;\n"},
     NL_LINK + ":3", "code outside every named namespace"),
    ("code in an anonymous namespace at file scope", {NL_LINK: "namespace {\nint hidden;\n}\n"},
     NL_LINK + ":2", "code outside every named namespace"),
    ("a using-directive at file scope", {"main.hpp": "#pragma once\nusing namespace cni;\n"},
     "main.hpp:2", "code outside every named namespace"),
    # An include the check would not read as the compiler does.
    ("an include of a build file", {"core/base.hpp": '#include "applets/bridge/meson.build"\n' + NS},
     "core/base.hpp:1", "no C++ file of a layer"),
    ("an include of a file named like a build file", {"core/nl/x.meson.build": "int stray;\n",
                                                      "core/base.hpp": '#include "core/nl/x.meson.build"\n' + NS},
     "core/nl/x.meson.build:1", "a file of a kind the layers check does not read"),
    ("an include of a .py file outside launcher/", {"core/nl/x.py": "int stray;\n",
                                                    "core/base.hpp": '#include "core/nl/x.py"\n' + NS},
     "core/base.hpp:1", "no C++ file of a layer"),
    ("an absolute quoted include", {"core/base.hpp": '#include "/usr/include/netlink/netlink.h"\n' + NS},
     "core/base.hpp:1", "an absolute name"),
    ("an absolute angle include", {"core/base.hpp": "#include </usr/include/netlink/netlink.h>\n" + NS},
     "core/base.hpp:1", "an absolute name"),
    ("an angle include through a .. part", {"core/base.hpp": "#include <../src/core/nl/link.hpp>\n" + NS},
     "core/base.hpp:1", "`..`"),
    ("a quoted include through a .. part", {"core/base.hpp": '#include "nl/../nl/link.hpp"\n' + NS},
     "core/base.hpp:1", "`..`"),
    ("an angle include through a . part", {"core/base.hpp": "#include <./netlink/netlink.h>\n" + NS},
     "core/base.hpp:1", "`.`"),
    ("an include with an empty part", {"core/base.hpp": '#include "core//nl/link.hpp"\n' + NS},
     "core/base.hpp:1", "empty part"),
    ("a symbolic link to a folder", {"core/nlx": Link("nl"), "core/base.hpp": '#include "core/nlx/link.hpp"\n' + NS},
     "core/nlx:1", "a symbolic link"),
    ("a symbolic link to a file", {"core/nl/vlan.hpp": Link("../../applets/bridge/vlan.hpp")},
     "core/nl/vlan.hpp:1", "a symbolic link"),
    # Braces or a namespace the compiler reads and the namespace scan would not.
    ("a namespace closed with the digraph %>", {NL_LINK: "namespace cni::nl <%\n%>\nint stray;\n"},
     NL_LINK + ":1", "`<%` in code"),
    ("a namespace opened with the digraph <%", {NL_LINK: "namespace cni::nl {\n%>\nint stray;\n"
                                                          "namespace cni::nl <%\n}\n"},
     NL_LINK + ":2", "`%>` in code"),
    ("a trigraph brace", {NL_LINK: "namespace cni::nl {\n??>\n}\n"}, NL_LINK + ":2", "`??>` in code"),
    ("a trigraph backslash joining lines", {NL_LINK: "namespace cni::nl {\nint a; ??/\n}\nint stray;\n"},
     NL_LINK + ":2", "`??/` in code"),
    ("a system folder's header that is also a file of an include folder",
     {"../linux/if.h": "namespace x {}\n"}, "applets/bridge/bridge.cpp:3", "in an include folder of the build"),
    ("a macro that closes a brace", {NL_LINK: "#define CLOSE }\nnamespace cni::nl {\nCLOSE\nint stray;\n}\n"},
     NL_LINK + ":1", MACRO),
    ("a macro that opens a namespace", {"main.hpp": "#define IN_NL(x) namespace nl { x }\n"
                                                  "namespace cni {\nIN_NL(int y;)\n}\n"},
     "main.hpp:1", MACRO),
    ("a macro that pastes a digraph", {NL_LINK: "#define OPEN(a) a ## %\nnamespace cni::nl {\n}\n"},
     NL_LINK + ":1", MACRO),
    ("a macro that pastes the keyword namespace", {"main.hpp": "#define N(a, b) a ## b\n"
                                                             "namespace cni {\nN(name, space) nl {\n}\n}\n"},
     "main.hpp:1", MACRO),
    ("a macro that pastes namespace from a piece of it", {"main.hpp": "#define N(b) name ## b\n"
                                                                    "namespace cni {\nN(space) nl {\n}\n}\n"},
     "main.hpp:1", MACRO),
    ("namespace split over two lines", {"main.hpp": "namespace cni {\nname\\\nspace nl {\n}\n}\n"},
     "main.hpp:2", "a line continued with"),
    ("a comment's start split over two lines", {NL_LINK: "/\\\n* namespace cni::nl { */\n"
                                                          "int stray;\n/\\\n* } */\n"},
     NL_LINK + ":1", "a line continued with"),
    ("a comment's end split over two lines", {"main.hpp": "namespace cni {\n/* *\\\n"
                                                        "/ } int g; namespace cni { /* */\n}\n"},
     "main.hpp:2", "a line continued with"),
    ("a macro name split without a space", {NL_LINK: "#define NS name\\\nspace\nnamespace cni::nl {\n}\n"},
     NL_LINK + ":1", "a line continued with"),
    ("a quote the compiler reads in a number", {NL_LINK: "#define STR(x) #x\nnamespace cni::nl {\n"
                                                         "const char* s = STR(1e+'a); } int g; "
                                                         "namespace cni::nl {\n}\n"},
     NL_LINK + ":3", "code outside every named namespace"),
    ("a define written with the digraph %:", {NL_LINK: "%:define X 1\nnamespace cni::nl {\n}\n"},
     NL_LINK + ":1", "the digraph %:"),
    ("a namespace opened in a branch of #if only", {NL_LINK: "#if 0\nnamespace cni::nl {\n#endif\n"
                                                                  "int stray;\n#if 0\n}\n#endif\n"},
     NL_LINK + ":1", "a branch of #if whose braces do not balance"),
    ("a namespace opened in an #else branch only", {NL_LINK: "#ifdef X\n#else\nnamespace cni::nl {\n"
                                                             "#endif\nint stray;\n#ifdef X\n#else\n}\n#endif\n"},
     NL_LINK + ":2", "a branch of #if whose braces do not balance"),
    ("a header that closes its includer's namespace", {"core/nl/close.hpp": "}\n",
                                                        NL_LINK: 'namespace cni::nl {\n#include "core/nl/close.hpp"\n'
                                                                 "}\n"},
     "core/nl/close.hpp:1", "a } that closes no brace of the file"),
    ("a header that leaves a namespace open", {"core/nl/open.hpp": "namespace cni::nl {\n"},
     "core/nl/open.hpp:2", "brace(s) the file leaves open"),
    # A header of a library the table does not know, or a file of the repository outside src/
    # that the build's include folders would find.
    ("a header of an unknown library", {"core/base.hpp": "#include <nlohmann/json.hpp>\n" + NS},
     "core/base.hpp:1", "a header of no library the table knows"),
    ("a file outside src/ by its path from the top", {"core/base.hpp": "#include <tests/lib/helper.hpp>\n" + NS},
     "core/base.hpp:1", "a header of no library the table knows"),
    ("a lone header of no library", {"core/base.hpp": "#include <json.hpp>\n" + NS},
     "core/base.hpp:1", "a header of no library the table knows"),
] + [(f"a .{name.split('.')[-1]} file", {name: "namespace cni::nl {\n}\n"}, name + ":1",
      "a file of a kind the layers check does not read")
     for name in ("core/nl/route.cc", "core/nl/route.h", "core/nl/route.inc", "core/nl/route.ipp", "core/nl/route.cxx")]


def planted(what, files, where, says):
    def case():
        refused(files, where, says)
    case.__name__ = "fails_on_" + re.sub(r"\W+", "_", what)
    case.__doc__ = f"fails on {what}"
    return case


for case in PLANTED:
    test(planted(*case))


@test
def a_table_that_is_not_closed_fails():
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "design.md"), "w") as f:
            f.write(DESIGN.replace("| base nl applets |", "| applets |"))
        os.mkdir(os.path.join(d, "src"))
        p = subprocess.run([sys.executable, LAYERS_PY, "check", os.path.join(d, "src"), os.path.join(d, "design.md")],
                           capture_output=True, text=True)
        eq(p.returncode, 1, p.stdout)
        check("list base too" in p.stdout, p.stdout)


if __name__ == "__main__":
    run_all()
