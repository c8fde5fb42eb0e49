#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The layers of src/ (docs/design.md, "Layers"), read from the table on that page.

`check` (the `layers` test): every `#include` of a file in src/ names a file of its own layer
or of a layer the table lets it include, or a system header its row's `system headers` allow;
every namespace a file opens is its layer's (or nested in it), and only the files of a row's
`global code` column have code outside every named namespace. An include the check cannot read
for sure (a macro, a digraph, a continued line, a name absolute or with a `.` or `..` part, a
file that is no C++ of a layer, a <header> of a library the table does not know), a namespace
it cannot read (an attribute, an inline namespace), a brace it could miss (a digraph, a macro,
a branch of #if, a line joined with \\) and a file of a kind it does not know or a symbolic
link fail too. A violation is printed as FILE:LINE: what, and the exit code is 1. It also checks
the table itself: every file in one layer, no unknown layer, and a layer listing all that the
layers it lists may include (so the libraries meson links are the table's).
`deps` (meson.build): one line per layer, bottom up, `layer:below,...:system header,...`, the
system headers being the layer's own and those of every layer below it (what it compiles and
links with).
`namespace NAME...` (meson.build): `NAME:identifier` for each applet folder or file, the name its
namespace cni::<identifier> has.
A <header> found in one of the build's include folders (the repository's root, the folder above
SRC_DIR, and each INCLUDE_DIR given, such as the build root and its src/) is not read as a system
header: the compiler would take that file, so it fails as no file of src/.
usage: scripts/layers.py check [SRC_DIR [DESIGN_MD [INCLUDE_DIR...]]] | deps [SRC_DIR [DESIGN_MD]]
       | namespace NAME..."""
import functools
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The files src/ may hold: C++ (checked), and what builds them: a folder's meson.build and the
# launcher's Python build steps, by their exact names (no include may name them).
SOURCE_SUFFIXES = (".cpp", ".hpp", ".cpp.in", ".hpp.in")
BUILD_FILE = re.compile(r"(?:.*/)?meson\.build|launcher/\w+\.py")
# The system headers free everywhere (docs/design.md, Layers): the C++ standard library's, the C
# and POSIX library's, and the kernel's and the C library's folders. Any other <header> that is
# not src/'s must be of a family the table's `system headers` column names.
STANDARD_HEADERS = set("""algorithm any array atomic barrier bit bitset cassert cctype cerrno cfenv cfloat
    charconv chrono cinttypes climits clocale cmath codecvt compare complex concepts condition_variable
    coroutine csetjmp csignal cstdarg cstddef cstdint cstdio cstdlib cstring ctime cuchar cwchar cwctype
    deque exception execution expected filesystem format forward_list fstream functional future
    initializer_list iomanip ios iosfwd iostream istream iterator latch limits list locale map memory
    memory_resource mutex new numbers numeric optional ostream queue random ranges ratio regex
    scoped_allocator semaphore set shared_mutex source_location span sstream stack stdexcept stop_token
    streambuf string string_view syncstream system_error thread tuple type_traits typeindex typeinfo
    unordered_map unordered_set utility valarray variant vector version""".split())
C_LIBRARY_HEADERS = set("""aio.h alloca.h arpa/inet.h assert.h byteswap.h complex.h cpio.h ctype.h dirent.h
    dlfcn.h endian.h err.h errno.h error.h fcntl.h fenv.h float.h fnmatch.h ftw.h getopt.h glob.h grp.h
    ifaddrs.h inttypes.h iso646.h langinfo.h libgen.h limits.h link.h locale.h malloc.h math.h mntent.h
    monetary.h mqueue.h netdb.h nl_types.h poll.h pthread.h pwd.h regex.h sched.h search.h semaphore.h
    setjmp.h shadow.h signal.h spawn.h stdalign.h stdarg.h stdatomic.h stdbool.h stddef.h stdint.h
    stdio.h stdlib.h string.h strings.h syslog.h tar.h termios.h tgmath.h threads.h time.h uchar.h
    ucontext.h unistd.h utime.h utmp.h wchar.h wctype.h wordexp.h""".split())
# (A <header> in one of the build's include folders is never taken for a system header: check_includes.)
SYSTEM_FOLDERS = ("linux/", "sys/", "net/", "netinet/", "arpa/")


def free_system_header(name):
    return name in STANDARD_HEADERS or name in C_LIBRARY_HEADERS or name.startswith(SYSTEM_FOLDERS)


# C++ keywords an applet's name could be: its namespace takes a trailing underscore.
KEYWORDS = {"and", "auto", "bool", "break", "case", "catch", "char", "class", "const", "continue",
            "default", "delete", "do", "double", "else", "enum", "explicit", "export", "extern",
            "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable",
            "namespace", "new", "not", "operator", "or", "private", "protected", "public",
            "register", "return", "short", "signed", "sizeof", "static", "struct", "switch",
            "template", "this", "throw", "true", "try", "typedef", "typeid", "typename", "union",
            "unsigned", "using", "virtual", "void", "volatile", "while", "xor"}


def identifier(name):
    """An applet folder's or file's name as a C++ identifier: a keyword takes a trailing _."""
    return name + ("_" if name in KEYWORDS else "")


class TableError(Exception):
    pass


class Layer:
    def __init__(self, name, patterns, namespace, below, line, system=(), global_code=()):
        self.name, self.patterns, self.namespace, self.below, self.line = name, patterns, namespace, below, line
        self.system, self.global_code = list(system), list(global_code)

    def match(self, path):
        """The instance of this layer `path` (relative to src/) is in, or None: the layer's name,
        or for a row with <applet>, that applet's folder or file name."""
        for p in self.patterns:
            rx = re.escape(p).replace(re.escape("<applet>"), "(?P<applet>[a-z0-9_]+)").replace(r"\*", "[^/]*")
            rx = rx + ".*" if p.endswith("/") else rx
            m = re.fullmatch(rx, path)
            if m:
                return m.groupdict().get("applet") or self.name
        return None

    def namespace_of(self, instance):
        if "<applet>" not in self.namespace:
            return self.namespace
        return self.namespace.replace("<applet>", identifier(instance))


