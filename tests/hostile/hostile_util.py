"""Shared settings and inputs of the hostile-input suite (tests/hostile).

Every property runs a bounded number of examples with no deadline (a loaded machine must not
turn into a failure: no timed assertions) and no example database (no files left behind).
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

#: the suite's Hypothesis settings: a few hundred examples, never a deadline
HOSTILE = settings(
    max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
#: fewer examples for properties that run a subprocess or open a container per example
FEW = settings(HOSTILE, max_examples=40)

#: the characters that mean something to ffmpeg's filtergraph, option and URL syntaxes
SPECIALS = "=:,;[]'\\@ \t\n\r&?#%/+-."
