"""Measurement inside a run: timers, telemetry, contention, environment, FLOPs."""