def read_table(design_md):
    """The rows of the first table under the "## Layers" heading."""
    lines = open(design_md, encoding="utf-8").read().split("\n")
    try:
        start = next(i for i, l in enumerate(lines) if l.strip() == "## Layers")
    except StopIteration:
        raise TableError(f"{design_md}: no \"## Layers\" section")
    rows, header = [], None
    for i in range(start + 1, len(lines)):
        l = lines[i].strip()
        if l.startswith("## "):
            break
        if not l.startswith("|"):
            if rows or header:
                break
            continue
        cells = [c.strip() for c in l.strip("|").split("|")]
        if header is None:
            header = [c.lower() for c in cells]
        elif not set(l) <= set("|-: "):
            rows.append((i + 1, dict(zip(header, cells))))
    need = {"layer", "files", "namespace", "may include", "system headers", "global code"}
    if header is None or not need <= set(header):
        raise TableError(f"{design_md}:{start + 1}: the Layers table needs the columns " + ", ".join(sorted(need)))
    layers = []
    for line, r in rows:
        words = lambda cell: [w for w in re.split(r"[\s,]+", cell.replace("`", "")) if w and w not in ("-", "—")]
        system = [w.strip("<>").rstrip("….") for w in words(r["system headers"])]  # <netlink/…> is netlink/
        layers.append(Layer(r["layer"].replace("`", ""), words(r["files"]), r["namespace"].replace("`", ""),
                            words(r["may include"]), line, system, words(r["global code"])))
    return layers


def check_table(layers, design_md):
    problems = []
    by_name = {l.name: l for l in layers}
    for l in layers:
        for b in l.below:
            if b not in by_name:
                problems.append(f"{design_md}:{l.line}: layer {l.name} may include {b}, which is no layer of the table")
            elif b == l.name:
                problems.append(f"{design_md}:{l.line}: layer {l.name} lists itself")
    for l in layers:
        for b in l.below:
            for bb in by_name.get(b, Layer("", [], "", [], 0)).below:
                if bb not in l.below and bb != l.name:
                    problems.append(f"{design_md}:{l.line}: layer {l.name} may include {b}, which includes {bb}: "
                                    f"list {bb} too")
    return problems


