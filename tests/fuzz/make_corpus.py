#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpus of tests/fuzz/corpus/ (run it again after changing it; output is fixed).

Each file is one input of fuzz_one (fuzz_one.hpp): a first byte below 0x80 makes the rest a frame
stream fed in chunks of (byte + 1) bytes; 0x80 and above hands the rest to the payload decoders.
Frame layout as in runtime/src/mesh/frame.hpp, payloads in MessagePack (a small encoder below, so
no package is needed).
"""
import pathlib
import struct

CORPUS = pathlib.Path(__file__).resolve().parent / "corpus"
HELLO, EVENT, BYE, ACK, PING, AUTH, WELCOME = 1, 2, 3, 4, 5, 6, 7
DIRECT = b"\x80"


class Raw(bytes):
    """Bytes spliced into a MessagePack value as they are (for hostile encodings)."""


def pack(v):
    if isinstance(v, Raw):
        return bytes(v)
    if v is None:
        return b"\xc0"
    if isinstance(v, bool):
        return b"\xc3" if v else b"\xc2"
    if isinstance(v, int):
        if 0 <= v < 0x80:
            return bytes([v])
        if -32 <= v < 0:
            return struct.pack(">b", v)
        if v >= 0:
            for tag, fmt, top in ((0xCC, ">B", 1 << 8), (0xCD, ">H", 1 << 16),
                                  (0xCE, ">I", 1 << 32), (0xCF, ">Q", 1 << 64)):
                if v < top:
                    return bytes([tag]) + struct.pack(fmt, v)
        for tag, fmt, low in ((0xD0, ">b", -(1 << 7)), (0xD1, ">h", -(1 << 15)),
                              (0xD2, ">i", -(1 << 31)), (0xD3, ">q", -(1 << 63))):
            if v >= low:
                return bytes([tag]) + struct.pack(fmt, v)
    if isinstance(v, float):
        return b"\xcb" + struct.pack(">d", v)
    if isinstance(v, str):
        b = v.encode()
        if len(b) < 32:
            return bytes([0xA0 | len(b)]) + b
        return (b"\xd9" + struct.pack(">B", len(b)) if len(b) < 256 else
                b"\xda" + struct.pack(">H", len(b))) + b
    if isinstance(v, bytes):
        return b"\xc4" + struct.pack(">B", len(v)) + v
    if isinstance(v, list):
        head = bytes([0x90 | len(v)]) if len(v) < 16 else b"\xdc" + struct.pack(">H", len(v))
        return head + b"".join(pack(x) for x in v)
    if isinstance(v, dict):
        head = bytes([0x80 | len(v)]) if len(v) < 16 else b"\xde" + struct.pack(">H", len(v))
        return head + b"".join(pack(k) + pack(x) for k, x in v.items())
    raise TypeError(type(v))


def frame(kind, topic=b"", payload=b"", sender=3, seq=1, flags=0, version=2, magic=b"DTSK",
          reserved=0, payload_len=None):
    if isinstance(topic, str):
        topic = topic.encode()
    n = len(payload) if payload_len is None else payload_len
    header = magic + struct.pack("<BBHQQHHI", version, kind, flags, sender, seq, len(topic),
                                 reserved, n)
    assert len(header) == 32
    return header + topic + payload


def hello(**changes):
    h = {"v": 2, "n": 3, "i": 0x1234_5678_9ABC_DEF0, "m": 1 << 20, "r": "run-1", "rx": True,
         "a": 0, "l": ["learner", "node.3"], "la": "tcp://127.0.0.1:40000", "c": "ab" * 32,
         "au": True}
    h.update(changes)
    return pack(h)


def deep(levels, leaf=b"\xc0"):
    return Raw(b"\x91" * levels + leaf)


EVENT_ARGS = pack({"a": [1, -2, "x", b"\x00\xff", 0.5, None, [True]], "k": {"lr": 0.001}})

SEEDS = {
    "hello_frame": b"\x7f" + frame(HELLO, payload=hello()),
    "hello_frame_bytewise": b"\x00" + frame(HELLO, payload=hello()),
    "hello_frame_minimal": b"\x07" + frame(HELLO, payload=pack({"v": 2, "n": 0, "i": 1, "m": 1})),
    "event_frame": b"\x1f" + frame(EVENT, "task.step", EVENT_ARGS, seq=7),
    "event_frame_relayed": b"\x0f" + frame(EVENT, "task.x", EVENT_ARGS, flags=1, sender=9),
    "bye_frame": b"\x03" + frame(BYE, payload=pack({"reason": "done"})),
    "ack_frame": b"\x7f" + frame(ACK, seq=41),
    "ping_frame": b"\x05" + frame(PING),
    "auth_frame": b"\x10" + frame(AUTH, payload=b"0123456789abcdef" * 4),
    "welcome_frame": b"\x01" + frame(WELCOME),
    "stream_hello_event_bye": b"\x07" + frame(HELLO, payload=hello()) +
                              frame(EVENT, "task.a", EVENT_ARGS, seq=1) +
                              frame(EVENT, "task.b", pack({"a": [], "k": {}}), seq=2) +
                              frame(BYE, payload=pack({"reason": "ok"})),
    "truncated_header": b"\x7f" + frame(EVENT, "t", EVENT_ARGS)[:20],
    "truncated_body": b"\x02" + frame(EVENT, "task.t", EVENT_ARGS)[:-5],
    "oversize_length": b"\x7f" + frame(EVENT, "t", b"\x80", payload_len=0xFFFF_FFFF),
    "bad_magic": b"\x7f" + b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    "unknown_type_99": b"\x7f" + frame(99, payload=b"\xc0"),
    "bad_version": b"\x7f" + frame(PING, version=1),
    "reserved_nonzero": b"\x7f" + frame(PING, reserved=0xBEEF),
    "event_garbage_payload": b"\x7f" + frame(EVENT, "task.g", b"\xc1\xff\x00\xdb\xff\xff"),
    "event_deep_nesting": b"\x7f" + frame(EVENT, "task.d", pack({"a": [deep(300)], "k": {}})),
    "hello_deep_nesting": b"\x7f" + frame(HELLO, payload=hello(x=deep(40))),
    "direct_hello": DIRECT + hello(),
    "direct_hello_wrong_types": DIRECT + hello(n="3", i=-1, l=[1, ["x"]], au="yes"),
    "direct_hello_huge_str32": DIRECT + hello(r=Raw(b"\xdb\xff\xff\xff\xffrun")),
    "direct_hello_duplicate_key": DIRECT + b"\x82" + pack("v") + b"\x02" + pack("v") + b"\x03",
    "direct_event_args": DIRECT + EVENT_ARGS,
}


def main():
    CORPUS.mkdir(exist_ok=True)
    for old in CORPUS.iterdir():
        if old.is_file():
            old.unlink()
    for name, data in SEEDS.items():
        (CORPUS / name).write_bytes(data)
    print(f"wrote {len(SEEDS)} seeds to {CORPUS}")


if __name__ == "__main__":
    main()
