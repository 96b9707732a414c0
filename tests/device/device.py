#!/usr/bin/env python3
"""A table device written from schemas/ alone (DEVICES.md, README.md): no roundledger code.

It follows DEVICES.md §1 to the letter: it opens a table (seq 1 `table_opened`), enrolls
its key (seq 2 `device_enrolled`, the admin's signature), publishes its first checkpoint,
names the dealer, plays one round of a rule set and closes the table, with a checkpoint
after the round and after the close. Events are JSON, hash-chained (README §2), the deck
committed and revealed; every event carries Nats-Msg-Id, Rl-Signer, Rl-Signature and
Rl-Enrollment (DEVICES §2). It publishes over JetStream with nats-py.

    device.py --nats nats://127.0.0.1:4222 --table T1 --rule-set CSP6 [--fault F] [--out FILE]
    device.py --print-admin-key

--out writes each message as a line `{"subject","headers","bytes"}` (DEVICES §13), the
form `roundledger conform --file` reads. Faults seed one departure: from the round
grammar (no-shuffle, no-burn, card-order, wrong-payout, bad-link), or from the key rules
(bad-enrollment: the admin's signature covers another key; forged-event: one event
signed by a key the chain never enrolled; no-enrollment: no `device_enrolled`, version 1
checkpoints). Needs python3 with `blake3`, `pynacl` and
`nats-py` (only with --nats).
"""

import argparse
import asyncio
import json
import sys
import time

from blake3 import blake3
from nacl.signing import SigningKey

# Fixed test keys (RFC 8032 seeds): the admin's and the device's.
ADMIN_SEED = bytes([0x01] * 32)
DEVICE_SEED = bytes([0x07] * 32)
SALT = bytes([0x07] * 32)
DEVICE = "dealer-py"
DEALER = "D-1001"
ACK_WAIT_S = 5.0
STREAM_WAIT_TRIES_MAX = 120
RANKS = "23456789TJQKA"
SUITS = "cdhs"

# ---- The rounds: one per rule set, payouts computed by hand from the seeds ------------

JACKPOT = {
    "CSP6": {"pool": "CSP6-PJ", "linked": False, "reset": 0, "contribution_bp": 2500, "credit_value": 0},
    "MLP3": {"pool": "MLP3-PJ", "linked": True, "reset": 5000000, "contribution_bp": 2500, "credit_value": 0},
    "SSP4": {"pool": "SSP4-PJ", "linked": False, "reset": 1000000, "contribution_bp": 2500, "credit_value": 100},
    "TCP3": {"pool": "TCP3-PJ", "linked": False, "reset": 0, "contribution_bp": 2500, "credit_value": 0},
}
DEALING = {"CSP6": "manual_shoe", "MLP3": "shuffler", "SSP4": "manual_shoe", "CS51": "rng", "TCP3": "manual_shoe"}