def bottom_up(layers):
    """The layers in an order where each comes after all it may include."""
    done, order = set(), []
    while len(order) < len(layers):
        ready = [l for l in layers if l.name not in done and all(b in done for b in l.below)]
        if not ready:
            raise TableError("the Layers table has a cycle among: " +
                             " ".join(l.name for l in layers if l.name not in done))
        for l in ready:
            done.add(l.name)
            order.append(l)
    return order


def blank(s):
    return re.sub(r"[^\n]", " ", s)


def literal_end(text, i):
    """Where the string or character literal starting at text[i] ends (raw strings included)."""
    c, n = text[i], len(text)
    m = re.search(r"(?:u8|[uUL])?R$", text[max(0, i - 3):i]) if c == '"' else None
    if m and not re.match(r"\w", text[i - len(m.group(0)) - 1:i - len(m.group(0))] or " "):
        delim = text[i + 1:text.find("(", i)]
        j = text.find(")" + delim + '"', i)
        return n if j < 0 else j + len(delim) + 2
    j = i + 1
    while j < n and text[j] != c and text[j] != "\n":
        j += 2 if text[j] == "\\" else 1
    return j + 1


# A pp-number as the compiler reads one: 1'000 and 1e+'a hold no character literal.
PP_NUMBER = re.compile(r"[0-9](?:'[0-9A-Za-z_]|[eEpP][+-]|[0-9A-Za-z_.])*")


def piece_at(text, i):
    """(where it ends, as kept, as code) of what starts at text[i]: a comment (blanked in both),
    a string or character literal (blanked as code), a pp-number or one character."""
    n = len(text)
    if text.startswith("//", i):  # to the end of the line, and on over a backslash-newline
        j = i
        while j < n and text[j] != "\n":
            j = j + 2 if text[j] == "\\" else j + 1
        return j, blank(text[i:j]), blank(text[i:j])
    if text.startswith("/*", i):
        j = text.find("*/", i + 2)
        j = n if j < 0 else j + 2
        return j, blank(text[i:j]), blank(text[i:j])
    if text[i] in "\"'":
        j = literal_end(text, i)
        return j, text[i:j], blank(text[i:j])
    if text[i].isdigit() and not re.match(r"\w", text[i - 1] if i else " "):
        number = PP_NUMBER.match(text, i).group(0)
        return i + len(number), number, number
    return i + 1, text[i], text[i]


def lex(text):
    """Two copies of `text`, newlines kept: one with its comments blanked, and one with its
    comments and its string and character literals blanked."""
    kept, code, i = [], [], 0
    while i < len(text):
        i, as_kept, as_code = piece_at(text, i)
        kept.append(as_kept)
        code.append(as_code)
    return "".join(kept), "".join(code)


@functools.lru_cache(maxsize=4)
def directives(text):
    """(line, introducer, directive text without comments, physical lines, directive text
    without comments and literals) of every preprocessor directive, its continuation lines
    joined; and the code with comments, literals and directives blanked."""
    kept, code = lex(text)
    kept_lines, code_lines = kept.split("\n"), code.split("\n")
    found, i = [], 0
    while i < len(code_lines):
        m = re.match(r"[ \t]*(#|%:)", code_lines[i])
        if not m:
            i += 1
            continue
        first, joined, joined_code = i, kept_lines[i], code_lines[i]
        while code_lines[i].endswith("\\") and i + 1 < len(code_lines):
            i += 1
            joined, joined_code = joined[:-1] + kept_lines[i], joined_code[:-1] + code_lines[i]
        found.append((first + 1, m.group(1), joined, i - first + 1, joined_code))
        for k in range(first, i + 1):
            code_lines[k] = blank(code_lines[k])
        i += 1
    return found, "\n".join(code_lines)


