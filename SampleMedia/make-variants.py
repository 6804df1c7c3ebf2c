#!/usr/bin/env python3
"""Derives structural variants and malformed files from the ffmpeg-made samples.

Each variant is one documented edit of a real file (see README.md)."""
import struct

def boxes(data, start=0, end=None):
    """Yields (type, offset, size, header_size) for the boxes in data[start:end]."""
    end = len(data) if end is None else end
    pos = start
    while pos + 8 <= end:
        size, kind = struct.unpack(">I4s", data[pos:pos + 8])
        header = 8
        if size == 1:
            size = struct.unpack(">Q", data[pos + 8:pos + 16])[0]
            header = 16
        elif size == 0:
            size = end - pos
        yield kind.decode("latin-1"), pos, size, header
        pos += size

def find(data, path, start=0, end=None):
    """Offset, size and header size of the first box along path (e.g. ['moov', 'trak'])."""
    for kind, off, size, header in boxes(data, start, end):
        if kind == path[0]:
            if len(path) == 1:
                return off, size, header
            return find(data, path[1:], off + header, off + size)
    return None

CONTAINERS = {"moov", "trak", "mdia", "minf", "stbl", "edts", "dinf", "udta"}

def chunk_offset_tables(data, start, end):
    for kind, off, size, header in boxes(data, start, end):
        if kind in CONTAINERS:
            yield from chunk_offset_tables(data, off + header, off + size)
        elif kind in ("stco", "co64"):
            yield kind, off

def shift_offsets(data, moov_off, moov_size, at_or_after, delta):
    """Adds delta to every chunk offset >= at_or_after in the moov at moov_off."""
    for kind, off in chunk_offset_tables(data, moov_off + 8, moov_off + moov_size):
        count = struct.unpack(">I", data[off + 12:off + 16])[0]
        width, fmt = (4, ">I") if kind == "stco" else (8, ">Q")
        for i in range(count):
            p = off + 16 + i * width
            value = struct.unpack(fmt, data[p:p + width])[0]
            if value >= at_or_after:
                data[p:p + width] = struct.pack(fmt, value + delta)

def chunk_offsets(data, moov_off, moov_size):
    result = []
    for kind, off in chunk_offset_tables(data, moov_off + 8, moov_off + moov_size):
        count = struct.unpack(">I", data[off + 12:off + 16])[0]
        width, fmt = (4, ">I") if kind == "stco" else (8, ">Q")
        result += [struct.unpack(fmt, data[off + 16 + i * width:off + 16 + (i + 1) * width])[0] for i in range(count)]
    return sorted(result)

def write(name, data):
    with open(name, "wb") as f:
        f.write(bytes(data))

base = bytearray(open("moov-at-end.mp4", "rb").read())
fast = bytearray(open("faststart.mp4", "rb").read())

# --- valid variants -------------------------------------------------------------------
# largesize-mdat.mp4: ffmpeg writes free(8) + mdat(32-bit); rewrite those 16 bytes as one
# mdat header with size == 1 and a 64-bit largesize. No payload byte moves.
free_off, free_size, _ = find(base, ["free"])
mdat_off, mdat_size, _ = find(base, ["mdat"])
assert free_size == 8 and mdat_off == free_off + 8
v = bytearray(base)
v[free_off:free_off + 16] = struct.pack(">I4sQ", 1, b"mdat", mdat_size + 8)
write("largesize-mdat.mp4", v)

