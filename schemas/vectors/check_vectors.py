#!/usr/bin/env python3
"""Checks the vectors with an implementation independent of the Rust crate.
Needs `pip install blake3`. Usage: python3 schemas/vectors/check_vectors.py

chain-v1.json:  hash = BLAKE3(domain || prev || event bytes), prev of seq 1 = 32 zero bytes.
digest-v1.json, digest-v2.json, digest-v3.json: the leaves, Merkle roots and inclusion
proofs of schemas/README.md (ledger digest); v2 and v3 leaves end with the table's receipt,
and v2 holds a receipt chain:
receipt = BLAKE3-keyed(BLAKE3(domain), prev || stream seq u64 BE || time i64 BE).
v3 ends every tree with the quarantine's leaf, BLAKE3(leaf domain || entries u64 BE || hash),
and holds the quarantine chain it names:
hash = BLAKE3-keyed(BLAKE3(domain), prev || id u64 BE || len u64 BE || stored bytes).
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


for version in (1, 2, 3):
    name = f"digest-v{version}.json"
    d = json.loads((here / name).read_text())
    node = lambda l, r: blake3(d["node_domain"].encode() + l + r).digest()
    qleaf = []
    if version == 3:
        q = d["quarantine"]
        key = blake3(q["domain"].encode()).digest()
        if key.hex() != q["key"]:
            fail(f"{name}: quarantine key")
        prev = bytes(32)
        for s in q["steps"]:
            value = bytes.fromhex(s["value_hex"])
            m = prev + s["id"].to_bytes(8, "big") + len(value).to_bytes(8, "big") + value
            prev = blake3(m, key=key).digest()
            if prev.hex() != s["hash"]:
                fail(f"{name}: quarantine chain after id {s['id']}")
        a = q["anchor"]
        if a["entries"] != len(q["steps"]) or a["hash"] != prev.hex():
            fail(f"{name}: quarantine anchor")
        leaf = blake3(q["leaf_domain"].encode() + a["entries"].to_bytes(8, "big") + prev).digest()
        if leaf.hex() != q["leaf"]:
            fail(f"{name}: quarantine leaf")
        qleaf = [leaf]
    for c in d["cases"]:
        leaves = []
        for h in c["heads"]:
            t = h["table"].encode()
            m = d["leaf_domain"].encode() + bytes([len(t)]) + t
            m += h["seq"].to_bytes(8, "big") + bytes.fromhex(h["head"])
            if version >= 2:
                m += bytes.fromhex(h["receipt"])
            leaves.append(blake3(m).digest())
        leaves += qleaf
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
    elif version == 3:
        print(f"{name}: {len(d['cases'])} trees and {len(q['steps'])} quarantine entries OK")
    else:
        print(f"{name}: {len(d['cases'])} trees OK")