INCLUDE = re.compile(r"[ \t]*(?:#|%:)[ \t]*(include|include_next|import)\b[ \t]*(.*)")


def includes(text):
    """(line, quoted, name, problem) of every include directive; a problem (and no name) where
    the check could not read the file it names for sure."""
    for no, intro, joined, lines, _ in directives(text)[0]:
        m = INCLUDE.match(joined)
        if not m or intro != "#":
            continue  # one written with %: is hidden_braces'
        target = re.fullmatch(r'(<[^>]+>|"[^"]+")\s*', m.group(2))
        if lines > 1:
            yield no, False, None, f"#{m.group(1)} continued over {lines} lines"
        elif not target:
            yield no, False, None, f"#{m.group(1)} {m.group(2).strip()}: names no header literally"
        else:
            yield no, target.group(1)[0] == '"', target.group(1)[1:-1], None


# What the compiler reads as a brace, a `#` or a backslash that the namespace scan would not:
# digraphs and trigraphs (`??/`, a backslash, could join lines), and a paste (##) of anything but
# identifiers and numbers, which could make one.
BRACE_SPELLINGS = re.compile(r"<%|%>|%:|\?\?[<>=/]|[^\w\s]\s*##|##\s*[^\w\s]")
CONDITIONAL = re.compile(r"(?:#|%:)\s*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b")


def brace_steps(code):
    """Each brace of `code`, +1 or -1."""
    return [1 if c == "{" else -1 for c in code if c in "{}"]


def hidden_braces(text):
    """(line, problem) for each way a file could open or close a namespace where the namespace
    scan does not see it: a digraph or trigraph, a line continued where it could join a word
    or a comment's ends, a directive written with %:, a macro whose
    body has `namespace`, braces that do not balance or a paste, a branch of #if...#endif
    whose braces do not balance (the compiler reads one branch, the scan all), and a file
    whose braces do not balance."""
    found, code = directives(text)
    problems = [(code.count("\n", 0, m.start()) + 1, f"`{m.group(0).strip()}` in code")
                for m in BRACE_SPELLINGS.finditer(code) if "##" not in m.group(0)]
    # The compiler joins a line ending in \ to the next before it reads comments or words, the
    # check after: the two agree only on a directive's continuation after a space.
    continued = {no + k for no, _, _, lines, _ in found for k in range(lines - 1)}
    problems += [(no, "a line continued with \\ outside a directive's continuation after a space")
                 for no, line in enumerate(text.split("\n"), 1)
                 if line.endswith("\\") and not (no in continued and re.search(r"[ \t]\\$", line))]
    at_line = {no: (intro, body) for no, intro, _, _, body in found}
    for no, (intro, body) in at_line.items():
        define = re.match(r"[ \t]*(?:#|%:)[ \t]*define\b(.*)", body)
        if intro != "#":
            problems.append((no, "a directive written with the digraph %:"))
        elif define and (re.search(r"\bnamespace\b", define.group(1)) or BRACE_SPELLINGS.search(define.group(1))
                         or may_paste_namespace(define.group(1))
                         or not balanced(brace_steps(define.group(1)))):
            problems.append((no, "a macro that opens or closes braces or a namespace"))
    groups = []  # (line, depth) of each open #if...#endif branch
    depth = 0
    for no, line in enumerate(code.split("\n"), 1):
        cond = CONDITIONAL.match(at_line.get(no, ("", ""))[1].lstrip())
        if cond and cond.group(1) not in ("if", "ifdef", "ifndef") and groups and groups[-1][1] != depth:
            problems.append((groups[-1][0], "a branch of #if whose braces do not balance"))
            depth = groups[-1][1]
        if cond and cond.group(1).startswith("if"):
            groups.append((no, depth))
        elif cond and cond.group(1) == "endif" and groups:
            groups.pop()
        elif cond and groups:
            groups[-1] = (no, groups[-1][1])
        for step in brace_steps(line):
            depth += step
            if depth < 0:
                problems.append((no, "a } that closes no brace of the file"))
                depth = 0
    if depth:
        problems.append((code.count("\n") + 1, f"{depth} brace(s) the file leaves open"))
    return problems


