#!/usr/bin/env python3
"""A table device written from schemas/ alone (README.md, DEVICES.md): no roundledger code.

It opens a table and plays one round of a rule set in the JSON wire form, hash-chained
(README §2), deck committed and revealed (§2), each event signed with an enrollment header
(§5.4), over a raw NATS connection (INFO, CONNECT, HPUB with Nats-Msg-Id, a reply inbox
for the JetStream ack). Then it closes the table.

    device.py --nats nats://127.0.0.1:4222 --table T1 --rule-set CSP6 [--fault F] [--out FILE]
    device.py --print-admin-key

Faults seed one departure from the round grammar (DEVICES.md §4): no-shuffle, no-burn,
card-order, wrong-payout, bad-link. Needs python3 with `blake3` and `pynacl`.
"""

import argparse
import json
import socket
import sys
import time

from blake3 import blake3
from nacl.signing import SigningKey

# Fixed test keys (RFC 8032 seeds): the admin's and the device's.
ADMIN_SEED = bytes([0x01] * 32)
DEVICE_SEED = bytes([0x07] * 32)
SALT = bytes([0x07] * 32)
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

FAULTS = ["no-shuffle", "no-burn", "card-order", "wrong-payout", "bad-link"]


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
    """The bodies of one round's events, in the order of DEVICES.md §4."""
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


# ---- The chain and the signatures ----------------------------------------------------


class Chain:
    """Events of one table: seq from 1, prev the hash of the one before (README §2)."""

    def __init__(self, table, device):
        self.table, self.device = table, device
        self.seq, self.prev = 0, bytes(32)
        self.clock_ns = time.time_ns()

    def next(self, body, round_no, fault=None):
        self.seq += 1
        self.clock_ns += 1_000_000
        prev = self.prev if fault != "bad-link" else bytes([0xAB] * 32)
        event = {"v": 1, "table": self.table, "device": self.device, "seq": self.seq,
                 "prev": prev.hex(), "occurred_at_ns": self.clock_ns, "round": round_no, "body": body}
        data = json.dumps(event, separators=(",", ":")).encode()
        self.prev = blake3(b"roundledger/event/v1" + prev + data).digest()
        return data


def length_prefixed(text):
    raw = text.encode()
    return bytes([len(raw)]) + raw


def headers_for(table, device, data, seq):
    """Nats-Msg-Id (README §1), Rl-Signer, Rl-Signature and Rl-Enrollment (§5.2, §5.4)."""
    admin, dev = SigningKey(ADMIN_SEED), SigningKey(DEVICE_SEED)
    dev_pub, admin_pub = bytes(dev.verify_key), bytes(admin.verify_key)
    enroll = b"roundledger/enroll/v1" + length_prefixed(table) + length_prefixed(device) + dev_pub + b"\x00"
    signed = b"roundledger/event-signature/v1" + length_prefixed(table) + length_prefixed(device)
    signed += blake3(data).digest()
    return [
        ("Nats-Msg-Id", f"{table}:{seq}:{blake3(data).hexdigest()[:16]}"),
        ("Rl-Signer", device),
        ("Rl-Signature", dev.sign(signed).signature.hex()),
        ("Rl-Enrollment", f"{dev_pub.hex()}.{admin_pub.hex()}.{admin.sign(enroll).signature.hex()}"),
    ]


# ---- A raw NATS client: INFO, CONNECT, SUB, HPUB, MSG/HMSG ----------------------------


class Nats:
    def __init__(self, url):
        host, port = url.removeprefix("nats://").rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=ACK_WAIT_S)
        self.buf = b""
        info = self.line()
        if not info.startswith(b"INFO "):
            raise RuntimeError(f"not a NATS server: {info!r}")
        connect = {"verbose": False, "pedantic": False, "headers": True, "no_responders": True,
                   "protocol": 1, "lang": "python", "version": "0"}
        self.send(b"CONNECT " + json.dumps(connect).encode() + b"\r\nPING\r\n")
        self.wait_for(b"PONG")
        self.inbox = "_INBOX.device"
        self.send(f"SUB {self.inbox}.* 1\r\n".encode())

    def send(self, data):
        self.sock.sendall(data)

    def fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise RuntimeError("the server closed the connection")
        self.buf += chunk

    def line(self):
        while b"\r\n" not in self.buf:
            self.fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def take(self, n):
        while len(self.buf) < n + 2:
            self.fill()
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def wait_for(self, word):
        while True:
            line = self.line()
            if line == b"PING":
                self.send(b"PONG\r\n")
            elif line.startswith(b"-ERR"):
                raise RuntimeError(line.decode())
            elif line.startswith(word):
                return line

    def reply(self):
        """The next message on our inbox: (status header line or None, payload)."""
        while True:
            line = self.line()
            if line == b"PING":
                self.send(b"PONG\r\n")
            elif line.startswith(b"-ERR"):
                raise RuntimeError(line.decode())
            elif line.startswith(b"HMSG "):
                parts = line.split()
                hdr_len, total = int(parts[-2]), int(parts[-1])
                data = self.take(total)
                return data[:hdr_len].split(b"\r\n", 1)[0], data[hdr_len:]
            elif line.startswith(b"MSG "):
                return None, self.take(int(line.split()[-1]))

    def publish(self, subject, headers, payload, n):
        """HPUB with a reply subject; returns the JetStream ack, or raises."""
        head = "NATS/1.0\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
        head = head.encode()
        reply = f"{self.inbox}.{n}"
        self.send(f"HPUB {subject} {reply} {len(head)} {len(head) + len(payload)}\r\n".encode()
                  + head + payload + b"\r\n")
        status, body = self.reply()
        if status is not None and b"503" in status:
            return None  # no responders: the stream does not exist yet
        ack = json.loads(body)
        if "error" in ack:
            raise RuntimeError(f"publish refused: {ack['error']}")
        return ack


def publish_all(url, table, messages):
    nats = Nats(url)
    subject = f"tables.{table}.events"
    for n, (seq, data) in enumerate(messages):
        for _ in range(STREAM_WAIT_TRIES_MAX):
            ack = nats.publish(subject, headers_for(table, "dealer-py", data, seq), data, n)
            if ack is not None:
                break
            time.sleep(0.5)
        else:
            raise RuntimeError(f"no stream takes {subject}: is `roundledger serve` running?")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--nats")
    p.add_argument("--table")
    p.add_argument("--rule-set", choices=sorted(ROUNDS))
    p.add_argument("--fault", choices=FAULTS)
    p.add_argument("--out", help="also write the events as JSON lines")
    p.add_argument("--print-admin-key", action="store_true")
    a = p.parse_args()
    if a.print_admin_key:
        print(bytes(SigningKey(ADMIN_SEED).verify_key).hex())
        return
    if not (a.table and a.rule_set):
        p.error("--table and --rule-set are required")
    chain = Chain(a.table, "dealer-py")
    messages = [(1, chain.next({"type": "table_opened", "config": table_config(a.rule_set)}, None))]
    for i, body in enumerate(round_bodies(a.rule_set, a.fault)):
        link_fault = a.fault if i == 3 else None
        messages.append((chain.seq + 1, chain.next(body, 1, link_fault)))
    messages.append((chain.seq + 1, chain.next({"type": "table_closed"}, None)))
    if a.out:
        with open(a.out, "wb") as f:
            f.writelines(data + b"\n" for _, data in messages)
    if a.nats:
        publish_all(a.nats, a.table, messages)
    print(f"{a.table}: {len(messages)} events", file=sys.stderr)


if __name__ == "__main__":
    main()
