"""The output side: muxing, video encoding, frame-rate sync, interleaving, the hash muxers."""