def may_paste_namespace(define):
    """Whether a ## of this #define (its text after `define`) could make the keyword
    `namespace`: one whose two sides are each a parameter or a piece of that word, as in
    `a ## b` or `name ## b`; `id ## _applet` cannot."""
    m = re.match(r"\s*\w+(?:\(([^)]*)\))?(.*)", define, re.S)
    if not m:
        return False  # no macro name: the compiler refuses it
    params = {p.strip().rstrip(".") or "__VA_ARGS__" for p in (m.group(1) or "").split(",")} | {"__VA_ARGS__"}
    for paste in re.finditer(r"(\w*)\s*##\s*(\w*)", m.group(2)):
        left, right = paste.groups()
        if (left in params or "namespace".startswith(left)) and (right in params or "namespace".endswith(right)):
            return True
    return False


def balanced(steps):
    depth = 0
    for step in steps:
        depth += step
        if depth < 0:
            return False
    return depth == 0


# An explicit specialization of another namespace's template, named by its qualified name: it
# belongs to that namespace, wherever it is written.
SPECIALIZATION = re.compile(r"template\s*<\s*>\s*(?:struct|class|union)\s+(?:::)?\w+::")
NAMESPACE_HEAD = re.compile(r"\s*((?:\w+\s*::\s*(?:inline\s+)?)*\w+)?\s*([{=])")


def namespace_head(code, m):
    """(kind, name, end) of the namespace keyword matched by `m`: kind is "open", "skip" (a
    using-directive or an alias) or a problem."""
    before = re.search(r"(\w+)\s*$", code[max(0, m.start() - 40):m.start()])
    if before and before.group(1) == "using":
        return "skip", "", m.end()
    if before and before.group(1) == "inline":
        return "an inline namespace", "", m.end()
    head = NAMESPACE_HEAD.match(code, m.end())
    if not head:
        return "a namespace in a form the check does not read (an attribute?)", "", m.end()
    name = re.sub(r"\s+", "", head.group(1) or "")
    if re.search(r"::\s*inline\b", head.group(1) or ""):
        return "an inline namespace", "", head.end()
    return ("skip" if head.group(2) == "=" else "open"), name, head.end()


def namespaces(text):
    """(line, full name) of every named namespace a file opens, nested ones by their full name;
    the lines where code starts outside every named namespace; and (line, problem) for the
    namespaces the check cannot read."""
    code = directives(text)[1]
    # extern "C" around includes alone holds no code once the directives are blanked.
    code = re.sub(r"\bextern\s*\{\s*\}", lambda m: blank(m.group(0)), code)
    found, outside, problems = [], [], []
    stack = []  # the namespace a brace opened ("" for an anonymous one at file scope), None for another brace
    line = lambda pos: code.count("\n", 0, pos) + 1
    at = 0
    for m in re.finditer(r"\bnamespace\b|[{}]", code):
        if m.start() < at:
            continue
        if all(s == "" for s in stack):
            stray = re.search(r"[^\s;]", code[at:m.start()])
            if stray and not SPECIALIZATION.match(code, at + stray.start()):
                outside.append(line(at + stray.start()))
        at = m.end()
        tok = m.group(0)
        if tok == "{":
            stack.append(None)
        elif tok == "}":
            if stack:
                stack.pop()
        else:
            kind, name, at = namespace_head(code, m)
            if kind not in ("open", "skip"):
                problems.append((line(m.start()), kind))
            if kind != "open":
                continue
            enclosing = next((s for s in reversed(stack) if s), "")
            # An anonymous namespace keeps its enclosing name.
            stack.append((enclosing + "::" + name if enclosing else name) if name else enclosing)
            if name:
                found.append((line(m.start()), stack[-1]))
    if all(s == "" for s in stack) and re.search(r"[^\s;]", code[at:]):
        outside.append(line(at + re.search(r"[^\s;]", code[at:]).start()))
    return found, outside, problems


