"""FFmpeg's hash muxers (md5, framemd5, hash, framehash, crc, framecrc), byte for byte.

These are written here rather than through PyAV's libavformat because PyAV cannot set the
AVStream's sample aspect ratio that the ``#sar`` header line prints (the ffmpeg CLI copies
it from the encoder); everything else follows libavformat's hashenc.c and crcenc.c: the same
header lines, the same ``%10`` column widths, the same hash names. The packets hashed are
the encoder's (rawvideo by default), so the digests are ffmpeg's.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Sequence
from fractions import Fraction
from typing import BinaryIO

AV_PKT_FLAG_KEY = 0x1

#: muxer name -> (per frame?, hash algorithm)
HASH_MUXERS: dict[str, tuple[bool, str]] = {
    "md5": (False, "md5"),
    "framemd5": (True, "md5"),
    "hash": (False, "sha256"),
    "framehash": (True, "sha256"),
    "crc": (False, "adler32"),
    "framecrc": (True, "adler32"),
}


class HashMuxer:
    """Writes one video stream's packets as FFmpeg's hash muxers do."""

    def __init__(self, fmt: str, out: BinaryIO, *, software: str | None, algorithm: str | None = None) -> None:
        self.per_frame, default = HASH_MUXERS[fmt]
        self.fmt = fmt
        self.algorithm = algorithm or default
        self.out = out
        self.software = software
        self._whole = self._new()
        self._adler = 1

    def _new(self) -> hashlib._Hash | None:
        return None if self.algorithm == "adler32" else hashlib.new(self.algorithm)

    def write_header(self, *, time_base: Fraction, codec_name: str, width: int, height: int,
                     sar: Fraction | None, extradata: bytes | None = None) -> None:
        if not self.per_frame:
            return
        lines = []
        if self.fmt != "framecrc":
            lines += ["#format: frame checksums", "#version: 2", f"#hash: {self.algorithm.upper()}"]
        if extradata:  # before #software, as framehash_print_extradata / framecrc_write_header do
            if self.fmt == "framecrc":
                lines.append(f"#extradata 0: {len(extradata):8d}, {self._digest(extradata)}")
            else:
                lines.append(f"#extradata 0, {len(extradata):31d}, {self._digest(extradata)}")
        if self.software:
            lines.append(f"#software: {self.software}")
        sar = sar or Fraction(0, 1)
        lines += [f"#tb 0: {time_base.numerator}/{time_base.denominator}", "#media_type 0: video",
                  f"#codec_id 0: {codec_name}", f"#dimensions 0: {width}x{height}",
                  f"#sar 0: {sar.numerator}/{sar.denominator}"]
        if self.fmt != "framecrc":
            lines.append("#stream#, dts,        pts, duration,     size, hash")
        self.out.write(("\n".join(lines) + "\n").encode())

    def _digest(self, data: bytes) -> str:
        if self.algorithm == "adler32":  # framecrc starts each frame's adler32 at 0, crc at 1
            return f"0x{zlib.adler32(data, 0):08x}"
        h = self._new()
        assert h is not None
        h.update(data)
        return h.hexdigest()

    def write_packet(self, data: bytes, *, pts: int | None, dts: int | None, duration: int,
                     flags: int = AV_PKT_FLAG_KEY, side_data: Sequence[tuple[str, bytes]] = ()) -> None:
        """One packet; ``side_data`` is (av_packet_side_data_name, bytes) in the packet's order."""
        if not self.per_frame:
            if self._whole is not None:
                self._whole.update(data)
            else:
                self._adler = zlib.adler32(data, self._adler)
            return
        nopts = -(2**63)
        dts_v = nopts if dts is None else dts
        pts_v = nopts if pts is None else pts
        line = f"0, {dts_v:10d}, {pts_v:10d}, {duration:8d}, {len(data):8d}, {self._digest(data)}"
        if self.fmt == "framecrc":
            if flags != AV_PKT_FLAG_KEY:
                line += f", F=0x{flags:X}"
            if side_data:
                line += f", S={len(side_data)}"
                line += "".join(f", {name}, {len(sd):8d}, {self._digest(sd)}" for name, sd in side_data)
        elif side_data:  # hashenc.c format version 2
            line += f", S={len(side_data)}" + "".join(f", {len(sd):8d}, {self._digest(sd)}" for _, sd in side_data)
        self.out.write((line + "\n").encode())

    def write_trailer(self) -> None:
        if self.per_frame:
            return
        if self._whole is None:
            self.out.write(f"CRC=0x{self._adler:08x}\n".encode())
        else:
            self.out.write(f"{self.algorithm.upper()}={self._whole.hexdigest()}\n".encode())
        self.out.flush()
