#!/usr/bin/env python3
"""Fails when a crate's modules import each other in a circle.

Reads every `*/src/**/*.rs` of the workspace as text. Each file is a module. A path
`crate::a::b::Name` or `super::Name` used in a file is an arrow to the file that defines
`Name`, following `pub use` re-exports to the definition. Arrows to the crate root
(lib.rs, main.rs) are left out: the root shows the crate's face. A module declaring its
child (`mod x;`) is no arrow. Prints each circle with the names that tie it; exit 1 if any.

In the crates of ROOT_COUNTED the root is a module like the others: it may only declare
modules and re-export, so an import of a name the root defines, or a re-export that
closes a circle, is an upward import and fails. An arrow inside a circle is an upward
import: no order of floors puts both its ends right.

docs/STYLE.md, narrow doors: no import loops between a crate's modules.
"""
import os
import re
import sys

ROOT_COUNTED = {"ledger"}

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEF = re.compile(
    r"^\s*pub(?:\([^)]*\))?\s+(?:async\s+|const\s+|unsafe\s+)*"
    r"(?:struct|enum|fn|const|static|type|trait|mod|union)\s+([A-Za-z_][A-Za-z0-9_]*)",
    re.M,
)
USE = re.compile(r"^\s*(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.M)
PATH = re.compile(r"\b((?:crate|super)(?:::[A-Za-z_][A-Za-z0-9_]*)+)")


def strip_comments(text):
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def before_tests(text):
    """The file up to its `#[cfg(test)]` module: tests may import what they like."""
    cut = text.find("#[cfg(test)]")
    return text if cut < 0 else text[:cut]


def module_files(src):
    """Map module path tuples to files, for one crate's src dir."""
    mods = {}
    for dirpath, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), src)[:-3].split(os.sep)
            if rel in (["lib"], ["main"]):
                key = ()
            elif rel[-1] == "mod":
                key = tuple(rel[:-1])
            else:
                key = tuple(rel)
            mods[key] = os.path.join(dirpath, f)
    return mods


def expand_use(tree):
    """`a::{b, c::{d}}` -> ["a::b", "a::c::d"]; `x as y` keeps x."""
    tree = re.sub(r"\s+", "", tree)
    m = re.match(r"^(.*?)\{(.*)\}$", tree)
    if not m:
        return [re.sub(r"as\w+$", "", tree) if "as" in tree and "::" in tree else tree]
    head, body = m.group(1), m.group(2)
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    parts.append(cur)
    out = []
    for p in filter(None, parts):
        for e in expand_use(p):
            out.append(head + e if e != "self" else head.rstrip(":"))
    return out


class Crate:
    def __init__(self, src, root_counted=False):
        self.root_counted = root_counted
        self.mods = module_files(src)
        self.text = {k: before_tests(strip_comments(open(f).read())) for k, f in self.mods.items()}
        self.defs = {k: set(DEF.findall(t)) for k, t in self.text.items()}
        self.reexports = {k: {} for k in self.mods}
        for k, t in self.text.items():
            for vis, tree in USE.findall(t):
                if not vis:
                    continue
                for path in expand_use(tree):
                    name = path.split("::")[-1].split(" as ")[-1]
                    self.reexports[k][name] = path

    def absolute(self, here, path):
        parts = path.split("::")
        if parts[0] == "crate":
            return parts[1:]
        base = list(here)
        while parts and parts[0] == "super":
            base = base[:-1]
            parts = parts[1:]
        return base + parts

    def owner(self, parts, depth=0):
        """The module that defines the item at absolute path `parts`."""
        if depth > 20:
            return None
        for cut in range(len(parts), -1, -1):
            mod = tuple(parts[:cut])
            if mod not in self.mods:
                continue
            rest = parts[cut:]
            if not rest:
                return mod
            name = rest[0]
            if name in self.defs[mod]:
                return mod
            target = self.reexports[mod].get(name)
            if target and mod + (target.split("::")[0],) in self.mods:
                target = "self::" + target
            if target and target.split("::")[0] in ("crate", "super", "self"):
                t = target.replace("self::", "", 1) if target.startswith("self::") else target
                absolute = self.absolute(mod, t) if not target.startswith("self::") else list(mod) + t.split("::")
                return self.owner(absolute + rest[1:], depth + 1)
            return mod
        return None

    def arrows(self):
        out = {}
        for k, t in self.text.items():
            paths = set()
            for _, tree in USE.findall(t):
                for p in expand_use(tree):
                    if p.startswith(("crate::", "super::")):
                        paths.add(p)
                    elif self.root_counted and k == () and (p.split("::")[0],) in self.mods:
                        paths.add("crate::" + p)
            paths.update(PATH.findall(USE.sub("", t)))
            for p in paths:
                o = self.owner(self.absolute(k, p))
                if o is None or o == k:
                    continue
                if not self.root_counted and (o == () or k == ()):
                    continue
                if o[: len(k)] == k and not self.root_counted:
                    continue  # a module using its own child
                out.setdefault(k, {}).setdefault(o, set()).add(p.split("::")[-1])
        return out


def circles(arrows):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, comps, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in arrows.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in list(arrows):
        if v not in index:
            visit(v)
    return comps


def name(module):
    """A module path for people: the crate root is `(root)`."""
    return "::".join(module) or "(root)"


def main():
    sys.setrecursionlimit(10_000)
    crates = sorted(
        d for d in os.listdir(ROOT)
        if os.path.isfile(os.path.join(ROOT, d, "Cargo.toml")) and os.path.isdir(os.path.join(ROOT, d, "src"))
    )
    found = 0
    for c in crates:
        crate = Crate(os.path.join(ROOT, c, "src"), c in ROOT_COUNTED)
        arrows = crate.arrows()
        for comp in circles(arrows):
            found += 1
            print(f"{c}: modules in a circle: " + ", ".join(name(m) for m in comp))
            for a in comp:
                for b in comp:
                    if b in arrows.get(a, {}):
                        names = ", ".join(sorted(arrows[a][b]))
                        print(f"  upward import: {name(a)} -> {name(b)}: {names}")
    if found:
        print(f"module loops: {found} circle(s); move the shared items down into a module of their own")
        return 1
    counted = ", ".join(sorted(ROOT_COUNTED))
    print(f"module loops: none in {len(crates)} crates; no upward import in {counted}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