# Each round: bets, the deal (target, card, face up) in order, decisions, payouts.
ROUNDS = {
    # CSP6 §4.1: the dealer does not qualify (A-K needed): the Ante pays 1 to 1, BET stands off.
    "CSP6": {
        "pool_shown": 0,
        "bets": [(1, "ante", {"chips": 1000})],
        "deal": [("burn", "2c", False), (1, "7c", False), ("dealer", "Ah", False), (1, "7d", False),
                 ("dealer", "Qd", False), (1, "Kh", False), ("dealer", "9c", False), (1, "5s", False),
                 ("dealer", "6s", False), (1, "2d", False), ("dealer", "3h", True)],
        "decisions": [(1, "play", 2000)],
        "paid": [(1, "ante", 1000), (1, "bet", 0)],
    },
    # MLP3 shuffler: complete sets per box; the dealer does not qualify; a royal flush wins
    # the progressive pool shown, a straight flush 5,000.
    "MLP3": {
        "pool_shown": 100000000,
        "bets": [(1, "ante", {"chips": 1000}), (1, "progressive", {"chips": 100}),
                 (2, "ante", {"chips": 1000}), (3, "ante", {"chips": 1000}),
                 (3, "progressive", {"chips": 100})],
        "deal": [(1, "Ah", False), (1, "Kh", False), (1, "Qh", False), (1, "Jh", False), (1, "Th", False),
                 (2, "9c", False), (2, "8d", False), (2, "7s", False), (2, "6s", False), (2, "5c", False),
                 (3, "9d", False), (3, "Td", False), (3, "Jd", False), (3, "Qd", False), (3, "Kd", False),
                 ("dealer", "2s", False), ("dealer", "7d", False), ("dealer", "8c", False),
                 ("dealer", "Js", False), ("dealer", "3h", True)],
        "decisions": [(1, "play", 2000), (2, "play", 2000), (3, "play", 2000)],
        "paid": [(1, "ante", 1000), (1, "bet", 0), (1, "progressive", 99999900),
                 (2, "ante", 1000), (2, "bet", 0), (3, "ante", 1000), (3, "bet", 0),
                 (3, "progressive", 499900)],
    },
    # SSP4: jackpot bets in credits, a magic card; box 2 folds.
    "SSP4": {
        "pool_shown": 5000000,
        "magic_card": "2h",
        "bets": [(1, "ante", {"chips": 1000}), (1, "jackpot_player", {"credits": 2}),
                 (1, "jackpot_dealer", {"credits": 1}), (2, "ante", {"chips": 1000}),
                 (2, "jackpot_dealer", {"credits": 3})],
        "deal": [(1, "8s", False), (2, "Ac", False), ("dealer", "5d", False), (1, "8h", False),
                 (2, "Qc", False), ("dealer", "5c", False), (1, "8d", False), (2, "9h", False),
                 ("dealer", "Js", False), (1, "Kc", False), (2, "6d", False), ("dealer", "Jd", False),
                 (1, "Kd", False), (2, "3s", False), ("dealer", "2h", True)],
        "decisions": [(1, "play", 2000), (2, "fold", None)],
        "paid": [(1, "ante", 1000), (1, "bet", 14000), (1, "jackpot_player", 20000),
                 (1, "jackpot_dealer", 500), (2, "ante", -1000), (2, "jackpot_dealer", 1500)],
    },
    # CS51: the player's cards face up; a fold loses the ANTE, the 5+1 Bonus still pays.
    "CS51": {
        "boxes": 1,
        "bets": [(1, "ante", {"chips": 1000}), (1, "bonus", {"chips": 500})],
        "deal": [(1, "7c", True), (1, "7d", True), (1, "Kh", True), (1, "5s", True), (1, "2d", True),
                 ("dealer", "2c", False), ("dealer", "9d", False), ("dealer", "Tc", False),
                 ("dealer", "4s", False), ("dealer", "7h", True)],
        "decisions": [(1, "fold", None)],
        "paid": [(1, "ante", -1000), (1, "bonus", 3500)],
    },
    # TCP3: A-2-3 is the lowest straight and loses to the dealer's K-Q-J straight: Ante and
    # Play lose; the Ante Bonus pays 1 to 1 for the straight whatever the dealer holds.
    "TCP3": {
        "pool_shown": 0,
        "bets": [(1, "ante", {"chips": 1000})],
        "deal": [("burn", "2c", False), (1, "As", False), ("dealer", "Kc", False), (1, "2d", False),
                 ("dealer", "Qd", False), (1, "3c", False), ("dealer", "Jh", False)],
        "decisions": [(1, "play", 1000)],
        "paid": [(1, "ante", -1000), (1, "play", -1000), (1, "ante_bonus", 1000)],
    },
}

FAULTS = ["no-shuffle", "no-burn", "card-order", "wrong-payout", "bad-link", "bad-enrollment", "forged-event", "no-enrollment"]


def card_code(card):
    """README §2: (rank - 2) * 4 + suit, clubs 0 .. spades 3."""
    return RANKS.index(card[0]) * 4 + SUITS.index(card[1])


def full_deck_after(dealt):
    """The cards dealt in order, then the rest of the deck in code order: one deck of 52."""
    rest = [r + s for r in RANKS for s in SUITS if r + s not in dealt]
    return list(dealt) + sorted(rest, key=card_code)


def target(t):
    return {"box": t} if isinstance(t, int) else t


def round_bodies(rule_set, fault):
    """The bodies of one round's events, in the order of DEVICES.md §7."""
    r = ROUNDS[rule_set]
    deal = list(r["deal"])
    if fault == "no-burn":
        deal = [d for d in deal if d[0] != "burn"]
    if fault == "card-order":
        first = 1 if deal[0][0] == "burn" else 0
        deal[first + 1], deal[first + 2] = deal[first + 2], deal[first + 1]
    order = full_deck_after([c for _, c, _ in deal])
    commitment = blake3(b"roundledger/deck/v1" + SALT + bytes(card_code(c) for c in order)).hexdigest()
    bodies = []
    if fault != "no-shuffle":
        bodies.append({"type": "shuffle_completed", "deck_commitment": commitment})
    bodies.append({"type": "announced", "announcement": "place_your_bets"})
    if rule_set in JACKPOT:
        bodies.append({"type": "jackpot_shown", "pool": JACKPOT[rule_set]["pool"], "value": r["pool_shown"]})
    for box, kind, stake in r["bets"]:
        bodies.append({"type": "bet_placed", "box_no": box, "kind": kind, "stake": stake})
    bodies.append({"type": "announced", "announcement": "no_more_bets"})
    if "magic_card" in r:
        bodies.append({"type": "magic_card_selected", "card": r["magic_card"]})
    for i, (to, card, up) in enumerate(deal):
        bodies.append({"type": "card_dealt", "to": target(to), "card": card, "face_up": up, "position": i + 1})
    for box, choice, stake in r["decisions"]:
        bodies.append({"type": "decided", "box_no": box, "choice": choice, "stake": stake})
    bodies.append({"type": "dealer_revealed", "cards": [c for t, c, _ in deal if t == "dealer"]})
    for n, (box, line, net) in enumerate(r["paid"]):
        wrong = 1 if fault == "wrong-payout" and n == 0 else 0
        bodies.append({"type": "paid_out", "box_no": box, "line": line, "net": net + wrong})
    if fault != "no-shuffle":
        bodies.append({"type": "deck_revealed", "order": order, "salt": SALT.hex()})
    bodies.append({"type": "round_closed"})
    return bodies