def unreadable_name(name):
    """Why the check refuses an include's name as written, or None: the compiler would look for
    an absolute name, or one with `.`, `..` or empty parts, outside the folders the check reads
    (`<../src/core/nl/link.hpp>` is src/'s file by way of the build's include folders)."""
    if name.startswith("/"):
        return "an absolute name"
    if "\\" in name:
        return "a backslash in the name"
    if any(part in ("", ".", "..") for part in name.split("/")):
        return "a name with a `.`, `..` or empty part"
    return None


def resolve(src, path, quoted, name):
    """The included file relative to src/, or None when it is not one of src/'s. A generated
    header counts as the template it is made from (NAME.in)."""
    candidates = [os.path.join(os.path.dirname(path), name)] if quoted else []
    candidates.append(name)
    for c in candidates:
        if os.path.isfile(os.path.join(src, c)):
            return c
        if os.path.isfile(os.path.join(src, c + ".in")):
            return c + ".in"
    return None


def source_files(src):
    """(the C++ files of src/, relative to it; a problem for every file of an unknown kind and
    for every symbolic link: a file reached through one would be read as the link's layer)."""
    files, problems = [], []
    for root, dirs, names in os.walk(src):
        for d in sorted(d for d in dirs if os.path.islink(os.path.join(root, d))):
            problems.append(f"src/{os.path.relpath(os.path.join(root, d), src)}:1: a symbolic link: "
                            "the layers check follows none (docs/design.md, Layers)")
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not os.path.islink(os.path.join(root, d)))
        for f in sorted(names):
            rel = os.path.relpath(os.path.join(root, f), src)
            if os.path.islink(os.path.join(root, f)):
                problems.append(f"src/{rel}:1: a symbolic link: the layers check follows none (docs/design.md, Layers)")
            elif f.endswith(SOURCE_SUFFIXES):
                files.append(rel)
            elif not BUILD_FILE.fullmatch(rel):
                problems.append(f"src/{rel}:1: a file of a kind the layers check does not read: C++ is "
                                + ", ".join(SOURCE_SUFFIXES) + " (docs/design.md, Layers)")
    return files, problems


def describe(layer, instance):
    return f"layer {layer.name}" if instance == layer.name else f"{layer.name}/{instance}"


def homes(layers, files):
    """file -> (its layer, the instance: the layer's name or the applet's); problems."""
    home, problems = {}, []
    for f in files:
        hits = [(l, inst) for l in layers for inst in [l.match(f)] if inst]
        if len(hits) != 1:
            what = "no layer" if not hits else "more than one layer (" + ", ".join(l.name for l, _ in hits) + ")"
            problems.append(f"src/{f}:1: the file is in {what} of the table in docs/design.md")
            continue
        home[f] = hits[0]
    return home, problems


def check_includes(src, f, text, home, system_headers, include_dirs=()):
    layer, inst = home[f]
    for no, quoted, name, problem in includes(text):
        if problem:
            yield f"src/{f}:{no}: {problem}; the layers check cannot tell what it includes"
            continue
        shown = f'"{name}"' if quoted else f"<{name}>"
        why = unreadable_name(name)
        if why:
            yield f"src/{f}:{no}: includes {shown}: {why}; the layers check cannot tell what it includes"
            continue
        target = resolve(src, f, quoted, name)
        shadow = next((d for d in include_dirs if os.path.lexists(os.path.join(d, name))), None)
        if target is None and not quoted and shadow:
            yield (f"src/{f}:{no}: includes <{name}>, which is also {os.path.join(shadow, name)} in an include "
                   f"folder of the build, so the compiler may read that file and no system header; "
                   f"the layers check cannot tell what it includes")
            continue
        if target is None:
            family = next((h for h in system_headers if name.startswith(h)), None)
            if quoted:
                yield f"src/{f}:{no}: includes \"{name}\", which is no file of src/"
            elif family and family not in layer.system:
                yield (f"src/{f}:{no}: includes <{name}>: {describe(layer, inst)} may not include <{family}...> "
                       f"(docs/design.md, Layers: system headers)")
            elif not family and not free_system_header(name):
                yield (f"src/{f}:{no}: includes <{name}>, a header of no library the table knows: neither "
                       f"the standard or C library's, the kernel's, nor a family of its system headers "
                       f"(docs/design.md, Layers)")
            continue
        if target not in home:
            yield (f"src/{f}:{no}: includes {shown}, which is no C++ file of a layer: the layers check "
                   f"reads only those (docs/design.md, Layers)")
            continue
        tl, tinst = home[target]
        if (tl.name, tinst) != (layer.name, inst) and tl.name not in layer.below:
            yield (f"src/{f}:{no}: includes {target}: {describe(layer, inst)} may not include "
                   f"{describe(tl, tinst)} (docs/design.md, Layers)")


