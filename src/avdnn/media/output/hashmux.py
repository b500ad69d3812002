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
from dataclasses import dataclass
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


@dataclass(frozen=True)
class HashStream:
    """What the header says of one stream (AVStream time base and codec parameters)."""

    media_type: str
    codec_name: str
    time_base: Fraction
    width: int = 0
    height: int = 0
    sar: Fraction | None = None
    sample_rate: int = 0
    layout: str = ""
    extradata: bytes | None = None


class HashMuxer:
    """Writes the packets of every output stream as FFmpeg's hash muxers do."""

    def __init__(self, fmt: str, out: BinaryIO | None, *, software: str | None, algorithm: str | None = None) -> None:
        self.per_frame, default = HASH_MUXERS[fmt]
        self.fmt = fmt
        self.algorithm = algorithm or default
        self.out = out
        self.software = software
        self._whole = self._new()
        self._adler = 1

    def _new(self) -> hashlib._Hash | None:
        return None if self.algorithm == "adler32" else hashlib.new(self.algorithm)

    def write_header(self, streams: Sequence[HashStream]) -> None:
        """The header lines for every stream, in stream order (framehash.c / hashenc.c)."""
        if not self.per_frame:
            return
        lines = []
        if self.fmt != "framecrc":
            lines += ["#format: frame checksums", "#version: 2", f"#hash: {self.algorithm.upper()}"]
        for i, st in enumerate(streams):  # before #software, as framehash_print_extradata does
            if not st.extradata:
                continue
            if self.fmt == "framecrc":
                lines.append(f"#extradata {i}: {len(st.extradata):8d}, {self._digest(st.extradata)}")
            else:
                lines.append(f"#extradata {i}, {len(st.extradata):31d}, {self._digest(st.extradata)}")
        if self.software and streams:
            lines.append(f"#software: {self.software}")
        for i, st in enumerate(streams):
            lines += [
                f"#tb {i}: {st.time_base.numerator}/{st.time_base.denominator}",
                f"#media_type {i}: {st.media_type}",
                f"#codec_id {i}: {st.codec_name}",
            ]
            if st.media_type == "audio":
                lines += [f"#sample_rate {i}: {st.sample_rate}", f"#channel_layout_name {i}: {st.layout}"]
            elif st.media_type == "video":
                sar = st.sar or Fraction(0, 1)
                lines += [f"#dimensions {i}: {st.width}x{st.height}", f"#sar {i}: {sar.numerator}/{sar.denominator}"]
        if self.fmt != "framecrc":
            lines.append("#stream#, dts,        pts, duration,     size, hash")
        self._out().write(("\n".join(lines) + "\n").encode())

    def _digest(self, data: bytes) -> str:
        if self.algorithm == "adler32":  # framecrc starts each frame's adler32 at 0, crc at 1
            return f"0x{zlib.adler32(data, 0):08x}"
        h = self._new()
        assert h is not None
        h.update(data)
        return h.hexdigest()

    def write_packet(
        self,
        data: bytes,
        *,
        index: int = 0,
        pts: int | None,
        dts: int | None,
        duration: int,
        flags: int = AV_PKT_FLAG_KEY,
        side_data: Sequence[tuple[str, bytes]] = (),
    ) -> None:
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
        line = f"{index}, {dts_v:10d}, {pts_v:10d}, {duration:8d}, {len(data):8d}, {self._digest(data)}"
        if self.fmt == "framecrc":
            if flags != AV_PKT_FLAG_KEY:
                line += f", F=0x{flags:X}"
            if side_data:
                line += f", S={len(side_data)}"
                line += "".join(f", {name}, {len(sd):8d}, {self._digest(sd)}" for name, sd in side_data)
        elif side_data:  # hashenc.c format version 2
            line += f", S={len(side_data)}" + "".join(f", {len(sd):8d}, {self._digest(sd)}" for _, sd in side_data)
        self._out().write((line + "\n").encode())

    def write_trailer(self) -> None:
        if self.per_frame:
            return
        out = self._out()
        if self._whole is None:
            out.write(f"CRC=0x{self._adler:08x}\n".encode())
        else:
            out.write(f"{self.algorithm.upper()}={self._whole.hexdigest()}\n".encode())
        out.flush()

    def _out(self) -> BinaryIO:
        assert self.out is not None, "the hash muxer's target is opened before its header"
        return self.out
