"""Executing a run: stream selection and wiring, the scheduler and its threads, the live queue, accounting."""
