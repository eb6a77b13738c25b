"""Inputs: units, schema validation, the catalog and Hugging Face configs, claim cards, workload files.

Everything a user writes is read, validated and typed here; nothing below the
model layer computes a cost.
"""
