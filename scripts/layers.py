#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The layers of src/ (docs/design.md, "Layers"), read from the table on that page.

`check` (the `layers` test): every `#include` of a file in src/ names a file of its own layer
or of a layer the table lets it include, and every namespace a file opens is its layer's (or
nested in it); a violation is printed as FILE:LINE: what, and the exit code is 1. It also
checks the table itself: every file in one layer, no unknown layer, and a layer listing all
that the layers it lists may include (so the libraries meson links are the table's).
`deps` (meson.build): one line per layer, bottom up, `layer:below,below,...`.
usage: scripts/layers.py check|deps [SRC_DIR [DESIGN_MD]]"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIRECTIVE = re.compile(r"[ \t]*#")
SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".cpp.in", ".hpp.in")
# C++ keywords an applet's name could be: its namespace takes a trailing underscore.
KEYWORDS = {"and", "auto", "bool", "break", "case", "catch", "char", "class", "const", "continue",
            "default", "delete", "do", "double", "else", "enum", "explicit", "export", "extern",
            "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable",
            "namespace", "new", "not", "operator", "or", "private", "protected", "public",
            "register", "return", "short", "signed", "sizeof", "static", "struct", "switch",
            "template", "this", "throw", "true", "try", "typedef", "typeid", "typename", "union",
            "unsigned", "using", "virtual", "void", "volatile", "while", "xor"}


class TableError(Exception):
    pass


class Layer:
    def __init__(self, name, patterns, namespace, below, line):
        self.name, self.patterns, self.namespace, self.below, self.line = name, patterns, namespace, below, line

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
        return self.namespace.replace("<applet>", instance + ("_" if instance in KEYWORDS else ""))


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
    need = {"layer", "files", "namespace", "may include"}
    if header is None or not need <= set(header):
        raise TableError(f"{design_md}:{start + 1}: the Layers table needs the columns " + ", ".join(sorted(need)))
    layers = []
    for line, r in rows:
        words = lambda cell: [w for w in re.split(r"[\s,]+", cell.replace("`", "")) if w and w not in ("-", "—")]
        layers.append(Layer(r["layer"].replace("`", ""), words(r["files"]), r["namespace"].replace("`", ""),
                            words(r["may include"]), line))
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


