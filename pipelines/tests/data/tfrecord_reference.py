#!/usr/bin/env python3
"""An independent TFRecord writer for tests: prints, as hex, the TFRecord file holding the records
given as hex arguments. Its CRC-32C is computed bit by bit from the polynomial, sharing nothing with
pipeprof's implementation. With --crc it prints the CRC-32C of each argument (hex) instead."""
import struct
import sys


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(data: bytes) -> bytes:
    length = struct.pack("<Q", len(data))
    return (length + struct.pack("<I", masked(crc32c(length))) + data +
            struct.pack("<I", masked(crc32c(data))))


def main() -> None:
    args = sys.argv[1:]
    if args and args[0] == "--crc":
        print(" ".join(f"{crc32c(bytes.fromhex(a)):08x}" for a in args[1:]))
        return
    print(b"".join(frame(bytes.fromhex(a)) for a in args).hex())


if __name__ == "__main__":
    main()
