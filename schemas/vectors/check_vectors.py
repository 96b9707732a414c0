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
bundle-v2.json, bundle-v3.json: the chain and signature half of schemas/BUNDLE.md: every
segment's hashes from its anchor, the head, the checkpoints' ed25519 signatures over the
v1 or v2 layout of schemas/README.md §5.3, and (v3) the opening checkpoint's head and the
cited config and enrollment hashes against the state it signs. Needs `pip install pynacl`
too. The admin signature inside the enrollment event needs the event decoder: not here.
resync-v1.json: a re-sync's signed bytes rebuilt from its wire JSON (schemas/README.md
§5.6) and the admin's signature over them.
"""
import json, pathlib, sys
from blake3 import blake3
from nacl.signing import VerifyKey
from nacl.exceptions import BadSignatureError

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


def journal_leaves(name, j):
    """The journal's line chain and the journals' leaves (version 4)."""
    prev = bytes(32)
    for i, text in enumerate(j["lines"]):
        line = json.loads(text)
        if line["n"] != i + 1 or line["prev"] != prev.hex():
            fail(f"{name}: journal line {i + 1} does not follow")
        prev = blake3(j["domain"].encode() + prev + line["entry"].encode()).digest()
        if line["hash"] != prev.hex():
            fail(f"{name}: journal line {i + 1} hash")
    if j["anchors"][0]["hash"] != prev.hex() or j["anchors"][0]["entries"] != len(j["lines"]):
        fail(f"{name}: journal anchor")
    leaves = []
    for a in j["anchors"]:
        n = a["name"].encode()
        m = j["leaf_domain"].encode() + bytes([len(n)]) + n
        leaves.append(blake3(m + a["entries"].to_bytes(8, "big") + bytes.fromhex(a["hash"])).digest())
    if [x.hex() for x in leaves] != j["leaves"]:
        fail(f"{name}: journal leaves")
    return leaves


for version in (1, 2, 3, 4):
    name = f"digest-v{version}.json"
    d = json.loads((here / name).read_text())
    node = lambda l, r: blake3(d["node_domain"].encode() + l + r).digest()
    qleaf = []
    jleaves = journal_leaves(name, d["journal"]) if version == 4 else []
    if version >= 3:
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
            for a in h.get("anchors", []):
                m += bytes.fromhex(a)
            leaves.append(blake3(m).digest())
        leaves += qleaf + jleaves
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
    elif version == 4:
        print(f"{name}: {len(d['cases'])} trees and {len(d['journal']['lines'])} journal lines OK")
    else:
        print(f"{name}: {len(d['cases'])} trees OK")


EVENT_DOMAIN = json.loads((here / "chain-v1.json").read_text())["domain"].encode()


def segment(name, seg):
    """The segment's hashes from its anchor; returns {seq: hash}."""
    prev = bytes.fromhex(seg["anchor"])
    if seg["from_seq"] == 1 and prev != bytes(32):
        fail(f"{name}: a segment from seq 1 is anchored at genesis")
    if len(seg["events"]) != seg["to_seq"] - seg["from_seq"] + 1:
        fail(f"{name}: segment length")
    out = {}
    for i, e in enumerate(seg["events"]):
        if e["seq"] != seg["from_seq"] + i:
            fail(f"{name}: seq {e['seq']}")
        prev = blake3(EVENT_DOMAIN + prev + bytes.fromhex(e["bytes"])).digest()
        if prev.hex() != e["hash"]:
            fail(f"{name}: hash at seq {e['seq']}")
        out[e["seq"]] = prev.hex()
    return out


def signed_message(c):
    """The bytes a checkpoint's device signed (v1, or v2 with a state)."""
    state = c.get("state")
    m = b"roundledger/checkpoint/v2" if state else b"roundledger/checkpoint/v1"
    for ident in (c["table"], c["device"]):
        m += bytes([len(ident)]) + ident.encode()
    m += c["head_seq"].to_bytes(8, "big") + bytes.fromhex(c["head_hash"])
    m += c["signed_at_ns"].to_bytes(8, "big", signed=True)
    if state:
        m += state["config_seq"].to_bytes(8, "big") + bytes.fromhex(state["config_hash"])
        m += state["key_seq"].to_bytes(8, "big") + bytes.fromhex(state["key_hash"])
    return m


def signature_verifies(name, c, key_hex):
    try:
        VerifyKey(bytes.fromhex(key_hex)).verify(signed_message(c), bytes.fromhex(c["signature"]))
    except BadSignatureError:
        fail(f"{name}: checkpoint at seq {c['head_seq']} does not verify")