# two-mdat-free.mp4: split mdat at a chunk boundary near its middle into two mdats with a
# 64-byte free box between them; moov (at the end) gets its chunk offsets shifted.
moov_off, moov_size, _ = find(base, ["moov"])
payload_start, payload_end = mdat_off + 8, mdat_off + mdat_size
split = min((o for o in chunk_offsets(base, moov_off, moov_size) if o >= (payload_start + payload_end) // 2))
insert = struct.pack(">I4s", 64, b"free") + bytes(56) + struct.pack(">I4s", payload_end - split + 8, b"mdat")
v = bytearray(base)
struct.pack_into(">I", v, mdat_off, split - mdat_off)
shift_offsets(v, moov_off, moov_size, split, len(insert))
v = v[:split] + insert + v[split:]
write("two-mdat-free.mp4", v)

# size-zero-mdat.mp4: faststart file whose last box, mdat, has size 0 (runs to EOF).
mdat_off, _, _ = find(fast, ["mdat"])
v = bytearray(fast)
struct.pack_into(">I", v, mdat_off, 0)
write("size-zero-mdat.mp4", v)

# uuid-box.mp4: a top-level uuid box (16-byte user type, 12 bytes of payload) after ftyp;
# chunk offsets shifted by its size.
ftyp_off, ftyp_size, _ = find(fast, ["ftyp"])
moov_off, moov_size, _ = find(fast, ["moov"])
uuid_box = struct.pack(">I4s", 8 + 16 + 12, b"uuid") + bytes.fromhex("be7acfcb97a942e89c71999491e3afac") + b"mp4probe tst"[:12]
v = bytearray(fast)
shift_offsets(v, moov_off, moov_size, 0, len(uuid_box))
v = v[:ftyp_off + ftyp_size] + uuid_box + v[ftyp_off + ftyp_size:]
write("uuid-box.mp4", v)

# --- malformed set --------------------------------------------------------------------
M = "malformed/"
moov_off, moov_size, _ = find(fast, ["moov"])
mdat_off, mdat_size, _ = find(fast, ["mdat"])
write(M + "truncated-in-moov.mp4", fast[:moov_off + moov_size // 2])
write(M + "truncated-in-mdat.mp4", fast[:mdat_off + 4000])
write(M + "truncated-box-header.mp4", fast[:moov_off + 5])
v = bytearray(fast); struct.pack_into(">I", v, moov_off, 4)
write(M + "box-size-below-header.mp4", v)
v = bytearray(base); bo, bs, _ = find(base, ["moov"]); struct.pack_into(">I", v, bo, bs + 100000)
write(M + "moov-size-past-eof.mp4", v)
v = bytearray(fast); so, ss, _ = find(fast, ["moov", "trak", "mdia", "minf", "stbl", "stsz"]); struct.pack_into(">I", v, so, ss + 5000)
write(M + "child-overruns-parent.mp4", v)
v = bytearray(fast); struct.pack_into(">I", v, so + 16, 0xFFFFFFFF)
write(M + "stsz-count-4-billion.mp4", v)
v = bytearray(fast); co, cs, _ = find(fast, ["moov", "trak", "mdia", "minf", "stbl", "stco"]); struct.pack_into(">I", v, co + 12, 0x40000000)
write(M + "stco-count-past-box.mp4", v)
v = bytearray(fast); eo = find(fast, ["moov", "trak", "edts", "elst"])[0]; struct.pack_into(">I", v, eo + 12, 0xFFFFFFFF)
write(M + "elst-count-past-box.mp4", v)
v = bytearray(fast); ho = find(fast, ["moov", "trak", "mdia", "mdhd"])[0]; struct.pack_into(">I", v, ho + 20, 0)
write(M + "mdhd-timescale-zero.mp4", v)
depth = 64
nest = b""
for _ in range(depth):
    nest = struct.pack(">I4s", 8 + len(nest), b"trak") + nest
ftyp = fast[:ftyp_off + ftyp_size]
write(M + "deep-nesting-64.mp4", ftyp + struct.pack(">I4s", 8 + len(nest), b"moov") + nest)
write(M + "largesize-below-16.mp4", ftyp + struct.pack(">I4sQ", 1, b"mdat", 8) + bytes(32))
write(M + "largesize-2-pow-63.mp4", ftyp + struct.pack(">I4sQ", 1, b"mdat", 1 << 63) + bytes(64))
write(M + "moov-64bit-size-huge.mp4", ftyp + struct.pack(">I4sQ", 1, b"moov", (1 << 64) - 1) + bytes(64))
write(M + "trailing-garbage.mp4", fast + b"\x17\x42\x99\x01\x7f")
write(M + "overlapping-boxes.mp4", ftyp + struct.pack(">I4s", 8 + 16, b"moov") + struct.pack(">I4s", 64, b"trak") + struct.pack(">I4s", 8, b"mvhd"))
write(M + "not-mp4.txt", b"This is a text file, not a movie.\nIt has two lines.\n")
# A 1x1 PNG image: what users hand to an MP4 tool by mistake; errors say what it is.
import zlib as _z
def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", _z.crc32(kind + data) & 0xFFFFFFFF)
write(M + "not-mp4.png", b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)) + _chunk(b"IDAT", _z.compress(b"\x00\x00")) + _chunk(b"IEND", b""))
write(M + "empty.mp4", b"")
v = bytearray(fast); stsd = find(fast, ["moov", "trak", "mdia", "minf", "stbl", "stsd"])[0]; struct.pack_into(">I", v, stsd + 16, 0x7FFFFFFF)
write(M + "stsd-entry-size-huge.mp4", v)

# --- resource bombs (issue 8): tiny files that claim enormous work ----------------------
def box(kind, payload=b""):
    return struct.pack(">I4s", 8 + len(payload), kind) + payload
def full(kind, payload=b"", version=0, flags=0):
    return box(kind, struct.pack(">I", (version << 24) | flags) + payload)
def movie(stbl_payload, extra=b""):
    mvhd = full(b"mvhd", struct.pack(">IIII", 0, 0, 1000, 0) + bytes(80))
    tkhd = full(b"tkhd", struct.pack(">IIIII", 0, 0, 1, 0, 0) + bytes(60), flags=3)
    mdhd = full(b"mdhd", struct.pack(">IIIII", 0, 0, 1000, 0, 0))
    hdlr = full(b"hdlr", struct.pack(">I4s", 0, b"vide") + bytes(13))
    trak = box(b"trak", tkhd + box(b"mdia", mdhd + hdlr + box(b"minf", box(b"stbl", stbl_payload))))
    return box(b"moov", mvhd + trak + extra)
bomb_ftyp = box(b"ftyp", b"isom" + struct.pack(">I", 0) + b"isom")
# A ~300-byte file whose tables claim 4,294,967,295 samples of 1 byte in one chunk.
stbl = (full(b"stsd", struct.pack(">I", 0)) + full(b"stts", struct.pack(">III", 1, 0xFFFFFFFF, 1))
        + full(b"stsc", struct.pack(">IIII", 1, 1, 0xFFFFFFFF, 1)) + full(b"stsz", struct.pack(">II", 1, 0xFFFFFFFF))
        + full(b"stco", struct.pack(">II", 1, 0)))
head = bomb_ftyp + movie(stbl)
write(M + "stts-4-billion-samples.mp4", head + box(b"mdat", bytes(16)))
# A fragmented file whose 20-byte trun claims 100,000,000 samples (no per-sample fields).
empty_stbl = (full(b"stsd", struct.pack(">I", 0)) + full(b"stts", struct.pack(">I", 0)) + full(b"stsc", struct.pack(">I", 0))
              + full(b"stsz", struct.pack(">II", 0, 0)) + full(b"stco", struct.pack(">I", 0)))
mvex = box(b"mvex", full(b"trex", struct.pack(">IIIII", 1, 1, 1, 0, 0)))
moof = box(b"moof", full(b"mfhd", struct.pack(">I", 1)) + box(b"traf", full(b"tfhd", struct.pack(">I", 1), flags=0x20000)
       + full(b"tfdt", struct.pack(">I", 0)) + full(b"trun", struct.pack(">Ii", 100_000_000, 0), flags=0x001)))
write(M + "trun-100-million-samples.mp4", bomb_ftyp + movie(empty_stbl, mvex) + moof + box(b"mdat", bytes(8)))