def check_namespaces(f, text, home, owned):
    layer, inst = home[f]
    expected = layer.namespace_of(inst)
    found, outside, problems = namespaces(text)
    for no, what in sorted(problems + hidden_braces(text)):
        yield f"src/{f}:{no}: {what}: the layers check cannot tell its namespace"
    for no, ns in found:
        # The most specific namespace a layer owns that holds `ns`.
        parts = ns.split("::")
        owner = next((("::".join(parts[:k])) for k in range(len(parts), 0, -1) if "::".join(parts[:k]) in owned), None)
        if owner != expected:
            yield f"src/{f}:{no}: namespace {ns}: {describe(layer, inst)} is in {expected} (docs/design.md, Layers)"
    if f not in layer.global_code:
        for no in outside:
            yield (f"src/{f}:{no}: code outside every named namespace: {describe(layer, inst)} is in "
                   f"{expected}, and only the table's `global code` files may have such code (docs/design.md, Layers)")


def check(src, design_md, include_dirs=()):
    layers = read_table(design_md)
    problems = check_table(layers, design_md)
    bottom_up(layers)  # a cycle is an error
    files, unknown = source_files(src)
    home, homeless = homes(layers, files)
    problems += unknown + homeless
    # Every namespace a layer owns, each applet's its own; every system header family a row names.
    owned = {l.namespace_of(inst) for l, inst in home.values()}
    system_headers = {h for l in layers for h in l.system}
    for f in sorted(home):
        text = open(os.path.join(src, f), encoding="utf-8", errors="replace").read()
        problems += check_includes(src, f, text, home, system_headers, include_dirs)
        problems += check_namespaces(f, text, home, owned)
    return problems


def deps(design_md):
    """The `deps` lines: each layer, bottom up, with the layers it may include and the system
    headers it compiles with (its own and those of every layer it may include)."""
    layers = read_table(design_md)
    problems = check_table(layers, design_md)
    if problems:
        raise TableError("\n".join(problems))
    by_name = {l.name: l for l in layers}
    for l in bottom_up(layers):
        system = sorted({h for x in [l] + [by_name[b] for b in l.below] for h in x.system})
        yield l.name + ":" + ",".join(l.below) + ":" + ",".join(system)


def main():
    args = sys.argv[1:]
    if not args or args[0] not in ("check", "deps", "namespace"):
        sys.exit(__doc__)
    if args[0] == "namespace":
        print("\n".join(f"{a}:{identifier(a)}" for a in args[1:]))
        return
    src = args[1] if len(args) > 1 else os.path.join(ROOT, "src")
    design_md = args[2] if len(args) > 2 else os.path.join(ROOT, "docs", "design.md")
    try:
        if args[0] == "deps":
            print("\n".join(deps(design_md)))
            return
        roots = [os.path.dirname(os.path.abspath(src))] + args[3:]
        problems = check(src, design_md, list(dict.fromkeys(os.path.abspath(d) for d in roots)))
    except TableError as e:
        sys.exit(f"layers.py: {e}")
    for p in problems:
        print(p)
    print(f"{len(problems)} problem(s) with the layers of docs/design.md" if problems
          else "the layers of docs/design.md hold")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
