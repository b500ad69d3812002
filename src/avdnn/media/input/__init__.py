"""The input side: demuxing, decoding, live protocols and reopening, the filters ffmpeg puts after a decoder."""
