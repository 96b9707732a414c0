#!/usr/bin/env python3
"""Checks vectors/chain-v1.json with an implementation independent of the Rust crate:
hash = BLAKE3(domain || prev || event bytes), prev of seq 1 = 32 zero bytes.
Needs `pip install blake3`. Usage: python3 schemas/vectors/check_vectors.py"""
import json, pathlib, sys
from blake3 import blake3

v = json.loads((pathlib.Path(__file__).parent / "chain-v1.json").read_text())
prev = bytes.fromhex(v["genesis"])
assert prev == bytes(32)
for e in v["events"]:
    assert bytes.fromhex(e["prev"]) == prev, e["note"]
    body = bytes.fromhex(e["bytes_hex"])
    h = blake3(v["domain"].encode() + prev + body).digest()
    if h.hex() != e["hash"]:
        sys.exit(f"MISMATCH {e['note']}: {h.hex()} != {e['hash']}")
    prev = h
print(f"{len(v['events'])} vectors OK")
