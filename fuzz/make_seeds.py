#!/usr/bin/python3
"""Writes the fuzz targets' seed corpora (fuzz/corpus/NAME/*): well-formed inputs of each format,
and a few of the malformed kinds each parser must refuse, so fuzzing starts from real structure.
Run from anywhere: fuzz/make_seeds.py. The formats are those of the files each seed names."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# transport/tcp/connection.h: {u32 magic, u32 kind, u64 tag, u64 len, u64 check} + payload.
def frame(kind=1, tag=0, payload=b"", check=0, magic=0x48505431):
    return struct.pack("<IIQQQ", magic, kind, tag, len(payload), check) + payload


# First byte: receives posted (low bits) and close-after (0x80); second: lengths and checks.
write("tcp_frames", "empty-data", bytes([1, 0]) + frame())
write("tcp_frames", "data-7-bytes", bytes([3, 0x0a]) + frame(tag=1, payload=b"1234567", check=7))
write("tcp_frames", "two-frames-then-close", bytes([0x82, 0x05]) + frame(tag=0, payload=b"a") + frame(tag=1, payload=b"b" * 64))
write("tcp_frames", "abort", bytes([1, 0]) + frame(kind=2, payload=b"rank 2: gave up\n"))
write("tcp_frames", "unknown-kind", bytes([1, 0]) + frame(kind=9, payload=b"x"))
write("tcp_frames", "bad-magic", bytes([1, 0]) + frame(magic=0xdeadbeef))
write("tcp_frames", "wrong-length", bytes([2, 0x01]) + frame(tag=0, payload=b"toolong"))

# collectives/core/op_desc.h: odd mode byte, then two 64-bit words.
def desc(kind, dtype, op, algo, root, comp, count):
    return (kind << 60) | (dtype << 56) | (op << 52) | (algo << 48) | (((root + 1) & 0xFFFF) << 32) | (comp << 30) | count

write("op_desc", "same", b"\x01" + struct.pack("<QQ", desc(1, 5, 0, 1, -1, 0, 1000), desc(1, 5, 0, 1, -1, 0, 1000)))
write("op_desc", "count-differs", b"\x01" + struct.pack("<QQ", desc(1, 5, 0, 1, -1, 0, 1000), desc(1, 5, 0, 1, -1, 0, 999)))
write("op_desc", "root-differs", b"\x01" + struct.pack("<QQ", desc(2, 5, 0, 4, 0, 0, 7), desc(2, 5, 0, 4, 1, 0, 7)))
write("op_desc", "garbage-word", b"\x01" + b"\xff" * 16)

# tensorfusion/request.cc: u32 count, then per item u32-length strings and the packed params.
def params(kind=1, dtype=5, op=0, comp=0xFF, mem=0, root=-1, count=10, pre=1.0, post=1.0):
    return struct.pack("<BBBBBiQdd", kind, dtype, op, comp, mem, root, count, pre, post)

def string(s):
    return struct.pack("<I", len(s)) + s

requests = struct.pack("<I", 2) + string(b"grad/conv1") + params() + struct.pack("<I", 3) + \
    string(b"w") + params(kind=2, root=1, count=4) + struct.pack("<I", 0)
responses = struct.pack("<I", 1) + string(b"grad/conv1") + params() + string(b"")
write("op_desc", "fusion-requests", b"\x02" + requests)
write("op_desc", "fusion-responses", b"\x00" + responses)
write("op_desc", "fusion-truncated", b"\x02" + requests[:-3])

# transport/store/tcp_store.cc: after the hello, requests {u8 op, u32 key_len, u64 arg} + key + value.
def request(op, key, arg, value=b""):
    return struct.pack("<BIQ", op, len(key), arg) + key + value

hello = struct.pack("<IIIiII", 0x484F4F50, 1, 1, -1, len(b"fuzz-token"), 0) + b"fuzz-token"
write("store", "set-get-add", b"\x01" + request(1, b"k", 3, b"abc") + request(2, b"k", 100) + request(3, b"n", 5))
write("store", "get-missing", b"\x01" + request(2, b"nobody", 10))
write("store", "add-overflow", b"\x01" + request(3, b"big", 0x7FFFFFFFFFFFFFFF) + request(3, b"big", 1))
write("store", "oversized-key", b"\x01" + request(1, b"x" * 8, 1 << 40))
write("store", "hello-only", b"\x00" + hello)
write("store", "wrong-token", b"\x00" + struct.pack("<IIIiII", 0x484F4F50, 1, 1, -1, 5, 0) + b"guess")
write("store", "not-hoop", b"\x00GET / HTTP/1.1\r\n\r\n")

# common/config.h: NAME=VALUE lines.
write("config", "hooprun", b"HOOP_RANK=1\nHOOP_SIZE=4\nHOOP_STORE=tcp://127.0.0.1:5000\nHOOP_JOB_TOKEN=abc\n")
write("config", "tuning", b"HOOP_TIMEOUT=2.5\nHOOP_CHUNK_BYTES=64K\nHOOP_WINDOW=16\nHOOP_ALGO=ring\n")
write("config", "fusion", b"HOOP_CYCLE_TIME_MS=0.5\nHOOP_FUSION_THRESHOLD=16M\nHOOP_STALL_WARNING_S=0\n")
write("config", "mpirun", b"OMPI_COMM_WORLD_RANK=0\nOMPI_COMM_WORLD_SIZE=2\nOMPI_COMM_WORLD_LOCAL_RANK=0\n")
write("config", "join", b"HOOP_JOIN=1\nHOOP_RANK=5\nHOOP_STORE=tcp://127.0.0.1:5000\n")
write("config", "out-of-bounds", b"HOOP_TIMEOUT=1e10\nHOOP_CHUNK_BYTES=1G\nHOOP_WINDOW=1024\n")
