"""The tracking tests reuse the analytics tests' generated models and filter drivers."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analytics"))
