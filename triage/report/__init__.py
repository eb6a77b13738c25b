"""Outputs: the JSON document built from columns, the reasons in words, the memo, figures, sweeps, compare.

Prose and units live here; everything below hands up numbers.
"""