def table_config(rule_set):
    config = {"rule_set": rule_set, "rules_version": "seed", "currency": "SGD",
              "boxes": ROUNDS[rule_set].get("boxes", 7), "dealing": DEALING[rule_set],
              "limits": [], "pay_tables": []}
    if rule_set in JACKPOT:
        config["jackpot"] = JACKPOT[rule_set]
    return config


# ---- The chain, the signatures and the messages (DEVICES.md §1, §2) -------------------


def length_prefixed(text):
    raw = text.encode()
    return bytes([len(raw)]) + raw


def enrollment_message(table, device, key, action=0):
    """README §5.2: what the admin signs to enroll (0) or revoke (1) `key`."""
    return b"roundledger/enroll/v1" + length_prefixed(table) + length_prefixed(device) + key + bytes([action])


class Device:
    """One table's chain and the device's keys: seq from 1, prev the hash before."""

    def __init__(self, table, fault):
        self.table, self.fault = table, fault
        self.admin, self.key = SigningKey(ADMIN_SEED), SigningKey(DEVICE_SEED)
        self.seq, self.prev = 0, bytes(32)
        self.hashes = {}
        self.clock_ns = time.time_ns()
        self.messages = []  # (subject, headers, bytes), in publish order
        self.config_seq = self.key_seq = None

    def admin_signature(self):
        """The admin's enrollment of this device's key (bad-enrollment: of another key)."""
        key = bytes(self.key.verify_key)
        signed_key = bytes(SigningKey(bytes([0x09] * 32)).verify_key) if self.fault == "bad-enrollment" else key
        return self.admin.sign(enrollment_message(self.table, DEVICE, signed_key)).signature

    def event(self, body, round_no, link_fault=False):
        """Appends one event: JSON bytes, chained, signed, with its headers (DEVICES §2)."""
        self.seq += 1
        self.clock_ns += 1_000_000
        prev = bytes([0xAB] * 32) if link_fault else self.prev
        event = {"v": 1, "table": self.table, "device": DEVICE, "seq": self.seq,
                 "prev": prev.hex(), "occurred_at_ns": self.clock_ns, "round": round_no, "body": body}
        data = json.dumps(event, separators=(",", ":")).encode()
        self.prev = blake3(b"roundledger/event/v1" + prev + data).digest()
        self.hashes[self.seq] = self.prev
        signer = self.key
        if self.fault == "forged-event" and round_no is not None and body["type"] == "paid_out":
            signer = SigningKey(bytes([0x66] * 32))
            self.fault = None  # one forged event
        signed = (b"roundledger/event-signature/v1" + length_prefixed(self.table)
                  + length_prefixed(DEVICE) + blake3(data).digest())
        enrollment = f"{bytes(self.key.verify_key).hex()}.{bytes(self.admin.verify_key).hex()}.{self.admin_signature().hex()}"
        headers = {
            "Nats-Msg-Id": f"{self.table}:{self.seq}:{blake3(data).hexdigest()[:16]}",
            "Rl-Signer": DEVICE,
            "Rl-Signature": signer.sign(signed).signature.hex(),
            "Rl-Enrollment": enrollment,
        }
        self.messages.append((f"tables.{self.table}.events", headers, data))

    def open_and_enroll(self, rule_set):
        """DEVICES §1 steps 1-3: table_opened, device_enrolled, the first checkpoint."""
        self.event({"type": "table_opened", "config": table_config(rule_set)}, None)
        self.config_seq = self.seq
        key = bytes(self.key.verify_key)
        if self.fault == "no-enrollment":
            self.checkpoint()
            return
        self.event({"type": "device_enrolled", "device": DEVICE, "key": key.hex(),
                    "admin": bytes(self.admin.verify_key).hex(),
                    "signature": self.admin_signature().hex()}, None)
        self.key_seq = self.seq
        self.checkpoint()

    def checkpoint(self):
        """A version 2 checkpoint of the head (README §5.3), id bound to its bytes; version 1
        while no enrollment is in the chain."""
        self.clock_ns += 1_000_000
        version = b"v1" if self.key_seq is None else b"v2"
        m = b"roundledger/checkpoint/" + version + length_prefixed(self.table) + length_prefixed(DEVICE)
        m += self.seq.to_bytes(8, "big") + self.prev + self.clock_ns.to_bytes(8, "big", signed=True)
        cp = {"v": 1, "table": self.table, "device": DEVICE, "head_seq": self.seq,
              "head_hash": self.prev.hex(), "signed_at_ns": self.clock_ns}
        if self.key_seq is not None:
            state = {"config_seq": self.config_seq, "config_hash": self.hashes[self.config_seq].hex(),
                     "key_seq": self.key_seq, "key_hash": self.hashes[self.key_seq].hex()}
            m += state["config_seq"].to_bytes(8, "big") + bytes.fromhex(state["config_hash"])
            m += state["key_seq"].to_bytes(8, "big") + bytes.fromhex(state["key_hash"])
        cp["signature"] = self.key.sign(m).signature.hex()
        if self.key_seq is not None:
            cp["state"] = state
        data = json.dumps(cp, separators=(",", ":")).encode()
        msg_id = f"{self.table}:checkpoint:{self.seq}:{blake3(data).hexdigest()[:16]}"
        self.messages.append((f"tables.{self.table}.checkpoints", {"Nats-Msg-Id": msg_id}, data))

    def resend_id(self, msg_id, n):
        """README §5.3: the id to send a checkpoint again under when its first was a duplicate."""
        sig = self.key.sign(b"roundledger/resend-msg-id/v1" + n.to_bytes(8, "big") + msg_id.encode()).signature
        return f"{msg_id}:s{blake3(sig).hexdigest()[:16]}"


