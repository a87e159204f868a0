#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Reads TensorBoard event files as TensorBoard does, independently of ditask's writer: TFRecord
framing with masked CRC-32C (a table computed here) and the Event / Summary / HistogramProto
messages decoded by Debian's python3-protobuf from descriptors with TensorBoard's field numbers
(tensorflow/core/util/event.proto, tensorflow/core/framework/summary.proto).

Usage: read_tfevents.py DIR  ->  JSON on stdout: {"<run folder>": {"files": N, "file_version": [...],
"scalars": {tag: [[step, value], ...]}, "histograms": {tag: [[step, {...}], ...]}}}
Exits 1 with a message on a bad CRC, a cut record or a message that does not decode."""
import json
import os
import struct
import sys

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

F = descriptor_pb2.FieldDescriptorProto


def crc32c_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


TABLE = crc32c_table()


def masked_crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def event_class():
    f = descriptor_pb2.FileDescriptorProto(name="tb_event.proto", package="tensorflow", syntax="proto3")
    h = f.message_type.add(name="HistogramProto")
    for name, number in [("min", 1), ("max", 2), ("num", 3), ("sum", 4), ("sum_squares", 5)]:
        h.field.add(name=name, number=number, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    for name, number in [("bucket_limit", 6), ("bucket", 7)]:
        field = h.field.add(name=name, number=number, type=F.TYPE_DOUBLE, label=F.LABEL_REPEATED)
        field.options.packed = True
    s = f.message_type.add(name="Summary")
    v = s.nested_type.add(name="Value")
    v.oneof_decl.add(name="value")
    v.field.add(name="node_name", number=7, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    v.field.add(name="tag", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    v.field.add(name="simple_value", number=2, type=F.TYPE_FLOAT, label=F.LABEL_OPTIONAL, oneof_index=0)
    v.field.add(name="histo", number=5, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                type_name=".tensorflow.HistogramProto", oneof_index=0)
    s.field.add(name="value", number=1, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                type_name=".tensorflow.Summary.Value")
    e = f.message_type.add(name="Event")
    e.oneof_decl.add(name="what")
    e.field.add(name="wall_time", number=1, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    e.field.add(name="step", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    e.field.add(name="file_version", number=3, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL, oneof_index=0)
    e.field.add(name="summary", number=5, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                type_name=".tensorflow.Summary", oneof_index=0)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    descriptor = pool.FindMessageTypeByName("tensorflow.Event")
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)


def records(path):
    with open(path, "rb") as f:
        data = f.read()
    at = 0
    while at < len(data):
        if at + 12 > len(data):
            sys.exit(f"{path}: a record header cut at byte {at}")
        header = data[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        (header_crc,) = struct.unpack("<I", data[at + 8:at + 12])
        if header_crc != masked_crc32c(header):
            sys.exit(f"{path}: bad length CRC at byte {at}")
        body = data[at + 12:at + 12 + length]
        if len(body) != length or at + 16 + length > len(data):
            sys.exit(f"{path}: a record cut at byte {at}")
        (body_crc,) = struct.unpack("<I", data[at + 12 + length:at + 16 + length])
        if body_crc != masked_crc32c(body):
            sys.exit(f"{path}: bad data CRC at byte {at}")
        yield body
        at += 16 + length


def main():
    Event = event_class()
    runs = {}
    for folder, _, names in sorted(os.walk(sys.argv[1])):
        for name in sorted(names):
            if "tfevents" not in name:
                continue
            run = runs.setdefault(os.path.relpath(folder, sys.argv[1]),
                                  {"files": 0, "file_version": [], "scalars": {}, "histograms": {}})
            run["files"] += 1
            for index, body in enumerate(records(os.path.join(folder, name))):
                event = Event()
                event.ParseFromString(body)
                if event.SerializeToString() != body:
                    sys.exit(f"{name}: record {index} does not re-encode to the same bytes")
                what = event.WhichOneof("what")
                if index == 0 and what != "file_version":
                    sys.exit(f"{name}: the first record is not the file version")
                if what == "file_version":
                    run["file_version"].append(event.file_version)
                    continue
                for value in event.summary.value:
                    kind = value.WhichOneof("value")
                    if kind == "simple_value":
                        run["scalars"].setdefault(value.tag, []).append([event.step, value.simple_value])
                    elif kind == "histo":
                        h = value.histo
                        run["histograms"].setdefault(value.tag, []).append([event.step, {
                            "min": h.min, "max": h.max, "num": h.num, "sum": h.sum, "sum_squares": h.sum_squares,
                            "bucket_limit": list(h.bucket_limit), "bucket": list(h.bucket)}])
                    else:
                        sys.exit(f"{name}: record {index} holds a value of kind {kind}")
    json.dump(runs, sys.stdout)


if __name__ == "__main__":
    main()
