"""Analyses over a priced matrix: the decision, where a claim pays, the paper check, measurements, calibration.

The pipeline (pipeline.py) runs load → build → price → judge → analyse once and
returns a frozen Evaluation; nothing downstream re-evaluates lazily.
"""