def strip_code(text):
    """The text with comments, string and character literals blanked (newlines kept), and
    preprocessor lines (with their continuations) blanked too, for finding namespaces."""
    out, i, n = [], 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and DIRECTIVE.match(text, i):
            j = i
            while j < n and text[j] != "\n":
                j = j + 2 if text[j] == "\\" and j + 1 < n else j + 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        line_start = c == "\n" or (line_start and c in " \t")
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"' or c == "'":
            m = re.search(r"(?:u8|[uUL])?R$", text[max(0, i - 3):i]) if c == '"' else None
            if m and not re.match(r"\w", text[i - len(m.group(0)) - 1:i - len(m.group(0))] or " "):
                delim = text[i + 1:text.find("(", i)]
                j = text.find(")" + delim + '"', i)
                j = n if j < 0 else j + len(delim) + 2
            else:
                j = i + 1
                while j < n and text[j] != c and text[j] != "\n":
                    j += 2 if text[j] == "\\" else 1
                j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c.isdigit() and not re.match(r"\w", text[i - 1] if i else " "):
            m = re.match(r"[0-9A-Za-z_.']+", text[i:])  # a pp-number: 1'000 holds no character literal
            out.append(m.group(0))
            i += len(m.group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def namespaces(text):
    """(line, full name) of every named namespace a file opens, nested ones by their full name."""
    code = strip_code(text)
    found, stack = [], []  # stack: the namespace a brace opened, or None for any other brace
    for m in re.finditer(r"\bnamespace\b\s*([\w:]*)\s*([{=;]?)|[{}]", code):
        tok = m.group(0)
        if tok == "{":
            stack.append(None)
        elif tok == "}":
            if stack:
                stack.pop()
        elif m.group(2) == "{":
            name = m.group(1)
            enclosing = next((s for s in reversed(stack) if s), "")
            # An anonymous namespace keeps its enclosing name.
            full = (enclosing + "::" + name if enclosing else name) if name else enclosing
            stack.append(full)
            if name:
                found.append((code.count("\n", 0, m.start()) + 1, full))
    return found


def includes(text):
    for no, line in enumerate(text.split("\n"), 1):
        m = re.match(r'\s*#\s*include\s*([<"])([^">]+)[">]', line)
        if m:
            yield no, m.group(1) == '"', m.group(2)


def resolve(src, path, quoted, name):
    """The included file relative to src/, or None when it is not one of src/'s. A generated
    header counts as the template it is made from (NAME.in)."""
    candidates = [os.path.join(os.path.dirname(path), name)] if quoted else []
    candidates.append(name)
    for c in candidates:
        c = os.path.normpath(c)
        if c.startswith(".."):
            continue
        if os.path.isfile(os.path.join(src, c)):
            return c
        if os.path.isfile(os.path.join(src, c + ".in")):
            return c + ".in"
    return None


def source_files(src):
    for root, dirs, files in os.walk(src):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(SOURCE_SUFFIXES):
                yield os.path.relpath(os.path.join(root, f), src)


def describe(layer, instance):
    return f"layer {layer.name}" if instance == layer.name else f"{layer.name}/{instance}"


def check(src, design_md):
    layers = read_table(design_md)
    problems = check_table(layers, design_md)
    bottom_up(layers)  # a cycle is an error
    files = list(source_files(src))
    home = {}  # file -> (its layer, the instance: the layer's name or the applet's)
    for f in files:
        hits = [(l, inst) for l in layers for inst in [l.match(f)] if inst]
        if len(hits) != 1:
            what = "no layer" if not hits else "more than one layer (" + ", ".join(l.name for l, _ in hits) + ")"
            problems.append(f"src/{f}:1: the file is in {what} of the table in docs/design.md")
            continue
        home[f] = hits[0]
    # Every namespace a layer owns, each applet's its own.
    owned = {l.namespace_of(inst) for l, inst in home.values()}
    for f in files:
        if f not in home:
            continue
        layer, inst = home[f]
        text = open(os.path.join(src, f), encoding="utf-8", errors="replace").read()
        for no, quoted, name in includes(text):
            target = resolve(src, f, quoted, name)
            if target is None:
                if quoted:
                    problems.append(f"src/{f}:{no}: includes \"{name}\", which is no file of src/")
                continue
            if target not in home:
                continue  # reported above
            tl, tinst = home[target]
            if tl.name == layer.name and tinst == inst:
                continue
            if tl.name not in layer.below:
                problems.append(f"src/{f}:{no}: includes {target}: {describe(layer, inst)} may not include "
                                f"{describe(tl, tinst)} (docs/design.md, Layers)")
        expected = layer.namespace_of(inst)
        for no, ns in namespaces(text):
            # The most specific namespace a layer owns that holds `ns`.
            parts = ns.split("::")
            owner = next((("::".join(parts[:k])) for k in range(len(parts), 0, -1) if "::".join(parts[:k]) in owned), None)
            if owner != expected:
                problems.append(f"src/{f}:{no}: namespace {ns}: {describe(layer, inst)} is in {expected} "
                                f"(docs/design.md, Layers)")
    return problems


def main():
    args = sys.argv[1:]
    if not args or args[0] not in ("check", "deps"):
        sys.exit(__doc__)
    src = args[1] if len(args) > 1 else os.path.join(ROOT, "src")
    design_md = args[2] if len(args) > 2 else os.path.join(ROOT, "docs", "design.md")
    try:
        if args[0] == "deps":
            layers = read_table(design_md)
            problems = check_table(layers, design_md)
            if problems:
                sys.exit("\n".join(problems))
            for l in bottom_up(layers):
                print(l.name + ":" + ",".join(l.below))
            return
        problems = check(src, design_md)
    except TableError as e:
        sys.exit(f"layers.py: {e}")
    for p in problems:
        print(p)
    print(f"{len(problems)} problem(s) with the layers of docs/design.md" if problems else "the layers of docs/design.md hold")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