def play(table, rule_set, fault):
    """Every message of the table's session, in the order of DEVICES §1."""
    d = Device(table, fault)
    d.open_and_enroll(rule_set)
    d.event({"type": "dealer_changed", "dealer": DEALER}, None)
    for i, body in enumerate(round_bodies(rule_set, fault)):
        d.event(body, 1, link_fault=(fault == "bad-link" and i == 3))
    d.checkpoint()
    d.event({"type": "table_closed"}, None)
    d.checkpoint()
    return d


# ---- Publishing over JetStream (nats-py) ----------------------------------------------


async def publish_all(url, device):
    import nats
    from nats.errors import NoRespondersError, TimeoutError as NatsTimeout
    from nats.js.errors import NoStreamResponseError

    nc = await nats.connect(url)
    js = nc.jetstream()
    for subject, headers, data in device.messages:
        for _ in range(STREAM_WAIT_TRIES_MAX):
            try:
                ack = await js.publish(subject, data, headers=headers, timeout=ACK_WAIT_S)
                break
            except (NoRespondersError, NoStreamResponseError, NatsTimeout):
                await asyncio.sleep(0.5)  # the stream does not exist yet (DEVICES §4)
        else:
            raise RuntimeError(f"no stream takes {subject}: is `roundledger serve` running?")
        if ack.duplicate and subject.endswith(".checkpoints"):
            headers = dict(headers, **{"Nats-Msg-Id": device.resend_id(headers["Nats-Msg-Id"], 1)})
            await js.publish(subject, data, headers=headers, timeout=ACK_WAIT_S)
    await nc.drain()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nats")
    p.add_argument("--table")
    p.add_argument("--rule-set", choices=sorted(ROUNDS))
    p.add_argument("--fault", choices=FAULTS)
    p.add_argument("--out", help="also write the messages as lines {subject, headers, bytes}")
    p.add_argument("--print-admin-key", action="store_true")
    a = p.parse_args()
    if a.print_admin_key:
        print(bytes(SigningKey(ADMIN_SEED).verify_key).hex())
        return
    if not (a.table and a.rule_set):
        p.error("--table and --rule-set are required")
    device = play(a.table, a.rule_set, a.fault)
    if a.out:
        with open(a.out, "w") as f:
            for subject, headers, data in device.messages:
                line = {"subject": subject, "headers": headers, "bytes": data.hex()}
                f.write(json.dumps(line, separators=(",", ":")) + "\n")
    if a.nats:
        asyncio.run(publish_all(a.nats, device))
    print(f"{a.table}: {len(device.messages)} messages, head seq {device.seq}", file=sys.stderr)


if __name__ == "__main__":
    main()