for version in (2, 3):
    name = f"bundle-v{version}.json"
    b = json.loads((here / name).read_text())
    if b["version"] != version:
        fail(f"{name}: version {b['version']}")
    hashes = segment(name, b["chain"])
    if b["head"]["seq"] != b["chain"]["to_seq"] or hashes[b["head"]["seq"]] != b["head"]["hash"]:
        fail(f"{name}: head")
    a = b["attestation"]
    key = a["device_key"]
    cp = a["checkpoint"]["decoded"]
    if hashes.get(cp["head_seq"]) != cp["head_hash"]:
        fail(f"{name}: the checkpoint's head is not the chain's")
    signature_verifies(name, cp, key)
    checked = 1
    if version == 3:
        o = b["opening"]
        oc = o["checkpoint"]["decoded"]
        if oc["head_seq"] != b["chain"]["from_seq"] or hashes[oc["head_seq"]] != oc["head_hash"]:
            fail(f"{name}: the opening checkpoint does not sign the segment's first event")
        signature_verifies(name, oc, key)
        st = oc["state"]
        if cp["state"]["key_seq"] != st["key_seq"] or cp["state"]["key_hash"] != st["key_hash"]:
            fail(f"{name}: the two checkpoints sign different enrollments")
        for what in ("config", "enrollment"):
            field = "config" if what == "config" else "key"
            seq = st[f"{field}_seq"]
            if what in o:
                hashes.update(segment(f"{name} {what}", o[what]))
            if hashes.get(seq) != st[f"{field}_hash"]:
                fail(f"{name}: the {what} at seq {seq} is not the one the opening signs")
        checked = 2
    print(f"{name}: {len(b['chain']['events'])} chain events and {checked} checkpoint signatures OK")


# resync-v1.json: a re-sync (schemas/README.md §5.6): the signed bytes rebuilt from the
# wire form's JSON, and the admin's ed25519 signature over them.
r = json.loads((here / "resync-v1.json").read_text())
wire = bytes.fromhex(r["wire_hex"])
prefix = b"roundledger/resync/v1\n"
if not wire.startswith(prefix):
    fail("resync-v1.json: the wire form lacks its prefix")
rs = json.loads(wire[len(prefix):])
table, note = rs["table"].encode(), rs["note"].encode()
m = (b"roundledger/resync/v1" + bytes([len(table)]) + table
     + rs["head_seq"].to_bytes(8, "big") + bytes.fromhex(rs["head_hash"])
     + rs["seq"].to_bytes(8, "big") + bytes.fromhex(rs["event_hash"])
     + rs["quarantine_id"].to_bytes(8, "big") + rs["signed_at_ns"].to_bytes(8, "big", signed=True)
     + len(note).to_bytes(2, "big") + note)
if m.hex() != r["signed_message_hex"]:
    fail(f"resync-v1.json: signed bytes {m.hex()} != {r['signed_message_hex']}")
if rs["seq"] != rs["head_seq"] + 1 or rs["admin"] != r["admin"]:
    fail("resync-v1.json: seq or admin")
try:
    VerifyKey(bytes.fromhex(rs["admin"])).verify(m, bytes.fromhex(rs["signature"]))
except BadSignatureError:
    fail("resync-v1.json: the admin signature does not verify")
print("resync-v1.json: signed bytes and admin signature OK")


# devices-v1.json: what schemas/DEVICES.md specifies beyond the chain: the head payload,
# a version 2 checkpoint in JSON, a deck commitment, a quarantine entry's stored value.
d = json.loads((here / "devices-v1.json").read_text())
h = d["head"]
got = blake3(b"roundledger/event/v1" + bytes(32) + bytes.fromhex(h["event_bytes_hex"])).hexdigest()
if got != h["payload"]["hash"] or h["payload"]["seq"] != 1:
    fail(f"devices-v1.json head: {got} != {h['payload']['hash']}")
c = d["checkpoint_v2"]
cp = json.loads(c["wire_json"])
st = cp["state"]
lp = lambda s: bytes([len(s.encode())]) + s.encode()
m = (b"roundledger/checkpoint/v2" + lp(cp["table"]) + lp(cp["device"])
     + cp["head_seq"].to_bytes(8, "big") + bytes.fromhex(cp["head_hash"])
     + cp["signed_at_ns"].to_bytes(8, "big", signed=True)
     + st["config_seq"].to_bytes(8, "big") + bytes.fromhex(st["config_hash"])
     + st["key_seq"].to_bytes(8, "big") + bytes.fromhex(st["key_hash"]))
if m.hex() != c["signed_message_hex"]:
    fail("devices-v1.json checkpoint: signed bytes differ")
try:
    VerifyKey(bytes.fromhex(c["device_public"])).verify(m, bytes.fromhex(cp["signature"]))
except BadSignatureError:
    fail("devices-v1.json checkpoint: the signature does not verify")
k = d["deck_commitment"]
codes = bytes("23456789TJQKA".index(x[0]) * 4 + "cdhs".index(x[1]) for x in k["order"])
if blake3(b"roundledger/deck/v1" + bytes.fromhex(k["salt"]) + codes).hexdigest() != k["commitment"]:
    fail("devices-v1.json deck commitment")
q = d["quarantine_entry"]
le = lambda b: len(b).to_bytes(4, "little") + b
value = (le(q["reason"].encode()) + le(q["text"].encode())
         + (b"\x01" + le(q["subject_table"].encode()) if q["subject_table"] else b"\x00")
         + q["stream_seq"].to_bytes(8, "little") + q["received_at_ns"].to_bytes(8, "little", signed=True)
         + le(bytes.fromhex(q["bytes_hex"])))
if value.hex() != q["value_hex"]:
    fail("devices-v1.json quarantine entry: value differs")
qkey = blake3(b"roundledger/quarantine/v1").digest()
chained = blake3(bytes(32) + q["id"].to_bytes(8, "big") + len(value).to_bytes(8, "big") + value,
                 key=qkey).hexdigest()
if chained != q["chain_after"]:
    fail("devices-v1.json quarantine chain")
print("devices-v1.json: head, checkpoint v2, deck commitment, quarantine entry OK")
