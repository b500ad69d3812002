"""The streams that go around the chain: copied packets, transcoded audio and subtitles."""
