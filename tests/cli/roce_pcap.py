#!/usr/bin/env python3
"""Hostile captures for the capture reader (tests/cli/hostile_test.sh, scripts/fuzz.sh).

  roce_pcap.py qps FILE N         N QPs (10.0.0.1 -> 10.0.0.2, QP 0..N-1), one frame each at t = 0
  roce_pcap.py bins FILE N NS     N QPs, each a frame at t = 0 and one at NS nanoseconds
  roce_pcap.py record FILE        a pcap record claiming 2 GiB (libpcap's bound: 256 KiB)
  roce_pcap.py block FILE         a pcapng block claiming 4 GiB (libpcap's bound: 16 MiB)

Frames are Ethernet, IPv4, UDP to 4791, an RC SEND ONLY's BTH and an ICRC (not computed:
the analyzer counts it bad and tracks the QP all the same); pcap files stamp nanoseconds.
"""
import struct
import sys


def frame(qp, psn=0):
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 44, 0, 0x4000, 64, 17, 0, bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    bth = struct.pack("!BBHII", 0x04, 0, 0xFFFF, qp, psn)
    return bytes(6) + bytes([2, 0, 0, 0, 0, 1]) + b"\x08\x00" + ip + struct.pack("!HHHH", 49152, 4791, 24, 0) + bth + bytes(4)


HEADER = struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1)  # nanosecond pcap, Ethernet


def pcap(path, records):
    with open(path, "wb") as f:
        f.write(HEADER)
        for ns, data in records:
            f.write(struct.pack("<IIII", ns // 10**9, ns % 10**9, len(data), len(data)) + data)


def main(argv):
    kind, path = argv[1], argv[2]
    if kind == "qps":
        pcap(path, ((0, frame(q)) for q in range(int(argv[3]))))
    elif kind == "bins":
        pcap(path, [r for q in range(int(argv[3])) for r in ((0, frame(q)), (int(argv[4]), frame(q, 1)))])
    elif kind == "record":
        with open(path, "wb") as f:
            f.write(HEADER + struct.pack("<IIII", 0, 0, 0x7FFFFFFF, 0x7FFFFFFF) + frame(1))
    elif kind == "block":
        with open(path, "wb") as f:
            f.write(struct.pack("<IIIHHqI", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1, 28))
            f.write(struct.pack("<II", 1, 0xFFFFFFF0) + bytes(64))
    else:
        sys.exit(f"roce_pcap.py: unknown kind '{kind}' (qps, bins, record, block)")


if __name__ == "__main__":
    main(sys.argv)
