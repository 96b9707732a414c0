#!/usr/bin/env python3
"""Keeps the dependencies honest, from `cargo metadata` alone (no network, no build).

- licenses: every package's license expression must be satisfiable with the allow-list;
- sources: every package comes from crates.io or from this workspace (vendor/ keeps
  its own license, checked like a registry crate's);
- bans: crates we never want in the tree (a second TLS stack, an openssl binding).

The advisory database cannot be fetched on these machines: DEPENDENCIES.md keeps the
known advisories that touch us, dated, with what shields us. Exit 0 clean, 1 a finding.
"""
import json
import re
import subprocess
import sys

ALLOWED = {
    "MIT", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "ISC", "Unicode-3.0",
    "Unlicense", "CC0-1.0", "MIT-0", "BSL-1.0", "Zlib",
}
EXCEPTIONS = {"LLVM-exception"}
BANNED = {"openssl", "openssl-sys", "native-tls", "aws-lc-rs", "aws-lc-sys"}
CRATES_IO = "registry+https://github.com/rust-lang/crates.io-index"


def tokens(expr):
    """SPDX-ish tokens; `/` is the old spelling of OR."""
    return re.findall(r"\(|\)|[A-Za-z0-9.+-]+|/", expr)


def satisfiable(expr):
    """Whether the license expression holds with only allowed licenses."""
    toks = tokens(expr)
    pos = 0

    def primary():
        nonlocal pos
        if pos < len(toks) and toks[pos] == "(":
            pos += 1
            value = disjunction()
            pos += 1  # ")"
            return value
        name = toks[pos]
        pos += 1
        if pos < len(toks) and toks[pos] == "WITH":
            pos += 2
        return name in ALLOWED

    def conjunction():
        nonlocal pos
        value = primary()
        while pos < len(toks) and toks[pos] == "AND":
            pos += 1
            value = primary() and value
        return value

    def disjunction():
        nonlocal pos
        value = conjunction()
        while pos < len(toks) and toks[pos] in ("OR", "/"):
            pos += 1
            value = conjunction() or value
        return value

    return disjunction()


# The parser's own check, run first: a check that cannot fail checks nothing.
SELF_CHECK = [
    ("MIT", True), ("GPL-3.0-only", False), ("MIT OR GPL-3.0-only", True),
    ("MIT AND GPL-3.0-only", False), ("(MIT OR Apache-2.0) AND Unicode-3.0", True),
    ("Apache-2.0 WITH LLVM-exception OR MIT", True), ("MIT/Apache-2.0", True),
    ("LGPL-2.1-or-later", False),
]


def main():
    for expr, want in SELF_CHECK:
        if satisfiable(expr) != want:
            print(f"deps-check: the license parser is wrong on {expr!r}")
            return 1
    meta = json.loads(subprocess.check_output(
        ["cargo", "metadata", "--format-version", "1", "--locked"]))
    findings = []
    for p in meta["packages"]:
        name, version = p["name"], p["version"]
        source = p.get("source")
        if source not in (None, CRATES_IO):
            findings.append(f"source: {name} {version} comes from {source}")
        if name in BANNED:
            findings.append(f"banned: {name} {version}")
        lic = p.get("license")
        if source is None and "/vendor/" not in p["manifest_path"]:
            continue  # our own crates: the workspace's license
        if not lic or not satisfiable(lic):
            findings.append(f"license: {name} {version}: {lic!r} is not within the allow-list")
    for f in findings:
        print(f)
    print(f"deps-check: {len(meta['packages'])} packages; licenses, sources and bans: "
          f"{'ok' if not findings else str(len(findings)) + ' findings'}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
