#!/usr/bin/env python3
"""Checks the vectors with an implementation independent of the Rust crate.
Needs `pip install blake3`. Usage: python3 schemas/vectors/check_vectors.py

chain-v1.json:  hash = BLAKE3(domain || prev || event bytes), prev of seq 1 = 32 zero bytes.
digest-v1.json, digest-v2.json: the leaves, Merkle roots and inclusion proofs of
schemas/README.md (ledger digest); v2 leaves end with the table's receipt, and v2 holds a
receipt chain: receipt = BLAKE3-keyed(BLAKE3(domain), prev || stream seq u64 BE || time i64 BE).
"""
import json, pathlib, sys
from blake3 import blake3

here = pathlib.Path(__file__).parent


def fail(msg):
    sys.exit(f"MISMATCH {msg}")


v = json.loads((here / "chain-v1.json").read_text())
prev = bytes.fromhex(v["genesis"])
assert prev == bytes(32)
for e in v["events"]:
    assert bytes.fromhex(e["prev"]) == prev, e["note"]
    body = bytes.fromhex(e["bytes_hex"])
    h = blake3(v["domain"].encode() + prev + body).digest()
    if h.hex() != e["hash"]:
        fail(f"{e['note']}: {h.hex()} != {e['hash']}")
    prev = h
print(f"chain-v1.json: {len(v['events'])} events OK")


def root(leaves, node):
    if not leaves:
        return None
    if len(leaves) == 1:
        return leaves[0]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return node(root(leaves[:k], node), root(leaves[k:], node))


for version in (1, 2):
    name = f"digest-v{version}.json"
    d = json.loads((here / name).read_text())
    node = lambda l, r: blake3(d["node_domain"].encode() + l + r).digest()
    for c in d["cases"]:
        leaves = []
        for h in c["heads"]:
            t = h["table"].encode()
            m = d["leaf_domain"].encode() + bytes([len(t)]) + t
            m += h["seq"].to_bytes(8, "big") + bytes.fromhex(h["head"])
            if version == 2:
                m += bytes.fromhex(h["receipt"])
            leaves.append(blake3(m).digest())
        if [x.hex() for x in leaves] != c["leaves"]:
            fail(f"{name} {c['note']}: leaves")
        r = root(leaves, node) or blake3(d["empty_domain"].encode()).digest()
        if r.hex() != c["root"]:
            fail(f"{name} {c['note']}: root {r.hex()} != {c['root']}")
    last = d["cases"][-1]
    if d["digest"]["root"] != last["root"] or d["digest"]["version"] != version:
        fail(f"{name}: the digest file is not the last case's")
    if version == 2:
        rc = d["receipts"]
        key = blake3(rc["domain"].encode()).digest()
        if key.hex() != rc["key"]:
            fail(f"{name}: receipt key")
        prev = bytes(32)
        for s in rc["steps"]:
            m = prev + s["stream_seq"].to_bytes(8, "big")
            m += s["received_at_ns"].to_bytes(8, "big", signed=True)
            prev = blake3(m, key=key).digest()
            if prev.hex() != s["receipt"]:
                fail(f"{name}: receipt after stream seq {s['stream_seq']}")
        print(f"{name}: {len(d['cases'])} trees and {len(rc['steps'])} receipts OK")
    else:
        print(f"{name}: {len(d['cases'])} trees OK")
